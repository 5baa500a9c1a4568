"""The plant node alone (real time), with the test as its edge: motor commands in, sensors and truth out.

The test answers every control tick itself, so the plant's conversions are checked without the firmware or a
policy: joint order and units of the motor command and of every telemetry topic, stamps (simulated time, the same
on every topic of one step), the epoch of virtual restarts, sim-control pushes and rejections, and the start-up
parameter checks (a bad value: a clear message and exit code 2).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
import pytest
from harness import wait_for
from nav_msgs.msg import Odometry
from node_harness import publishers_matched, run_to_exit
from rosgraph_msgs.msg import Clock
from rosprobe import RosProbe
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import String
from vasimov_msgs.msg import FootContacts, MotorCommand, PlantFault, PlantState, SimControl

from vasimov import joints
from vasimov.ros import qos, topics
from vasimov.ros.convert import from_stamp

pytestmark = pytest.mark.node

N = joints.NUM_JOINTS
DT = 0.005
DECIMATION = 4
GANTRY_HEIGHT = 0.639
LEFT_LEG = [joints.SIM_NAMES.index(n) for n in joints.SIM_NAMES if n.startswith(("left_hip", "left_knee",
                                                                                 "left_ankle"))]
RIGHT_LEG = [joints.SIM_NAMES.index(n) for n in joints.SIM_NAMES if n.startswith(("right_hip", "right_knee",
                                                                                  "right_ankle"))]
# distinct per joint, well inside every effort limit (>= 12 N*m): a swapped joint shows as a wrong effort
FEEDFORWARD = np.array([0.2 * (i + 1) * (-1) ** i for i in range(N)])


@dataclass
class Edge:
    """The test's stand-in for the edge: answers every tick of the current epoch with `command`."""

    probe: RosProbe
    command: dict[str, np.ndarray] = field(default_factory=lambda: damping(2.0))
    answered: list[tuple[int, int]] = field(default_factory=list)  # (epoch, tick)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.pub = self.probe.publisher(topics.MOTOR_COMMAND, MotorCommand, qos.LOOP)
        self.sub = self.probe.node.create_subscription(PlantState, topics.PLANT_TICK, self.on_tick, qos.LOOP)

    def on_tick(self, msg: PlantState) -> None:
        with self.lock:
            c = self.command
            m = MotorCommand(stamp=msg.stamp, tick=msg.tick, epoch=msg.epoch, gantry_engaged=True)
            m.position, m.velocity, m.kp, m.kd, m.torque_ff = (c[k] for k in ("position", "velocity", "kp", "kd",
                                                                             "torque_ff"))
            self.answered.append((int(msg.epoch), int(msg.tick)))
        self.pub.publish(m)

    def set(self, command: dict[str, np.ndarray]) -> int:
        """Answer with `command` from now on; returns the first tick that will carry it."""
        with self.lock:
            self.command = command
            return (self.answered[-1][1] + 1) if self.answered else 0


def damping(kd: float, torque_ff: np.ndarray | None = None) -> dict[str, np.ndarray]:
    z = np.zeros(N)
    return {"position": z, "velocity": z, "kp": z, "kd": np.full(N, kd),
            "torque_ff": z if torque_ff is None else torque_ff}


@pytest.fixture
def plant(node_factory):
    node = node_factory("plant_node", {"lockstep": False, "realtime_factor": 4.0, "realtime_log_period": 0.0},
                        config="plant")
    probe = RosProbe(node.domain)
    try:
        yield node, probe
    finally:
        probe.close()


def _subscribe_all(probe: RosProbe) -> list:
    return [probe.subscribe(topics.PLANT_STATE, PlantState, qos.STATE_STREAM),
            probe.subscribe(topics.JOINT_STATES, JointState),
            probe.subscribe(topics.IMU, Imu),
            probe.subscribe(topics.ODOM_TRUTH, Odometry),
            probe.subscribe(topics.FEET_TRUTH, FootContacts),
            probe.subscribe(topics.CLOCK, Clock, qos.CLOCK),
            probe.subscribe(topics.ROBOT_DESCRIPTION, String, qos.LATCHED)]


def _by_stamp(msgs: list, stamp_of=lambda m: m.header.stamp) -> dict[int, object]:
    return {stamp_of(m).sec * 1_000_000_000 + stamp_of(m).nanosec: m for m in msgs}


def _ns(stamp) -> int:
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def test_motor_command_in_sensors_and_truth_out(plant):
    _node, probe = plant
    subs = _subscribe_all(probe)
    edge = Edge(probe)
    wait_for(lambda: publishers_matched(edge.pub, edge.sub, *subs), 40, "the plant's topics to match")
    edge.set(damping(0.0, FEEDFORWARD))  # pure feed-forward torque: effort must equal it, joint by joint

    def with_feedforward() -> list[PlantState]:
        msgs = probe.all(topics.PLANT_STATE)
        first = next((i for i, m in enumerate(msgs) if np.allclose(m.effort, FEEDFORWARD, atol=1e-9)), None)
        return [] if first is None else msgs[first:]

    # the plant may step its first ticks unanswered (published before the probe matched); from the first state the
    # command drives, every state carries it (the watchdog too reuses a fresh last command)
    states = wait_for(lambda: len(with_feedforward()) > 40 and with_feedforward(), 30, "states the command drives")
    for m in states:
        np.testing.assert_allclose(m.effort, FEEDFORWARD, atol=1e-9, err_msg=f"effort at step {m.step}")
        # the answer to tick k drives steps 4k+1 .. 4k+4; an older tick or -1 only when a step went unanswered
        assert -1 <= m.command_tick <= -(-m.step // DECIMATION) - 1, (m.step, m.command_tick)
    answered = [m for m in states if m.command_tick == -(-m.step // DECIMATION) - 1]
    assert len(answered) > 0.8 * len(states), "most steps are driven by the answer to their own tick"

    # stamps: simulated time of the step, one step apart, no gaps or repeats, epoch 0 of a fresh plant
    all_states = probe.all(topics.PLANT_STATE)
    steps = [m.step for m in all_states]
    assert steps == list(range(steps[0], steps[0] + len(steps))), "every physics step, in order"
    for m in all_states:
        assert _ns(m.stamp) == round(m.step * DT * 1e9) and m.epoch == 0
        assert m.tick == m.step // DECIMATION and m.control_tick == (m.step % DECIMATION == 0)
        assert m.gantry_engaged, "the hook holds the robot while the edge asks for it"
    clocks = {_ns(c.clock) for c in probe.all(topics.CLOCK)}
    assert {_ns(m.stamp) for m in all_states} <= clocks | {_ns(all_states[-1].stamp)}, "/clock is the states' time"

    # the standard topics carry the same reading as the plant state of the same stamp, in the same joint order
    wait_for(lambda: probe.count(topics.FEET_TRUTH) > 10, 10, "ground truth")
    by_stamp = _by_stamp(all_states, lambda m: m.stamp)
    joint_msgs = [j for j in probe.all(topics.JOINT_STATES) if _ns(j.header.stamp) in by_stamp]
    assert len(joint_msgs) > 10
    for j in joint_msgs:
        s = by_stamp[_ns(j.header.stamp)]
        assert list(j.name) == list(joints.SIM_NAMES)
        assert list(j.position) == list(s.position) and list(j.velocity) == list(s.velocity)
        assert list(j.effort) == list(s.effort)
    imus = [i for i in probe.all(topics.IMU) if _ns(i.header.stamp) in by_stamp]
    assert imus and imus[0].header.frame_id == "imu_in_pelvis"
    for i in imus:
        s = by_stamp[_ns(i.header.stamp)]
        o = i.orientation
        assert [o.w, o.x, o.y, o.z] == list(s.imu_orientation), "ROS x,y,z,w named from the plant's w,x,y,z"
        av, la = i.angular_velocity, i.linear_acceleration
        assert [av.x, av.y, av.z] == list(s.imu_angular_velocity)
        assert [la.x, la.y, la.z] == list(s.imu_linear_acceleration)
    odom = probe.last(topics.ODOM_TRUTH)
    assert (odom.header.frame_id, odom.child_frame_id) == ("world", "pelvis_link")
    assert abs(odom.pose.pose.position.z - GANTRY_HEIGHT) < 0.02, "on the gantry at its height (m)"
    q = odom.pose.pose.orientation
    assert abs(q.w) > 0.99, "held upright by the gantry"
    for f in probe.all(topics.FEET_TRUTH):
        assert _ns(f.stamp) in by_stamp or _ns(f.stamp) > _ns(all_states[-1].stamp)
        assert (f.left_normal_force > 0) == f.left_contact and (f.right_normal_force > 0) == f.right_contact
    description = wait_for(lambda: probe.last(topics.ROBOT_DESCRIPTION), 10, "the latched robot description")
    assert "<robot" in description.data and "pelvis_link" in description.data

    # position targets through the PD motor model, per joint: each joint settles on its own target (rad)
    target = joints.DEFAULT_POS + np.array([0.05 * ((i % 3) - 1) for i in range(N)])
    first = edge.set({"position": target, "velocity": np.zeros(N), "kp": joints.STAND_KP, "kd": joints.STAND_KD,
                      "torque_ff": np.zeros(N)})

    def settled() -> bool:
        m = probe.last(topics.PLANT_STATE)
        return m.tick > first + 5 and float(np.max(np.abs(np.asarray(m.position) - target))) < 0.03

    wait_for(settled, 30, "every joint to settle on its target")
    m = probe.last(topics.PLANT_STATE)
    expected = joints.STAND_KP * (target - np.asarray(m.position)) - joints.STAND_KD * np.asarray(m.velocity)
    # the effort of a step is computed from the state before it; the holding torque is what matters here
    np.testing.assert_allclose(m.effort, expected, atol=3.0, err_msg="PD effort per joint (N*m)")


def test_restart_push_rejections_and_fault(plant):
    node, probe = plant
    subs = [probe.subscribe(topics.PLANT_STATE, PlantState, qos.STATE_STREAM, keep=4000),
            probe.subscribe(topics.PLANT_FAULT, PlantFault, qos.LATCHED)]
    edge = Edge(probe)
    sim = probe.publisher(topics.SIM_CONTROL, SimControl)
    wait_for(lambda: publishers_matched(edge.pub, edge.sub, sim, *subs), 40, "the plant's topics to match")
    edge.set(damping(2.0))
    wait_for(lambda: probe.count(topics.PLANT_STATE) > 200, 30, "a second of simulated time")

    # a push on the left foot moves the left leg's joints, not the right leg's (the gantry holds the pelvis)
    pushed_from = probe.last(topics.PLANT_STATE).step
    sim.publish(SimControl(action=SimControl.ACTION_PUSH, body="left_ankle_roll_link", force=[60.0, 0.0, 0.0],
                           duration=0.2))
    node.wait_log(r"push \[60\.0, 0\.0, 0\.0\] N on left_ankle_roll_link for 0\.2 s", 20)

    def swing(idx: list[int]) -> float:
        return max((float(np.max(np.abs(np.asarray(m.velocity)[idx]))) for m in probe.all(topics.PLANT_STATE)
                    if m.step > pushed_from), default=0.0)

    wait_for(lambda: swing(LEFT_LEG) > 0.5, 20, "the pushed leg to move")
    assert swing(RIGHT_LEG) < 0.5 * swing(LEFT_LEG), (swing(LEFT_LEG), swing(RIGHT_LEG))

    # bad requests: logged, counted, nothing changes and the plant steps on
    sim.publish(SimControl(action=SimControl.ACTION_PUSH, body="no_such_link", force=[1.0, 0.0, 0.0],
                           duration=0.1))
    node.wait_log(r"push rejected: .*no_such_link", 20)
    sim.publish(SimControl(action=SimControl.ACTION_PUSH, body="pelvis_link", force=[5000.0, 0.0, 0.0],
                           duration=0.1))
    # (its log line is rate-limited with the first push rejection's; the count below includes it)
    sim.publish(SimControl(action=42))
    node.wait_log(r"sim control rejected: unknown action 42 \(3 sim-control requests rejected so far\)", 20)
    bad = MotorCommand(tick=0, epoch=0, position=[float("nan")] + [0.0] * (N - 1))
    edge.pub.publish(bad)
    node.wait_log(r"motor command for tick 0 rejected \(1 so far\): position", 20)
    last = probe.last(topics.PLANT_STATE).step
    wait_for(lambda: probe.last(topics.PLANT_STATE).step > last + 20, 20, "the plant to step on")

    # a virtual restart: epoch 1 from step 0, back at boot on the gantry, its time continuing the old life's
    before = probe.last(topics.PLANT_STATE)
    sim.publish(SimControl(action=SimControl.ACTION_RESTART))
    wait_for(lambda: any(m.epoch == 1 for m in probe.all(topics.PLANT_STATE)), 20, "the new life's states")
    new_life = [m for m in probe.all(topics.PLANT_STATE) if m.epoch == 1]
    assert new_life[0].step == 0 and new_life[0].control_tick and new_life[0].tick == 0
    old_life_end = max(from_stamp(m.stamp) for m in probe.all(topics.PLANT_STATE) if m.epoch == 0)
    # the boot state is stamped at the instant the old life ended (the same time, a new sample): never earlier
    assert from_stamp(new_life[0].stamp) == old_life_end >= from_stamp(before.stamp), "/clock never goes back"
    assert float(np.max(np.abs(new_life[0].velocity))) == 0.0, "boot state: at rest"
    wait_for(lambda: (1, 3) in edge.answered, 20, "the new life's ticks answered")

    # a physics fault: latched on its topic with this life's epoch; the sensors hold, the clock goes on
    sim.publish(SimControl(action=SimControl.ACTION_INJECT_FAULT))
    fault = wait_for(lambda: probe.last(topics.PLANT_FAULT), 20, "the plant fault")
    assert fault.epoch == 1 and fault.kind, fault
    held_from = probe.last(topics.PLANT_STATE).step
    wait_for(lambda: probe.last(topics.PLANT_STATE).step > held_from + 20, 20, "held steps after the fault")
    held = [m for m in probe.all(topics.PLANT_STATE) if m.epoch == 1 and m.step > held_from]
    assert all(np.all(np.isfinite(m.position)) for m in held), "the last finite reading, never NaN"
    sim.publish(SimControl(action=SimControl.ACTION_PUSH, body="pelvis_link", force=[1.0, 0.0, 0.0],
                           duration=0.1))
    node.wait_log(r"push rejected: the physics is faulted until a restart", 20)
    sim.publish(SimControl(action=SimControl.ACTION_RESTART))
    wait_for(lambda: any(m.epoch == 2 and m.step > 8 for m in probe.all(topics.PLANT_STATE)), 20,
             "physics again after a restart")


@pytest.mark.parametrize("params,message", [
    # out of the declared range (rclpy checks the descriptor first), of the wrong type, against the model
    ({"seed": -1}, "plant: configuration error: invalid parameter: seed must be an integer in [0, 2147483647]"),
    ({"realtime_factor": "fast"}, "plant: configuration error: invalid parameter: realtime_factor must be a number"),
    ({"physics_dt": 0.004}, "plant: configuration error: physics_dt=0.004 does not match the model timestep"),
])
def test_bad_parameter_is_refused_at_start(params, message):
    code, out = run_to_exit("plant_node", params)
    assert code == 2, out[-2000:]
    assert message in out, out[-2000:]
    assert "Traceback" not in out, out[-2000:]
