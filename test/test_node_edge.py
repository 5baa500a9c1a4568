"""The edge (firmware) node alone, in real time, with the test as its plant, policy runner and command sources.

Plant ticks (and policy answers) in, motor commands and firmware states out: the tick, epoch and stamp of each answer,
the gains and targets of each mode in joint order, commands from /vasimov/command and /cmd_vel changing the mode,
a non-finite /cmd_vel refused and counted, a clamped velocity, and a virtual restart (a new epoch) back to DAMP.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from geometry_msgs.msg import Twist, Vector3
from harness import wait_for
from node_harness import Repeater, plant_state, publishers_matched, run_to_exit
from rosprobe import RosProbe
from vasimov_msgs.msg import FirmwareState, MotorCommand, PlantState, PolicyStep, RobotCommand

from vasimov import joints
from vasimov.ros import qos, topics

pytestmark = pytest.mark.node

DECIMATION = 4
# the policy's answer: the default pose in policy order plus a distinct small offset per action (inside every clamp)
POLICY_TARGET = joints.DEFAULT_POS[joints.POLICY_TO_JOINT] + np.array([0.01 * (p % 5 - 2) for p in
                                                                       range(joints.NUM_POLICY_JOINTS)])


class FakePlantAndPolicy:
    """Publishes plant tick k (and, once `policy_on`, the policy's answer to it) every 20 ms, as at 50 Hz."""

    def __init__(self, probe: RosProbe) -> None:
        self.ticks = probe.publisher(topics.PLANT_TICK, PlantState, qos.LOOP)
        self.policy = probe.publisher(topics.POLICY_STEP, PolicyStep, qos.LOOP)
        self.lock = threading.Lock()
        self.tick = 0
        self.epoch = 0
        self.policy_on = False
        self.sent: dict[tuple[int, int], PlantState] = {}

    def publish_once(self) -> None:
        with self.lock:
            m = plant_state(self.tick * DECIMATION, epoch=self.epoch)
            self.sent[(self.epoch, self.tick)] = m
            self.tick += 1
            policy_on = self.policy_on
        self.ticks.publish(m)
        if policy_on:
            self.policy.publish(PolicyStep(stamp=m.stamp, tick=m.tick, epoch=m.epoch, backend="test",
                                           target=POLICY_TARGET, torque_ff=np.zeros(joints.NUM_POLICY_JOINTS)))

    def restart(self) -> None:
        with self.lock:
            self.epoch += 1
            self.tick = 0


@pytest.fixture
def edge(node_factory):
    node = node_factory("edge_node", {"lockstep": False, "stand_ramp_duration": 0.2}, config="edge")
    probe = RosProbe(node.domain)
    try:
        yield node, probe
    finally:
        probe.close()


def _counter(fw: FirmwareState, name: str) -> int:
    return dict(zip(fw.counter_names, fw.counter_values, strict=True)).get(name, 0)


def _newest_after(probe: RosProbe, topic: str, tick: int, epoch: int = 0):
    m = probe.last(topic)
    return m if m is not None and m.epoch == epoch and m.tick > tick else None


def test_ticks_in_commands_out_modes_and_rejections(edge):
    node, probe = edge
    subs = [probe.subscribe(topics.MOTOR_COMMAND, MotorCommand, qos.LOOP),
            probe.subscribe(topics.FIRMWARE_STATE, FirmwareState, qos.LOOP)]
    fake = FakePlantAndPolicy(probe)
    commands = probe.publisher(topics.ROBOT_COMMAND, RobotCommand)
    cmd_vel = probe.publisher(topics.CMD_VEL, Twist)
    wait_for(lambda: publishers_matched(fake.ticks, fake.policy, commands, cmd_vel, *subs), 40,
             "the edge's topics to match")
    with Repeater(fake.publish_once):
        # boot: DAMP on the gantry; every tick answered with its own tick, epoch and stamp
        wait_for(lambda: probe.count(topics.FIRMWARE_STATE) >= 5, 30, "firmware states")
        for c in probe.all(topics.MOTOR_COMMAND)[:5]:
            sent = fake.sent[(c.epoch, c.tick)]
            assert c.stamp == sent.stamp and c.epoch == 0
            assert list(c.kp) == [0.0] * joints.NUM_JOINTS and max(c.kd) > 0, "DAMP: damping only"
            assert c.gantry_engaged and not c.gantry_lowering
        fw = probe.last(topics.FIRMWARE_STATE)
        assert (fw.mode, fw.mode_name, fw.armed) == (FirmwareState.MODE_DAMP, "DAMP", False)
        assert fw.firmware_time_us == fw.tick * 20_000, "firmware clock = tick x control period"
        assert fw.gantry_engaged and fw.thermal_model_active

        # a non-finite /cmd_vel is refused before the arbiter: counted, logged, the mode stays
        cmd_vel.publish(Twist(linear=Vector3(x=float("nan"))))
        wait_for(lambda: _counter(probe.last(topics.FIRMWARE_STATE), "velocity_non_finite") == 1, 20,
                 "the NON_FINITE counter")
        node.wait_log(r"command rejected: NON_FINITE velocity \(nan, 0.0, 0.0\) is not finite", 10)
        assert probe.last(topics.FIRMWARE_STATE).mode == FirmwareState.MODE_DAMP
        # a velocity in DAMP is dropped and counted too
        cmd_vel.publish(Twist(linear=Vector3(x=0.1)))
        wait_for(lambda: _counter(probe.last(topics.FIRMWARE_STATE), "velocity_in_damp") == 1, 20,
                 "the FW_DAMPED counter")

        # that velocity made teleop (FOXGLOVE) the arbiter's holder: the SDK lane (UDP, lower rank) is refused
        # until teleop has been silent for arbiter_hold (1 s of firmware time), then its STAND is taken
        stand = RobotCommand(source=RobotCommand.SOURCE_UDP, kind=RobotCommand.KIND_STAND, sequence=1)
        commands.publish(stand)
        node.wait_log(r"StandCommand from UDP rejected: NOT_ACTIVE FOXGLOVE holds control", 20)

        def standing() -> FirmwareState | None:
            m = probe.last(topics.FIRMWARE_STATE)
            if m.mode == FirmwareState.MODE_STAND:
                return m
            commands.publish(stand)
            return None

        fw = wait_for(standing, 20, "mode STAND", poll=0.2)
        # STAND: the stand gains, the hook lowering, then armed after the upright hold
        assert fw.control_source == "UDP" and _counter(fw, "accepted_stand") == 1
        c = wait_for(lambda: _newest_after(probe, topics.MOTOR_COMMAND, fw.tick), 20, "a STAND motor command")
        np.testing.assert_allclose(c.kp, joints.STAND_KP)
        np.testing.assert_allclose(c.kd, joints.STAND_KD)
        assert c.gantry_engaged and c.gantry_lowering
        wait_for(lambda: probe.last(topics.FIRMWARE_STATE).armed, 20, "armed after the upright hold")
        c = wait_for(lambda: _newest_after(probe, topics.MOTOR_COMMAND, fw.tick + 15), 20, "the ramp's end")
        np.testing.assert_allclose(c.position, joints.DEFAULT_POS, atol=1e-9, err_msg="the stand pose, per joint")

        # the policy answers; a teleop velocity (outranking the SDK) takes the robot to MOVE/POLICY, clamped to
        # the firmware caps, and the policy's targets drive the joints through POLICY_TO_JOINT
        with fake.lock:
            fake.policy_on = True
        cmd_vel.publish(Twist(linear=Vector3(x=0.6, y=-0.1), angular=Vector3(z=0.2)))
        fw = wait_for(lambda: (m := probe.last(topics.FIRMWARE_STATE)) and m.policy_active and m, 20, "MOVE/POLICY")
        assert (fw.mode, fw.move_submode, fw.control_source) == (FirmwareState.MODE_MOVE, "POLICY", "FOXGLOVE")
        np.testing.assert_allclose(fw.velocity_command, [0.4, -0.1, 0.2], err_msg="vx clamped to the 0.4 m/s cap")
        assert _counter(fw, "velocity_clamped") == 1 and _counter(fw, "accepted_velocity") == 1
        c = wait_for(lambda: _newest_after(probe, topics.MOTOR_COMMAND, fw.tick), 20, "a MOVE/POLICY motor command")
        pos = np.asarray(c.position)
        np.testing.assert_allclose(pos[joints.POLICY_TO_JOINT], POLICY_TARGET, atol=1e-9,
                                   err_msg="policy order -> joint order")
        np.testing.assert_allclose(np.asarray(c.kp)[joints.POLICY_TO_JOINT], joints.POLICY_KP[joints.POLICY_TO_JOINT])
        assert not c.gantry_engaged, "the walking policy takes the robot off the hook"

        # a virtual restart (the plant's next epoch): DAMP, unarmed, counters from zero, answers in the new epoch
        fake.restart()
        fw = wait_for(lambda: _newest_after(probe, topics.FIRMWARE_STATE, -1, epoch=1), 20, "the new life's state")
        assert (fw.mode, fw.armed, fw.control_source) == (FirmwareState.MODE_DAMP, False, "")
        assert _counter(fw, "rejections_total") == 0 and fw.gantry_engaged
        c = wait_for(lambda: _newest_after(probe, topics.MOTOR_COMMAND, -1, epoch=1), 20, "the new life's command")
        assert c.gantry_engaged and list(c.kp) == [0.0] * joints.NUM_JOINTS
    node.wait_log(r"plant restarted \(epoch 1, boot gantry\)", 10)


def test_bad_parameter_is_refused_at_start():
    code, out = run_to_exit("edge_node", {"stand_ramp_duration": 0.0})
    assert code == 2, out[-2000:]
    assert "edge: cannot start: invalid parameter: stand_ramp_duration must be a number in [0.1, 10.0]" in out, out
    assert "Traceback" not in out


def test_lockstep_resends_the_firmware_state_a_late_matched_reader_missed(node_factory):
    """At lockstep start-up a reader can see the edge's firmware-state writer before that writer has matched the
    reader (DDS discovers each side of a match on its own); the state sent meanwhile reaches nobody, and the policy
    runner, which answers tick k only with the state after tick k-1, waited for ever (CI: "no motor command for tick
    1 within 20 s"). Here the test is the plant and the policy runner: it answers tick 0, subscribes to the firmware
    state only after the edge sent it, then sends tick 1 without an answer: the edge must send that state again."""
    node = node_factory("edge_node", {"lockstep": True}, config="edge")
    probe = RosProbe(node.domain)
    try:
        cmds = probe.subscribe(topics.MOTOR_COMMAND, MotorCommand, qos.LOOP)
        ticks = probe.publisher(topics.PLANT_TICK, PlantState, qos.LOOP)
        policy = probe.publisher(topics.POLICY_STEP, PolicyStep, qos.LOOP)
        # the edge joins (reads ticks) once the policy's writer is there and its own writers matched what it knows
        wait_for(lambda: publishers_matched(ticks, policy, cmds), 40, "the edge to join the lockstep graph")
        tick0 = plant_state(0)
        policy.publish(PolicyStep(stamp=tick0.stamp, tick=0, epoch=0, backend="test", target=POLICY_TARGET,
                                  torque_ff=np.zeros(joints.NUM_POLICY_JOINTS)))
        ticks.publish(tick0)
        wait_for(lambda: probe.count(topics.MOTOR_COMMAND) >= 1, 20, "the edge's answer to tick 0")
        late = probe.subscribe(topics.FIRMWARE_STATE, FirmwareState, qos.LOOP)  # after tick 0's state went out
        wait_for(lambda: late.get_publisher_count() > 0, 20, "the late reader to see the edge's writer")
        ticks.publish(plant_state(DECIMATION))  # tick 1, and no policy answer to it: the runner "waits"
        wait_for(lambda: probe.count(topics.FIRMWARE_STATE) >= 1, 10, "the firmware state of tick 0, re-sent")
        assert probe.all(topics.FIRMWARE_STATE)[0].tick == 0
        node.wait_log(r"lockstep: no policy answer for tick 1 \d+\.\d s after firmware state 0 went out; re-sent", 10)
        assert probe.count(topics.MOTOR_COMMAND) == 1, "tick 1 was decided without its policy answer"
    finally:
        probe.close()
