"""The SDK always hears the truth (issue 10): a physics divergence and a stalled firmware process become what the
robot reports (DAMP with a critical alert and error flags, the stream going on), never silence and never fresh
"MOVE" frames built from stale parts. The real menlo-sdk and raw state sockets against the running graph."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time

import pytest
from harness import Graph, cmdline, http_json, sim_post, sim_restart, sim_truth_or_none, wait_for
from menlo.asimov import ConnectionConfig, Mode, Robot, UdpConfig
from rosprobe import RosProbe
from vasimov_msgs.msg import FirmwareState

from vasimov.alerts import ALERT_FIRMWARE_STALL, ALERT_IMU_FAULT
from vasimov.ros import qos, topics
from vasimov_bridge.sdk_wire import StateFrame, decode_state

pytestmark = pytest.mark.graph
API = "http://127.0.0.1:3000"


@pytest.fixture(scope="module")
def graph():
    g = Graph("--policy", "hold", "foxglove:=false", "binary_stream:=false")
    try:
        g.wait_started()
        wait_for(lambda: "SDK bridge ready" in g.output() and "plant ready" in g.output(), 60, "graph start")
        wait_for(lambda: sim_truth_or_none() is not None, 30, "ground truth")
        yield g
    finally:
        g.stop()
        assert g.leftovers() == []








class _Frames:
    """Every RobotState on the SDK's state port, decoded, with its wall arrival time."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 8851))
        self.sock.settimeout(0.1)
        self.frames: list[tuple[float, StateFrame]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                data = self.sock.recv(65535)
            except TimeoutError:
                continue
            frame = decode_state(data)
            if isinstance(frame, StateFrame):
                self.frames.append((time.monotonic(), frame))

    def since(self, t: float) -> list[StateFrame]:
        return [f for at, f in self.frames if at >= t]

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


def test_a_physics_divergence_is_reported_as_damp_with_a_critical_alert_and_the_stream_goes_on(graph):
    sim_restart()
    frames = _Frames()
    try:
        wait_for(lambda: len(frames.frames) > 50, 10, "state stream")
        status, reply = sim_post("/api/sim/push", {"body": "pelvis_link", "force": [0, 0, 2000], "duration": 5})
        assert status == 400 and "impulse" in reply["error"]  # 2000 N for 5 s threw the robot to z = 383 m
        status, reply = sim_post("/api/sim/push", {"body": "no_such_link", "force": [10, 0, 0], "duration": 0.1})
        assert status == 404 and "no_such_link" in reply["error"]
        status, _ = sim_post("/api/sim/inject", {"fault": "non_finite"})
        assert status == 202
        flag = 1 << (1 + ALERT_IMU_FAULT)

        def faulted_frame() -> StateFrame | None:
            return next((f for _, f in reversed(frames.frames) if f.error_flags & flag), None)

        frame = wait_for(faulted_frame, 10, "a frame reporting the sensor fault")
        assert frame.current_mode == 0 and frame.error_flags & 1
        assert any(a.id == ALERT_IMU_FAULT and a.severity == 0 for a in frame.active_alerts)
        t = time.monotonic()
        wait_for(lambda: len(frames.since(t)) >= 20, 10, "the stream going on after the fault")
        assert all(f.error_flags & flag and f.current_mode == 0 for f in frames.since(t))
        fw = http_json(f"{API}/api/sim/firmware")
        assert fw["mode"] == "DAMP" and fw["plant_fault"]["kind"] in ("non_finite", "mujoco_warning")
        assert any(a["id"] == ALERT_IMU_FAULT for a in fw["alerts"])
        assert http_json(f"{API}/api/sim/counters")["plant_fault"] is not None
        frames.close()  # the SDK binds the same state port
        robot = Robot(ConnectionConfig(udp=UdpConfig("127.0.0.1")))
        robot.connect(timeout=5.0)
        try:
            state = robot.get_state()
            assert state.mode == Mode.DAMP and state.error_flags & flag
        finally:
            robot.close()
        frames = _Frames()
        for path, body in (("/api/sim/push", {"body": "pelvis_link", "force": [10, 0, 0], "duration": 0.1}),
                           ("/api/sim/inject", {"fault": "non_finite"})):
            status, reply = sim_post(path, body)
            assert status == 409 and "faulted" in reply["error"], (path, status, reply)
        sim_restart()
        wait_for(lambda: frames.frames[-1][1].error_flags == 0, 10, "clean frames after the restart")
        assert http_json(f"{API}/api/sim/firmware")["plant_fault"] is None
        status, _ = sim_post("/api/sim/push", {"body": "pelvis_link", "force": [10, 0, 0], "duration": 0.1})
        assert status == 202
    finally:
        frames.close()


def test_a_stalled_edge_is_never_reported_as_a_fresh_move(graph):
    """SIGSTOP the firmware process of a balancing robot for 3 s: from 0.3 s on, the SDK sees no state or frames
    reporting the stall (DAMP, FIRMWARE_STALL), never a fresh MOVE; after SIGCONT the edge decides the present,
    not seconds of backlog."""
    sim_restart()
    edge = next(p for p in graph.node_pids if "edge_node" in cmdline(p) or "__node:=edge" in cmdline(p))
    probe = RosProbe(graph.domain, name="stall_probe")
    frames = None
    robot = Robot(ConnectionConfig(udp=UdpConfig("127.0.0.1")))
    robot.connect(timeout=5.0)
    try:
        probe.subscribe(topics.FIRMWARE_STATE, FirmwareState, qos.LOOP)
        robot.stand(timeout=15)
        try:
            robot.balance()
        except Exception:
            print("balance failed:", http_json(f"{API}/api/sim/firmware"), http_json(f"{API}/api/sim/counters"))
            raise
        wait_for(lambda: http_json(f"{API}/api/sim/firmware")["mode"] == "MOVE", 10, "MOVE")
        robot.close()  # no keepalive from here: only the stall changes the picture
        frames = _Frames()  # the SDK's state port, now free
        wait_for(lambda: len(frames.frames) > 50, 10, "state stream")
        wait_for(lambda: probe.count(topics.FIRMWARE_STATE) > 10, 10, "firmware states on the probe")
        stopped_at = time.monotonic()
        os.kill(edge, signal.SIGSTOP)
        try:
            time.sleep(3.0)
            tick_at_resume = http_json(f"{API}/api/sim/truth")["step"] // 4
            received_before_resume = probe.count(topics.FIRMWARE_STATE)
        finally:
            os.kill(edge, signal.SIGCONT)
        resumed_at = time.monotonic()
        wait_for(lambda: probe.count(topics.FIRMWARE_STATE) > received_before_resume + 20, 15, "the edge again")
        during = [f for at, f in frames.frames if stopped_at + 0.3 <= at < resumed_at]
        fresh_move = [f for f in during if f.current_mode == 2 and f.error_flags == 0]
        assert not fresh_move, f"{len(fresh_move)} fresh MOVE frames while the edge was stopped"
        stall_flag = 1 << (1 + ALERT_FIRMWARE_STALL)
        assert during and any(f.error_flags & stall_flag for f in during), "the stall was never reported"
        assert all(f.current_mode == 0 for f in during if f.error_flags & stall_flag)
        received = probe.all(topics.FIRMWARE_STATE)
        published_before_stop = max(m.tick for m in received[:received_before_resume])
        # only ticks the edge decided after SIGCONT count: DDS's reliable repair may still hand the probe a few
        # samples published before the stop (seen in CI: ticks 68, 69, 150, 151), which is not a replay
        after = [m.tick for m in received[received_before_resume:] if m.tick > published_before_stop]
        replayed = [t for t in after if t < tick_at_resume - 5]
        assert len(replayed) <= 3, f"the edge replayed {len(replayed)} old ticks after SIGCONT"
    finally:
        if frames is not None:
            frames.close()
        robot.close()
        probe.close()

