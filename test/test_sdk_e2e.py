"""The unmodified menlo-sdk and `menlo` CLI against the running graph, over the SDK's fixed ports.

The whole test session runs in a private network namespace (tools/run_tests.sh), so ports 8850/8851/3000 belong to
this run alone; tests here share one graph and start from a virtual restart where they need the boot state.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import threading
import time

import numpy as np
import pytest
from harness import Graph, cmdline, http_json, http_json_when_ready, menlo_status, run_menlo, sim_restart, wait_for
from harness import sim_firmware as _firmware
from harness import sim_truth_or_none as _truth_or_none
from menlo.asimov import ConnectionConfig, Mode, Robot, RobotFaultedError, UdpConfig

from vasimov import joints, motor_space

pytestmark = pytest.mark.graph
API = "http://127.0.0.1:3000"
STAND_STATE = motor_space.joint_to_state(joints.DEFAULT_POS)


@pytest.fixture(scope="module")
def graph():
    g = Graph("--policy", "hold")
    try:
        g.wait_started()
        wait_for(lambda: "SDK bridge ready" in g.output() and "plant ready" in g.output(), 60, "graph start")
        wait_for(lambda: _truth_or_none() is not None, 30, "ground truth")
        yield g
    finally:
        g.stop()
        assert g.leftovers() == []




def _robot() -> Robot:
    robot = Robot(ConnectionConfig(udp=UdpConfig("127.0.0.1")))
    robot.connect(timeout=5.0)
    return robot


def test_version_endpoint_is_exactly_what_the_sdk_checks(graph):
    body = http_json(f"{API}/api/version")
    assert body == {"robot_model": "asimov_1", "robot_os_version": "0.2.0"}


def test_cli_adds_the_robot_stands_balances_and_damps(graph, home):
    sim_restart()
    r = run_menlo("robots", "add", "sim", "--mode", "udp", "--udp", "127.0.0.1", home=home)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "robot mode DAMP" in r.stdout
    r = run_menlo("status", "--json", home=home)
    assert r.returncode == 0, r.stderr
    status = json.loads(r.stdout)
    assert status["robot_mode"] == "DAMP" and status["verdict"] == "READY" and status["fresh"]
    assert status["state_rate_hz"] >= 150
    r = run_menlo("stand", "-y", home=home)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Armed" in r.stdout
    r = run_menlo("balance", "-y", home=home)
    assert r.returncode == 0, r.stdout + r.stderr
    status = json.loads(run_menlo("status", "--json", home=home).stdout)
    assert status["robot_mode"] == "MOVE" and status["armed"] is True and status["verdict"] == "READY"
    _damp_a_free_standing_robot(home)


def _damp_a_free_standing_robot(home: str) -> dict:
    """`menlo damp` of a robot standing on its own feet: it is DAMP at once, and it really collapses (the CLI itself
    warns "a standing robot falls"), so the firmware latches FALL_DETECTED, still reporting DAMP, with the fault in
    `menlo status`. Returns the final status."""
    assert not _firmware()["gantry_engaged"]  # free-standing: off the gantry hook
    r = run_menlo("damp", "-y", home=home)
    assert r.returncode == 0, r.stdout + r.stderr
    assert menlo_status(home)["robot_mode"] == "DAMP"  # before or after the fall: a latched fault reports DAMP too
    seen: list[dict] = []

    def fallen() -> dict | None:
        s = menlo_status(home)
        seen.append(s)
        return s if "FALL_DETECTED" in s["faults"] else None

    try:
        return wait_for(fallen, 15, "the collapse to latch FALL_DETECTED")
    except AssertionError as e:  # say what the robot was doing instead
        raise AssertionError(f"{e}; last status {seen[-1] if seen else None}; firmware {_firmware()}; "
                             f"truth {_truth_or_none()}") from None


def test_menlo_damp_of_a_standing_robot_reports_damp_with_fall_detected(graph, home):
    """Done criterion of the fault-reporting fix: after `menlo damp` of a standing robot, `menlo status --json`
    reports robot mode DAMP with FALL_DETECTED among the faults (as the SDK's own CLI tests print
    "DAMP · faults FALL_DETECTED"), and the robot will not stand until a restart."""
    sim_restart()
    r = run_menlo("robots", "add", "sim", "--mode", "udp", "--udp", "127.0.0.1", home=home)
    assert r.returncode == 0, r.stdout + r.stderr
    for verb in ("stand", "balance"):  # standing on its own feet: the walking policy took it off the gantry hook
        r = run_menlo(verb, "-y", home=home)
        assert r.returncode == 0, r.stdout + r.stderr
    status = _damp_a_free_standing_robot(home)
    assert status["robot_mode"] == "DAMP" and status["verdict"] == "FAULTED"
    assert status["error_flags"] & 0x101 == 0x101 and "FALL_DETECTED" in status["alerts"]
    text = run_menlo("status", home=home).stdout
    assert "robot mode DAMP" in text and "faults FALL_DETECTED" in text, text
    fw = _firmware()
    assert fw["mode"] == "DAMP" and fw["error_flags"] & 1
    r = run_menlo("stand", "-y", home=home)
    assert r.returncode == 3, r.stdout + r.stderr  # refused into a fault


def test_sdk_set_joints_reaches_a_pose_and_back_including_ankles(graph):
    sim_restart()
    robot = _robot()
    try:
        assert robot.info.dof == 25
        assert robot.info.joint_names[4] == "L_Ankle_A"
        robot.stand(timeout=10)
        assert robot.armed
        wait_for(lambda: robot.get_state().mode == Mode.STAND, 5, "STAND")
        target_joint = np.array(joints.DEFAULT_POS, dtype=float)
        target_joint[joints.joint_index("left_elbow_joint")] += 0.3
        target_joint[joints.joint_index("right_shoulder_pitch_joint")] -= 0.2
        target_joint[joints.joint_index("left_ankle_pitch_joint")] += 0.1  # moves both ankle motors A and B
        target_joint[joints.joint_index("right_ankle_roll_joint")] += 0.05
        target = motor_space.joint_to_state(target_joint)
        robot.set_joints(tuple(float(v) for v in target), duration=1.0, tolerance=0.05)
        reported = np.array([j.pos for j in robot.get_state().joints])
        assert np.max(np.abs(reported - target)) <= 0.05
        robot.set_joints(tuple(float(v) for v in STAND_STATE), duration=1.0, tolerance=0.05)
        reported = np.array([j.pos for j in robot.get_state().joints])
        assert np.max(np.abs(reported - STAND_STATE)) <= 0.05
        assert robot.get_state().mode == Mode.MOVE
        currents = [j.current for j in robot.get_state().joints]  # approximate: torque / assumed k_t
        assert all(c is not None and math.isfinite(c) for c in currents) and max(abs(c) for c in currents) > 0.1
        # stop streaming: the trajectory session times out into DAMP about 2 s after the last setpoint
        robot.stand(wait=False)
        robot.damp(timeout=5)
    finally:
        robot.close()


def test_trajectory_stream_stop_damps_after_two_seconds(graph):
    sim_restart()
    robot = _robot()
    try:
        robot.stand(timeout=10)
        robot.trajectory(tuple(float(v) for v in STAND_STATE))
        wait_for(lambda: robot.get_state().mode == Mode.MOVE, 5, "MOVE/TRAJECTORY")
        sent_at = time.monotonic()
        wait_for(lambda: robot.get_state().mode == Mode.DAMP, 6, "trajectory timeout -> DAMP")
        elapsed = time.monotonic() - sent_at
        assert 1.7 <= elapsed <= 3.0, elapsed
    finally:
        robot.close()


def test_velocity_in_damp_is_dropped_and_counted(graph):
    sim_restart()
    before = http_json(f"{API}/api/sim/counters")["firmware"].get("velocity_in_damp", 0)
    robot = _robot()
    try:
        assert robot.get_state().mode == Mode.DAMP
        robot.set_velocity(0.2, 0.0, 0.0, hold=False)
        wait_for(lambda: http_json(f"{API}/api/sim/counters")["firmware"].get("velocity_in_damp", 0) > before, 5,
                 "the drop to be counted")
        assert robot.get_state().mode == Mode.DAMP
        pre = robot.preflight("stand")
        assert pre.ok
        assert robot.preflight("move").ok  # move preflight only blocks on link problems
    finally:
        robot.close()


def test_fall_latches_a_fault_refuses_stand_and_restart_recovers(graph, home):
    sim_restart()
    robot = _robot()
    try:
        robot.stand(timeout=10)
        robot.balance()  # the walking policy takes over: the gantry hook comes off
        wait_for(lambda: not _firmware()["gantry_engaged"], 10, "gantry release")
        http_json_when_ready(f"{API}/api/sim/push",
                             {"body": "pelvis_link", "force": [0.0, 400.0, 0.0], "duration": 0.4})
        wait_for(lambda: robot.get_state().error_flags != 0, 10, "the fall latch")
        state = robot.get_state()
        assert state.error_flags & 1 and state.error_flags & (1 << 8)
        assert state.mode == Mode.DAMP  # a latched fault reports DAMP with error_flags (report_fault_damp: 5)
        assert any(a.id == 7 for a in state.alerts)
        with pytest.raises(RobotFaultedError):
            robot.stand(timeout=3)
    finally:
        robot.close()
    r = run_menlo("robots", "add", "sim", "--mode", "udp", "--udp", "127.0.0.1", home=home)
    assert r.returncode == 0
    r = run_menlo("stand", "-y", home=home)
    assert r.returncode == 3, r.stdout + r.stderr
    status = json.loads(run_menlo("status", "--json", home=home).stdout)
    assert status["verdict"] == "FAULTED"
    sim_restart()
    r = run_menlo("stand", "-y", home=home)
    assert r.returncode == 0, r.stdout + r.stderr


class _StateCounter:
    """Counts RobotState datagrams arriving on the SDK's state port (stands in for the SDK's own socket)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 8851))
        self.sock.settimeout(0.2)
        self.times: list[float] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                self.sock.recv(65535)
            except TimeoutError:
                continue
            self.times.append(time.monotonic())

    def rate(self, since: float, until: float) -> float:
        n = sum(1 for t in self.times if since <= t < until)
        return n / (until - since)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


def _garbage_datagrams() -> list[bytes]:
    from asimov_protocol.v1 import asimov_command_pb2 as pb

    def cmd(**kw) -> bytes:
        c = pb.RobotCommand(protocol_version=1, sequence=7, **kw)
        return c.SerializeToString()

    nan_vel = pb.RobotCommand(protocol_version=1, mode=2)
    nan_vel.policy.vx = math.nan
    inf_traj = pb.RobotCommand(protocol_version=1, mode=2, command_control=1)
    inf_traj.all_trajectory.positions.extend([math.inf] * 25)
    short_traj = pb.RobotCommand(protocol_version=1, mode=2, command_control=1)
    short_traj.all_trajectory.positions.extend([0.0] * 24)
    v2 = pb.RobotCommand(protocol_version=2, mode=1)
    stand = cmd(mode=1)
    return [
        b"", b"\x00", b"\xff" * 64, os.urandom(512), stand[: len(stand) // 2] + b"\xff", b"\x0a" * 5000,
        nan_vel.SerializeToString(), inf_traj.SerializeToString(), short_traj.SerializeToString(),
        v2.SerializeToString(), cmd(mode=7), cmd(mode=2),
    ]


def test_bad_datagrams_and_http_requests_change_nothing_and_are_counted(graph):
    sim_restart()
    counter = _StateCounter()
    try:
        wait_for(lambda: len(counter.times) > 100, 5, "state stream")
        before = http_json(f"{API}/api/sim/counters")
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        start = time.monotonic()
        for _ in range(20):
            for d in _garbage_datagrams():
                tx.sendto(d, ("127.0.0.1", 8850))
        # malformed HTTP: raw garbage, bad JSON, unknown path, wrong method
        for raw in (b"\x16\x03\x01garbage\r\n\r\n", b"POST /api/sim/push HTTP/1.1\r\nContent-Length: 5\r\n\r\n{bad}",
                    b"GET /nope HTTP/1.1\r\n\r\n", b"DELETE /api/version HTTP/1.1\r\n\r\n"):
            with socket.create_connection(("127.0.0.1", 3000), timeout=5) as s:
                s.sendall(raw)
                s.settimeout(5)
                with contextlib.suppress(TimeoutError):
                    s.recv(4096)
        def accounted(c: dict) -> int:  # refused after decoding, dropped unread (sender over budget) or by the kernel
            return (sum(c["udp_rejections"].values()) + c["udp"].get("rx_shed_source_budget", 0)
                    + c["udp"].get("rx_kernel_drops", 0))

        sent = 20 * len(_garbage_datagrams())
        wait_for(lambda: accounted(http_json(f"{API}/api/sim/counters")) >= accounted(before) + sent, 10,
                 "every bad datagram counted")
        end = max(time.monotonic(), start + 1.0)
        wait_for(lambda: counter.times and counter.times[-1] >= end, 5, "state samples after the bad input")
        fw = _firmware()
        assert fw["mode"] == "DAMP" and fw["error_flags"] == 0
        assert counter.rate(start, end) >= 150
        after = http_json(f"{API}/api/sim/counters")
        assert set(after["udp_rejections"]) >= {"PARSE", "NON_FINITE", "BAD_LENGTH"}
        assert http_json(f"{API}/api/version")["robot_model"] == "asimov_1"
    finally:
        counter.close()


def test_a_flood_of_valid_commands_does_not_starve_the_state_stream(graph):
    """10,000 valid commands per second for 10 s; the state stream keeps >= 150 Hz and memory stays bounded."""
    import psutil
    from asimov_protocol.v1 import asimov_command_pb2 as pb

    sim_restart()
    bridge_pid = next(p for p in graph.node_pids if "sdk_bridge" in cmdline(p))
    rss_before = psutil.Process(bridge_pid).memory_info().rss
    counter = _StateCounter()
    try:
        wait_for(lambda: len(counter.times) > 100, 5, "state stream")
        stand = pb.RobotCommand(protocol_version=1, mode=1).SerializeToString()
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        start = time.monotonic()
        sent = 0
        while (now := time.monotonic()) - start < 10.0:
            due = int((now - start) * 10_000)
            while sent < due:
                tx.sendto(stand, ("127.0.0.1", 8850))
                sent += 1
        end = time.monotonic()
        rate = counter.rate(start, end)
        rss_after = psutil.Process(bridge_pid).memory_info().rss
        print(f"flood: sent {sent} commands in {end - start:.1f} s; state rate {rate:.1f} Hz; "
              f"bridge RSS {rss_before / 1e6:.1f} -> {rss_after / 1e6:.1f} MB")
        assert sent >= 90_000
        assert rate >= 150
        assert rss_after - rss_before < 50e6
    finally:
        counter.close()
