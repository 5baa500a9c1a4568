"""Real time under load and against malformed internal messages: the plant slows simulated time rather than step a
control tick without its answer, and a bad MotorCommand or SimControl is rejected without stopping physics."""

from __future__ import annotations

import json
import math
import re
import tempfile

import numpy as np
import pytest
import rclpy
from harness import CpuBurner, Graph, http_json, http_json_when_ready, next_domain_id, run_menlo, wait_for
from rosprobe import RosProbe
from vasimov_msgs.msg import MotorCommand, PlantFault, PlantState, SimControl

from vasimov import joints
from vasimov.ros import qos, topics

API = "http://127.0.0.1:3000"


def _stats(output: str) -> dict:
    m = re.search(r"realtime stats: (\{.*\})", output)
    assert m is not None, output[-3000:]
    return json.loads(m.group(1))


def _sim_time() -> float:
    return float(http_json(f"{API}/api/sim/truth")["sim_time"])


@pytest.mark.graph
def test_standing_and_balancing_with_a_core_burning_never_damps_a_live_command():
    """Another process keeps one of the two cores busy while `menlo` stands the robot up and balances it: the plant
    may slow simulated time, but no control tick goes without its answer, the watchdog never damps, the robot stays
    up -- through the README's flow typed as fast as a shell runs it: stand, balance, walk, then 10 s balancing."""
    g = Graph()  # default policy: builtin
    try:
        wait_for(lambda: "SDK bridge ready" in g.output() and "plant ready" in g.output(), 60, "graph start")
        with tempfile.TemporaryDirectory(prefix="menlo-home-") as home, CpuBurner(1, 240):
            assert run_menlo("robots", "add", "sim", "--mode", "udp", "--udp", "127.0.0.1", home=home).returncode == 0
            r = run_menlo("stand", "-y", home=home, timeout=120)
            assert r.returncode == 0, r.stdout + r.stderr
            r = run_menlo("balance", "-y", home=home, timeout=120)
            assert r.returncode == 0, r.stdout + r.stderr
            r = run_menlo("walk", "-y", "--vx", "0.3", "--duration", "3", home=home, timeout=120)
            assert r.returncode == 0 and "Walk done" in r.stdout, r.stdout + r.stderr
            start = _sim_time()
            lowest = math.inf

            def balanced_10s() -> bool:
                nonlocal lowest
                truth = http_json(f"{API}/api/sim/truth")
                lowest = min(lowest, truth["base_pos"][2])
                return truth["sim_time"] - start >= 10.0

            wait_for(balanced_10s, 120, "10 s of simulated balancing", poll=0.25)
            status = json.loads(run_menlo("status", "--json", home=home, timeout=120).stdout)
        assert lowest > 0.45, f"the robot fell (pelvis down to {lowest:.3f} m)"
        assert status["robot_mode"] == "MOVE" and status["verdict"] == "READY", status
    finally:
        g.stop()
        assert g.leftovers() == []
    out = g.output()
    stats = _stats(out)
    print(f"real time with one core burning: real-time factor {stats['rtf']:.3f}, lateness p50 {stats['p50_ms']:.2f}"
          f" ms p99 {stats['p99_ms']:.2f} ms max {stats['max_ms']:.2f} ms, {stats['late_ticks']} late ticks, "
          f"{stats['unanswered']} without answer, {stats['stale_commands']} stale damps")
    assert "damping all joints" not in out
    assert stats["stale_commands"] == 0
    assert 0.05 < stats["rtf"] <= 1.02
    assert "vasimov: plant: real time: real-time factor" in out  # the supervisor's summary at exit


@pytest.mark.graph
def test_rogue_motor_commands_and_sim_controls_are_rejected_and_physics_keeps_running(graph_factory):
    g = graph_factory("--policy", "hold")
    probe = RosProbe(g.domain, name="rogue")
    try:
        probe.subscribe(topics.PLANT_STATE, PlantState, qos.STATE_STREAM, keep=10)
        wait_for(lambda: probe.last(topics.PLANT_STATE) is not None, 60, "plant state")
        pub = probe.publisher(topics.MOTOR_COMMAND, MotorCommand, qos.LOOP)
        sim = probe.publisher(topics.SIM_CONTROL, SimControl, qos.COMMANDS)
        wait_for(lambda: pub.get_subscription_count() >= 1 and sim.get_subscription_count() >= 1, 30,
                 "the plant's subscriptions")

        def rogue(field: str, value: float) -> MotorCommand:
            m = MotorCommand()
            state = probe.last(topics.PLANT_STATE)
            m.epoch, m.tick = state.epoch, state.tick + 1  # the tick the plant waits for next
            m.kd = np.full(joints.NUM_JOINTS, 1.0)
            getattr(m, field)[3] = value
            return m

        pub.publish(rogue("kp", -5.0))
        pub.publish(rogue("position", math.nan))
        sim.publish(SimControl(action=SimControl.ACTION_PUSH, body="pelvis_link", force=[1e6, 0.0, 0.0],
                               duration=0.1))
        sim.publish(SimControl(action=SimControl.ACTION_PUSH, body="no_such_body", force=[1.0, 0.0, 0.0],
                               duration=0.1))
        sim.publish(SimControl(action=SimControl.ACTION_PUSH, body="pelvis_link", force=[1.0, 0.0, 0.0],
                               duration=math.inf))
        sim.publish(SimControl(action=99))
        wait_for(lambda: "kp must be >= 0" in g.output() and "position must be finite" in g.output(), 20,
                 "both motor-command rejections in the plant's log")
        wait_for(lambda: "push rejected" in g.output() and "unknown action 99" in g.output(), 20,
                 "the sim-control rejections in the plant's log")
        # physics keeps running: simulated time advances and the SDK stream still flows
        t0 = probe.last(topics.PLANT_STATE).stamp
        wait_for(lambda: _stamp(probe.last(topics.PLANT_STATE).stamp) > _stamp(t0) + 1.0, 30,
                 "a further simulated second")
        assert http_json_when_ready(f"{API}/api/sim/truth")["sim_time"] > _stamp(t0)
        assert "internal error" not in g.output()
    finally:
        probe.close()
    assert g.stop() == 0
    stats = _stats(g.output())
    assert stats["rejected_commands"] == 2
    assert stats["rejected_sim_control"] == 4


def _stamp(s) -> float:
    return s.sec + s.nanosec * 1e-9


def test_an_unexpected_exception_in_a_plant_thread_becomes_a_published_fault_and_an_exit_code():
    """The guard every long-lived plant thread runs under: never a silently dead thread."""
    from vasimov_plant.node import EXIT_INTERNAL_FAULT, INTERNAL_FAULT_KIND, PlantNode

    domain = next_domain_id()
    probe = RosProbe(domain, name="fault_probe")
    rclpy.init(domain_id=domain)
    node = None
    try:
        probe.subscribe(topics.PLANT_FAULT, PlantFault, qos.LATCHED)
        node = PlantNode()

        def broken() -> None:
            raise ZeroDivisionError("a bug in a loop")

        node.guarded("physics thread", broken)
        assert node.exit_code == EXIT_INTERNAL_FAULT
        wait_for(lambda: probe.count(topics.PLANT_FAULT) >= 1, 20, "the latched PlantFault")
        fault = probe.last(topics.PLANT_FAULT)
        assert fault.kind == INTERNAL_FAULT_KIND
        assert "physics thread: ZeroDivisionError: a bug in a loop" in fault.message
    finally:
        probe.close()
        if node is not None:
            node.destroy_node()
        rclpy.shutdown()
