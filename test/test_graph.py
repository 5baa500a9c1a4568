"""The node graph as a user runs it: `vasimov up` (real time and lockstep), supervision, determinism, latency."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess

import numpy as np
import pytest
from harness import Graph, cmdline, http_json_when_ready, pid_alive, wait_for
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from rosprobe import RosProbe
from sensor_msgs.msg import JointState
from vasimov_msgs.msg import FirmwareState, MotorCommand, PlantFault, PlantState

from vasimov import joints
from vasimov.ros import qos, topics

pytestmark = pytest.mark.graph

SCRIPT = """
- {t: 0.1, cmd: stand}
- {t: 3.6, cmd: velocity, vx: 0.0}
- {t: 4.5, cmd: trajectory, positions: %s}
"""


def _script(tmp_path) -> str:
    pose = [float(v) for v in joints.DEFAULT_POS]
    pose[joints.joint_index("left_elbow_joint")] += 0.3
    path = tmp_path / "script.yaml"
    path.write_text(SCRIPT % pose)
    return str(path)


def test_realtime_graph_publishes_clock_and_joint_states_and_stops_cleanly(graph_factory):
    g: Graph = graph_factory("--policy", "hold")
    probe = RosProbe(g.domain)
    try:
        probe.subscribe(topics.CLOCK, Clock, qos.CLOCK)
        probe.subscribe(topics.JOINT_STATES, JointState)
        wait_for(lambda: probe.count(topics.JOINT_STATES) >= 50, 30, "/joint_states messages")
        wait_for(lambda: probe.count(topics.CLOCK) >= 10, 10, "/clock messages")
        js = probe.last(topics.JOINT_STATES)
        assert list(js.name) == list(joints.SIM_NAMES)
        assert len(js.position) == joints.NUM_JOINTS
        clocks = [c.clock.sec + c.clock.nanosec * 1e-9 for c in probe.all(topics.CLOCK)]
        assert all(b > a for a, b in itertools.pairwise(clocks)), "sim time must increase"
    finally:
        probe.close()
    g.wait_started()
    pids = list(g.node_pids)
    assert g.stop(signal.SIGINT) == 0
    assert [p for p in pids if pid_alive(p)] == []


def test_sigterm_stops_every_node(graph_factory):
    g = graph_factory("--policy", "hold", "--viewer", env={"DISPLAY": "", "WAYLAND_DISPLAY": ""})
    g.wait_started()
    wait_for(lambda: "plant ready" in g.output(), 30, "plant start")
    pids = list(g.node_pids)
    assert len(pids) >= 4
    wait_for(lambda: "no display" in g.output(), 10, "the viewer's no-display message")
    assert g.stop(signal.SIGTERM) == 0
    assert [p for p in pids if pid_alive(p)] == [], g.output()[-2000:]


def test_a_dead_node_stops_the_graph_with_a_clear_message(graph_factory):
    g = graph_factory("--policy", "hold")
    g.wait_started()
    wait_for(lambda: "edge ready" in g.output(), 30, "edge start")
    edge_pid = next(p for p in g.node_pids
                    if "edge_node" in cmdline(p))
    os.kill(edge_pid, signal.SIGKILL)
    rc = g.proc.wait(timeout=30)
    assert rc != 0
    assert "node 'edge' exited unexpectedly" in g.output()
    assert g.leftovers() == []


def _lockstep_run(tmp_path, script: str, seed: int = 1, duration: float = 6.0, up_args: tuple[str, ...] = ()):
    """Run a lockstep graph (``up_args``: more `vasimov up` options, e.g. --compose) with the probe as a declared
    third participant; return the control-tick states."""
    g = Graph("--lockstep", "--duration", str(duration), "--policy", "hold", "--seed", str(seed), "--script", script,
              "lockstep_participants:=edge,policy,test_probe", *up_args)
    probe = RosProbe(g.domain)
    try:
        deep = QoSProfile(depth=100_000, reliability=ReliabilityPolicy.RELIABLE)  # a slow probe must not drop
        subs = [probe.subscribe(topics.FIRMWARE_STATE, FirmwareState, deep),
                probe.subscribe(topics.PLANT_STATE, PlantState, deep),
                probe.subscribe(topics.MOTOR_COMMAND, MotorCommand, deep)]
        # join the tick topic and announce ready (which lets the plant start) once the other readers are matched
        wait_for(lambda: all(s.get_publisher_count() > 0 for s in subs), 60, "the probe's readers to match")
        probe.subscribe(topics.PLANT_TICK, PlantState, deep)
        probe.announce_lockstep_ready()
        rc = g.proc.wait(timeout=180)
        assert rc == 0, g.output()[-3000:]
        expected_ticks = round(duration / 0.02) + 1
        wait_for(lambda: probe.count(topics.PLANT_TICK) >= expected_ticks, 60, "all ticks delivered")
        return (probe.all(topics.PLANT_TICK), probe.all(topics.FIRMWARE_STATE), probe.all(topics.PLANT_STATE),
                probe.all(topics.MOTOR_COMMAND))
    finally:
        probe.close()
        g.stop()


def test_lockstep_is_bit_identical_across_runs_and_exits_zero(tmp_path):
    script = _script(tmp_path)
    a, fw_a, _, _ = _lockstep_run(tmp_path, script)
    b, fw_b, _, _ = _lockstep_run(tmp_path, script)
    qa = np.array([m.position for m in a])
    qb = np.array([m.position for m in b])
    assert qa.shape == qb.shape
    assert np.array_equal(qa, qb), f"max difference {np.abs(qa - qb).max()}"
    assert np.array_equal(np.array([m.velocity for m in a]), np.array([m.velocity for m in b]))
    # firmware states compared tick by tick: the first few may go out before the edge's writer has matched the
    # probe's reader (DDS matches each side on its own; the probe can only see its reader's side), so either run
    # may lack some of the first ticks' states (seen in CI: 3 of them; 17 under a loaded full suite, where a lockstep
    # tick takes a few ms and the writer's match a few tens). Only a prefix may be missing: from the first tick both
    # runs have to the last, every tick is there in both
    modes_a, modes_b = ({m.tick: m.mode_name for m in fw} for fw in (fw_a, fw_b))
    common = sorted(modes_a.keys() & modes_b.keys())
    assert common and common == list(range(common[0], 301)) and common[0] <= 50, (len(common), common[:3], common[-1:])
    assert [modes_a[k] for k in common] == [modes_b[k] for k in common]
    assert_run_is_the_reference_loop(script, a, fw_a)


def assert_run_is_the_reference_loop(script: str, ticks: list, fws: list) -> None:
    """A 6 s lockstep run of ``_script``: every tick there, the script drove the robot, and the positions are
    exactly what the single-process reference loop computes (test_compose_graph checks the composed graph so)."""
    qa = np.array([m.position for m in ticks])
    assert qa.shape == (301, joints.NUM_JOINTS)
    assert [m.tick for m in ticks] == list(range(301))
    modes = [m.mode_name for m in fws]
    # the script really drove the robot: it stood up, entered MOVE, then took a trajectory
    assert "STAND" in modes and "MOVE" in modes
    assert qa[-1, joints.joint_index("left_elbow_joint")] == pytest.approx(joints.DEFAULT_POS[
        joints.joint_index("left_elbow_joint")] + 0.3, abs=0.05)
    # and the graph computes exactly what the single-process reference loop computes
    ref = _reference_positions(script, ticks=301)
    assert np.array_equal(qa, ref), f"graph vs reference: max difference {np.abs(qa - ref).max()}"


def _reference_positions(script: str, ticks: int) -> np.ndarray:
    from vasimov_edge import command_script
    from vasimov_edge.policy.registry import make_backend
    from vasimov_tools.closed_loop import ClosedLoop

    loop = ClosedLoop.create(make_backend("hold"))
    player = command_script.ScriptPlayer(command_script.load(script))
    out = []
    for _ in range(ticks):
        for cmd in player.due(loop.firmware_time):
            loop.submit(cmd)
        out.append(np.array(loop.plant.sensors().q))
        loop.step_tick()
    return np.array(out)


def test_lockstep_command_latency_is_one_defined_tick(tmp_path):
    """A command due at firmware time t is decided at control tick k = ceil(t / 0.02); the motor command answering
    tick k drives physics steps 4k+1 .. 4k+4 (the torque reported with step 4k+1 is computed from it and the
    state published at step 4k). `stand` at t = 2.0 s is tick 100, so physics feels it from step 401. (Checked 2 s
    in, not at the first ticks: those may go out before the edge's and the plant's writers have matched the probe's
    readers -- DDS matches each side on its own and the probe sees only its own side; one run in ~35 saw the edge's
    first 53 ticks go out before its writer had matched the probe, at 5-6x real time.)"""
    script = tmp_path / "s.yaml"
    script.write_text("- {t: 2.0, cmd: stand}\n")
    _, fws, states, cmds = _lockstep_run(tmp_path, str(script), duration=2.3)
    around = [(m.tick, m.mode_name) for m in fws if 95 <= m.tick <= 105]
    assert [t for t, _ in around] == list(range(95, 106)), f"the probe missed firmware states: {around}"
    assert next(m.tick for m in fws if m.mode_name == "STAND") == 100, f"firmware states, ticks 95-105: {around}"
    by_step = {m.step: m for m in states}
    by_tick = {m.tick: m for m in cmds}
    assert np.all(np.asarray(by_tick[99].kp) == 0.0) and np.all(np.asarray(by_tick[100].kp) > 0.0)
    for tick in (98, 99, 100, 101):
        cmd = by_tick[tick]
        for step in range(4 * tick + 1, 4 * tick + 5):
            prev = by_step[step - 1]
            expected = (np.asarray(cmd.kp) * (np.asarray(cmd.position) - np.asarray(prev.position))
                        + np.asarray(cmd.kd) * (np.asarray(cmd.velocity) - np.asarray(prev.velocity))
                        + np.asarray(cmd.torque_ff))
            expected = np.clip(expected, -joints.EFFORT_LIMIT, joints.EFFORT_LIMIT)
            np.testing.assert_allclose(by_step[step].effort, expected, atol=1e-9, err_msg=f"step {step}")


def test_physics_divergence_becomes_a_published_fault(graph_factory):
    g = graph_factory("--policy", "hold")
    probe = RosProbe(g.domain)
    try:
        probe.subscribe(topics.PLANT_FAULT, PlantFault, qos.LATCHED)
        wait_for(lambda: "SDK bridge ready" in g.output() and "plant ready" in g.output(), 60, "graph start")
        wait_for(lambda: probe.node.count_publishers(topics.PLANT_FAULT) >= 1, 10, "fault publisher")
        http_json_when_ready("http://127.0.0.1:3000/api/sim/inject", {"fault": "non_finite"})
        wait_for(lambda: probe.count(topics.PLANT_FAULT) >= 1, 10, "a PlantFault")
        fault = probe.last(topics.PLANT_FAULT)
        assert fault.kind in ("non_finite", "mujoco_warning")  # MuJoCo may notice the NaN first
        wait_for(lambda: "physics fault" in g.output(), 10, "the fault in the plant's log")
        # the graph is still up and a virtual restart recovers the plant
        http_json_when_ready("http://127.0.0.1:3000/api/sim/restart", {})
        # 503 "no ground truth yet" is a correct answer while the bridge's best-effort truth subscription matches
        # (seen in CI under load): poll through it
        wait_for(lambda: http_json_when_ready("http://127.0.0.1:3000/api/sim/truth")["epoch"] == 1, 20, "restart")
    finally:
        probe.close()


def test_make_run_uses_vasimov_up_with_defaults():
    out = subprocess.run(["make", "-n", "run"], capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(os.path.dirname(__file__))).stdout
    assert "vasimov up" in out


def test_plant_watchdog_damps_when_the_edge_dies(tmp_path):
    """Nodes started one by one (no supervisor, which would stop the graph): kill -9 the edge, and the plant
    replaces its last motor command with damping once the command is older than command_timeout."""
    from harness import graph_env, next_domain_id

    from vasimov_tools import launch_file
    from vasimov_tools.supervisor import clean_shared_memory, resolve_executable

    domain = next_domain_id()
    env = graph_env(domain)
    script = tmp_path / "s.yaml"
    script.write_text("- {t: 0.1, cmd: stand}\n")
    desc = launch_file.load(launch_file.share_directory("vasimov") / "launch" / "bringup.launch.yaml",
                            {"policy": "hold", "command_script": str(script)})
    procs = {}
    probe = RosProbe(domain)
    try:
        probe.subscribe(topics.PLANT_STATE, PlantState, qos.STATE_STREAM, keep=2000)
        probe.subscribe(topics.FIRMWARE_STATE, FirmwareState, qos.LOOP, keep=100)
        for spec in desc.nodes:
            if spec.name in ("plant", "edge", "policy"):
                procs[spec.name] = subprocess.Popen([resolve_executable(spec.executable), *spec.ros_args()], env=env,
                                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: (fw := probe.last(topics.FIRMWARE_STATE)) is not None and fw.mode_name == "STAND", 30,
                 "the edge commanding STAND")
        wait_for(lambda: (st := probe.last(topics.PLANT_STATE)) is not None
                 and (st.gantry_engaged is False or np.abs(st.effort).max() > 1.0), 10, "stand torques")
        os.kill(procs["edge"].pid, signal.SIGKILL)
        procs["edge"].wait(timeout=10)
        killed_at = probe.last(topics.PLANT_STATE).stamp

        def damped() -> bool:
            states = probe.all(topics.PLANT_STATE)[-20:]
            if len(states) < 20 or states[0].stamp.sec * 1e9 + states[0].stamp.nanosec <= (
                    killed_at.sec * 1e9 + killed_at.nanosec + 0.2e9):
                return False
            for prev, cur in itertools.pairwise(states):
                expected = np.clip(-2.0 * np.asarray(prev.velocity), -joints.EFFORT_LIMIT, joints.EFFORT_LIMIT)
                if not np.allclose(cur.effort, expected, atol=1e-9):
                    return False
            return True

        wait_for(damped, 10, "pure damping (kp 0, kd = watchdog_kd) on every joint")
        assert procs["plant"].poll() is None, "the plant must keep running without its edge"
    finally:
        probe.close()
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in procs.values():
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        clean_shared_memory()  # no supervisor here: the SIGKILLed edge's segments are the test's to remove
