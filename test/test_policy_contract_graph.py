"""The official policy contract, proven inside the live graph with an ONNX file the test makes.

A linear "policy" whose actions are a known constant runs in the policy node of a lockstep graph. Every one of the
78 observation entries it was fed is recomputed here independently, from the plant's published sensor state, the
firmware's previous answer and the fact sheet's contract (names, slots, scales; not from the observation builder),
and the actions must arrive on the right joints of the motor command as default + 0.25 x action.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from harness import Graph, wait_for
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosprobe import RosProbe
from vasimov_msgs.msg import FirmwareState, MotorCommand, PlantState, PolicyStep

from vasimov import joints
from vasimov.ros import topics
from vasimov_edge.policy.synthetic import make_linear_policy

pytestmark = pytest.mark.graph
FACTS = yaml.safe_load((Path(joints.__file__).parent / "data" / "asimov1_facts.yaml").read_text())
CONTRACT = FACTS["policy_contract"]
ORDER = CONTRACT["action"]["order"]
DEFAULT = FACTS["default_standing_pose"]["sim_joints"]
COMMAND = (0.1, -0.05, 0.2)


def _gravity_in_body(q_wxyz) -> np.ndarray:
    w, x, y, z = np.asarray(q_wxyz) / np.linalg.norm(q_wxyz)
    rot = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                    [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                    [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    return rot.T @ np.array([0.0, 0.0, -1.0])


def _expected_observation(state: PlantState, fw_prev: FirmwareState, prev_action: np.ndarray) -> np.ndarray:
    q = dict(zip(joints.SIM_NAMES, state.position, strict=True))
    qd = dict(zip(joints.SIM_NAMES, state.velocity, strict=True))
    slots = CONTRACT["slots"]
    parts = [0.25 * np.asarray(state.imu_angular_velocity), _gravity_in_body(state.imu_orientation),
             np.asarray(fw_prev.velocity_command)]
    parts += [np.array([q[n] - DEFAULT[n] for n in slots[s]["joints"]]) for s in ("slot01", "slot23", "slot45")]
    parts += [0.1 * np.array([qd[n] for n in slots[s]["joints"]]) for s in ("slot01", "slot23", "slot45")]
    parts.append(prev_action)
    return np.concatenate(parts)


def test_every_observation_entry_and_action_in_the_live_graph(tmp_path):
    bias = np.array([0.004 * (i - 11) for i in range(23)], dtype=np.float32)  # distinct, small, signed
    policy = make_linear_policy(tmp_path / "linear.onnx", np.zeros((23, 78), dtype=np.float32), bias)
    script = tmp_path / "script.yaml"
    script.write_text("- {t: 0.1, cmd: stand}\n"
                      f"- {{t: 3.6, cmd: velocity, vx: {COMMAND[0]}, vy: {COMMAND[1]}, vyaw: {COMMAND[2]}}}\n")
    g = Graph("--lockstep", "--duration", "4.2", "--policy", str(policy), "--script", str(script),
              "lockstep_participants:=edge,policy,test_probe", "foxglove:=false", "binary_stream:=false")
    probe = RosProbe(g.domain)
    deep = QoSProfile(depth=100_000, reliability=ReliabilityPolicy.RELIABLE)
    try:
        subs = [probe.subscribe(topics.FIRMWARE_STATE, FirmwareState, deep),
                probe.subscribe(topics.POLICY_STEP, PolicyStep, deep),
                probe.subscribe(topics.MOTOR_COMMAND, MotorCommand, deep)]
        wait_for(lambda: all(s.get_publisher_count() > 0 for s in subs), 60, "the probe's readers to match")
        probe.subscribe(topics.PLANT_TICK, PlantState, deep)
        probe.announce_lockstep_ready()
        assert g.proc.wait(timeout=180) == 0, g.output()[-3000:]
        wait_for(lambda: probe.count(topics.PLANT_TICK) >= 211, 10, "every tick")
        ticks = {m.tick: m for m in probe.all(topics.PLANT_TICK)}
        fws = {m.tick: m for m in probe.all(topics.FIRMWARE_STATE)}
        steps = {m.tick: m for m in probe.all(topics.POLICY_STEP)}
        cmds = {m.tick: m for m in probe.all(topics.MOTOR_COMMAND)}
    finally:
        probe.close()
        g.stop()

    active = [k for k in sorted(steps) if k - 1 in fws and fws[k - 1].policy_active]
    assert len(active) >= 20, "MOVE/POLICY was never reached"
    first = active[0]
    for k in active:
        obs = np.asarray(steps[k].observation, dtype=np.float64)
        assert obs.shape == (78,)
        prev = np.zeros(23) if k == first else bias.astype(np.float64)
        expected = _expected_observation(ticks[k], fws[k - 1], prev)
        np.testing.assert_allclose(obs, expected, rtol=1e-5, atol=1e-6, err_msg=f"tick {k}")
        np.testing.assert_allclose(steps[k].action, bias, atol=1e-7)
    assert np.allclose(fws[active[-1]].velocity_command, COMMAND)
    # actions land on their joints: motor target = default + 0.25 * action, with the policy gains
    for k in active:
        if not fws[k].policy_active:
            continue
        cmd = cmds[k]
        for p, name in enumerate(ORDER):
            j = joints.SIM_NAMES.index(name)
            target = DEFAULT[name] + 0.25 * float(bias[p])
            assert cmd.position[j] == pytest.approx(target, abs=1e-6), (k, name)
            assert cmd.kp[j] == joints.POLICY_KP[j]
