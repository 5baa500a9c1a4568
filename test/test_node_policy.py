"""The policy runner node alone, in real time, with the test as its plant and firmware.

Plant ticks and firmware states in, policy steps out: every answer carries its tick's stamp, tick and epoch, and the
78-D observation of the official contract, recomputed here independently (test_policy_contract_graph's expectation,
from the fact sheet), for the hold backend and for an ONNX network the test writes (whose actions are known, so the
targets and the previous-action entries can be checked too). A virtual restart forgets the old life's firmware
state; an unknown backend is refused at start with exit code 2.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from harness import wait_for
from node_harness import Repeater, plant_state, publishers_matched, run_to_exit
from rosprobe import RosProbe
from test_policy_contract_graph import DEFAULT, ORDER, _expected_observation
from vasimov_msgs.msg import FirmwareState, PlantState, PolicyStep

from vasimov import joints
from vasimov.ros import qos, topics
from vasimov_edge.policy.synthetic import make_linear_policy

pytestmark = pytest.mark.node

DECIMATION = 4
COMMAND = (0.3, -0.1, 0.25)
DEFAULT_POLICY_ORDER = np.array([DEFAULT[name] for name in ORDER])


class FakePlantAndFirmware:
    """Every 20 ms: the firmware's state after tick k-1 (velocity command `command`, MOVE/POLICY), then plant tick k
    with a pose, joint velocities, gyro and tilt that differ per tick (so every observation entry is exercised)."""

    def __init__(self, probe: RosProbe) -> None:
        self.ticks = probe.publisher(topics.PLANT_TICK, PlantState, qos.LOOP)
        self.firmware = probe.publisher(topics.FIRMWARE_STATE, FirmwareState, qos.LOOP)
        self.lock = threading.Lock()
        self.tick = 0
        self.epoch = 0
        self.command: tuple[float, float, float] | None = COMMAND
        self.sent: dict[tuple[int, int], PlantState] = {}

    def state(self, k: int) -> PlantState:
        rng = np.random.default_rng(k)
        tilt = 0.05 * rng.standard_normal(3)
        quat = np.array([1.0, *(0.5 * tilt)])
        return plant_state(k * DECIMATION, epoch=self.epoch,
                           position=joints.DEFAULT_POS + 0.05 * rng.standard_normal(joints.NUM_JOINTS),
                           velocity=0.5 * rng.standard_normal(joints.NUM_JOINTS),
                           quat=tuple(quat / np.linalg.norm(quat)), gyro=tuple(0.3 * rng.standard_normal(3)))

    def publish_once(self) -> None:
        with self.lock:
            k, epoch, command = self.tick, self.epoch, self.command
            m = self.state(k)
            self.sent[(epoch, k)] = m
            self.tick += 1
        if command is not None and k > 0:
            fw = FirmwareState(tick=k - 1, epoch=epoch, mode=FirmwareState.MODE_MOVE, mode_name="MOVE",
                               move_submode="POLICY", armed=True, velocity_command=command, policy_active=True)
            self.firmware.publish(fw)
        self.ticks.publish(m)

    def restart(self, command: tuple[float, float, float] | None) -> None:
        with self.lock:
            self.epoch += 1
            self.tick = 0
            self.command = command


def _start(node_factory, backend: str):
    node = node_factory("policy_node", {"lockstep": False, "backend": backend}, config="policy")
    probe = RosProbe(node.domain)
    sub = probe.subscribe(topics.POLICY_STEP, PolicyStep, qos.LOOP)
    fake = FakePlantAndFirmware(probe)
    wait_for(lambda: publishers_matched(fake.ticks, fake.firmware, sub), 40, "the policy runner's topics to match")
    return node, probe, fake


def _with_command(probe: RosProbe, epoch: int, command) -> list[PolicyStep]:
    """This life's answers from the first one whose observation carries `command` (entries 6..8) on: before it, the
    runner may not have had a firmware state yet (it then observes a zero command)."""
    steps = [s for s in probe.all(topics.POLICY_STEP) if s.epoch == epoch]
    first = next((i for i, s in enumerate(steps) if np.allclose(s.observation[6:9], command, atol=1e-6)), None)
    return [] if first is None else steps[first:]


def _check_observations(fake: FakePlantAndFirmware, steps: list[PolicyStep], command, prev_action) -> None:
    fw = FirmwareState(velocity_command=command)
    for s in steps:
        assert len(s.observation) == 78, len(s.observation)
        sent = fake.sent[(s.epoch, s.tick)]
        assert s.stamp == sent.stamp, "the answer carries its tick's stamp"
        expected = _expected_observation(sent, fw, prev_action(s))
        np.testing.assert_allclose(np.asarray(s.observation, dtype=np.float64), expected, rtol=1e-5, atol=1e-6,
                                   err_msg=f"observation of tick {s.tick}")


def test_hold_backend_answers_every_tick_with_the_contract_observation(node_factory):
    _node, probe, fake = _start(node_factory, "hold")
    try:
        with Repeater(fake.publish_once):
            steps = wait_for(lambda: len(s := _with_command(probe, 0, COMMAND)) >= 20 and s, 30, "20 answers")
            _check_observations(fake, steps, COMMAND, lambda s: np.zeros(23))
            for s in steps:
                assert s.backend == "zero" and (len(s.kp), len(s.kd), len(s.action)) == (0, 0, 0)
                np.testing.assert_allclose(s.target, DEFAULT_POLICY_ORDER, err_msg="the stand pose, policy order")
                assert list(s.torque_ff) == [0.0] * 23
            ticks = [s.tick for s in probe.all(topics.POLICY_STEP)]
            assert ticks == sorted(set(ticks)), "every tick answered once, in order"

            # a virtual restart: the old life's firmware state is not used (zero command until the new life's)
            fake.restart(command=None)
            wait_for(lambda: sum(s.epoch == 1 for s in probe.all(topics.POLICY_STEP)) >= 5, 20, "the new life")
            for s in (s for s in probe.all(topics.POLICY_STEP) if s.epoch == 1):
                assert list(s.observation[6:9]) == [0.0, 0.0, 0.0], f"tick {s.tick} used another life's command"
            fake.restart(command=(0.1, 0.2, -0.3))
            wait_for(lambda: len(_with_command(probe, 2, (0.1, 0.2, -0.3))) >= 5, 20, "the new life's command")
        assert " walks vx" not in _node.output(), "the hold backend walks nothing it could limit"
    finally:
        probe.close()


def test_builtin_walker_says_once_when_it_walks_less_than_commanded(node_factory):
    node, probe, fake = _start(node_factory, "builtin")
    fake.command = (0.4, 0.0, 0.0)  # the SDK's forward limit; the built-in walker walks at most 0.3 m/s
    notice = "builtin walks vx +0.30 m/s, vy +0.00 m/s, vyaw +0.00 rad/s of the commanded vx +0.40 m/s"
    try:
        with Repeater(fake.publish_once):
            # the built-in walker carries no 78-D observation to find the command in: answers, then the notice
            wait_for(lambda: len(probe.all(topics.POLICY_STEP)) >= 40, 40, "40 answers")
            wait_for(lambda: notice in node.output(), 10, "the policy runner's notice")
        assert node.output().count(" walks vx") == 1, node.output()[-2000:]
        assert "[WARN]" in next(line for line in node.output().splitlines() if notice in line)
    finally:
        probe.close()


def test_onnx_backend_actions_and_previous_action(node_factory, tmp_path):
    bias = np.array([0.004 * (i - 11) for i in range(23)], dtype=np.float32)  # distinct, small, signed
    policy = make_linear_policy(tmp_path / "linear.onnx", np.zeros((23, 78), dtype=np.float32), bias)
    _node, probe, fake = _start(node_factory, str(policy))
    try:
        with Repeater(fake.publish_once):
            # from the second answer with the command on, the previous action is the network's constant output
            steps = wait_for(lambda: len(s := _with_command(probe, 0, COMMAND)) >= 20 and s[1:], 40, "20 answers")
            _check_observations(fake, steps, COMMAND, lambda s: bias.astype(np.float64))
            for s in steps:
                np.testing.assert_allclose(s.action, bias, atol=1e-7)
                np.testing.assert_allclose(s.target, DEFAULT_POLICY_ORDER + 0.25 * bias, atol=1e-6,
                                           err_msg="target = default + 0.25 x action, policy order")
                assert s.compute_time > 0.0
    finally:
        probe.close()


def test_unknown_backend_is_refused_at_start():
    code, out = run_to_exit("policy_node", {"backend": "nonsense"})
    assert code == 2, out[-2000:]
    assert "policy: cannot start: unknown policy spec 'nonsense'; valid: 'builtin', 'zero'" in out, out[-2000:]
    assert "Traceback" not in out
