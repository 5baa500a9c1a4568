"""The plant node: the only process that owns MuJoCo state.

It steps physics, applies the latest motor command through the motor model, and publishes what the robot's
sensors read (every step) plus ground truth and `/clock`. Two time modes:

* real time: lockstep held back to the wall clock (`vasimov_plant.pacing`): a physics thread starts control
  period k once the motor command answering tick k has arrived and the wall clock has reached the period's slot.
  A machine that cannot keep up slows simulated time down (real-time factor < 1) instead of stepping a tick without
  its answer; only when no answer has arrived for `answer_timeout` wall seconds (a participant is gone) does the
  plant step on at wall pace under a command-age watchdog (the last command while fresh, then pure damping);
* lockstep: after publishing control tick k the plant waits until the motor command answering tick k arrives, then
  applies it for the next `control_decimation` physics steps. A command published in answer to tick k therefore
  takes effect at physics step k*decimation and stays until step (k+1)*decimation; nothing depends on wall time.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from geometry_msgs.msg import Vector3
from nav_msgs.msg import Odometry
from rclpy.duration import Duration
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import String
from vasimov_msgs.msg import FootContacts, MotorCommand, PlantFault, PlantState, SimControl

from vasimov import joints
from vasimov.frames import rotate_inverse
from vasimov.graph_status import SUMMARY_TAG
from vasimov.model.urdf import build_urdf
from vasimov.ros import qos, topics
from vasimov.ros.convert import quat_wxyz_to_ros, to_stamp
from vasimov.ros.lockstep import writers_matched
from vasimov.ros.params import COMMON, ParamSpec, declare
from vasimov.ros.ratelog import RateLimitedLog
from vasimov.ros.spin import ros_session
from vasimov_bridge.http_api import HttpError, parse_push
from vasimov_plant.pacing import Pacer
from vasimov_plant.physics import GroundTruth, MotorTargets, PhysicsError, PlantCore, SensorReading, validate_command

PARAMS: tuple[ParamSpec, ...] = (
    *COMMON,
    ParamSpec("duration", 0.0, "Simulated seconds to run before exiting 0 (0 = until stopped).", min=0.0, max=1e7),
    ParamSpec("seed", 0, "Seed for every random draw of the plant.", min=0, max=2**31 - 1),
    ParamSpec("viewer", False, "Open MuJoCo's passive viewer (needs a display)."),
    ParamSpec("gantry_height", 0.639, "Pelvis height the virtual gantry holds at boot (m).", min=0.4, max=1.5),
    ParamSpec("command_timeout", 0.1, "Real time only, once a participant is silent (answer_timeout): the last "
              "motor command is used while younger than this (sim s), then replaced by damping.", min=0.01, max=10.0),
    ParamSpec("answer_timeout", 1.0, "Real time only: wall seconds without any motor command after which the plant "
              "stops waiting for each tick's answer and steps on at wall pace (a participant is gone).",
              min=0.05, max=10.0),
    ParamSpec("realtime_log_period", 10.0, "Real time only: wall seconds between log lines with the achieved "
              "real-time factor, tick lateness and watchdog damps (0 = off).", min=0.0, max=3600.0),
    ParamSpec("watchdog_kd", 2.0, "Damping gain applied to every joint while the motor command is stale.",
              min=0.0, max=50.0),
    ParamSpec("standard_topics_decimation", 1, "Publish /joint_states, /imu and ground truth every N physics "
              "steps.", min=1, max=1000),
    ParamSpec("realtime_factor", 1.0, "Real time only: simulated seconds per wall second.", min=0.01, max=100.0),
    ParamSpec("lockstep_timeout", 20.0, "Lockstep only: wall seconds to wait for a participant's answer before "
              "declaring it dead and exiting non-zero.", min=0.5, max=3600.0),
    ParamSpec("lockstep_participants", 2, "Lockstep only: subscribers of the tick topic that must be matched "
              "before the first tick (edge + policy).", min=1, max=16),
    ParamSpec("speed_torque_envelope", False, "Limit motor torque linearly to zero at the joint's no-load speed "
              "(assumed envelope)."),
)

LOCKSTEP_NODES = frozenset({"edge", "policy"})  # the closed loop's participants (node names in the launch file)
EXIT_PHYSICS_FAULT = 3
EXIT_LOCKSTEP_STALL = 4
EXIT_INTERNAL_FAULT = 5
INTERNAL_FAULT_KIND = "internal_error"  # PlantFault.kind of an unexpected exception in one of the plant's threads


@dataclass(frozen=True)
class Answer:
    """A validated motor command and the control tick it answers."""

    tick: int
    targets: MotorTargets
    gantry_engaged: bool
    gantry_lowering: bool


@dataclass(frozen=True)
class StepSnapshot:
    """One physics step's readings, kept until the control period's tick has been published."""

    sensors: SensorReading
    truth: GroundTruth | None  # only on steps that publish the standard topics
    now: float
    step: int
    control_tick: bool

class PlantNode(Node):
    def __init__(self) -> None:
        super().__init__("plant")
        self.p = declare(self, PARAMS)
        self.decimation = int(self.p["control_decimation"])
        self.core = PlantCore(gantry_height=self.p["gantry_height"], seed=self.p["seed"],
                              speed_torque_envelope=self.p["speed_torque_envelope"])
        if abs(self.core.dt - self.p["physics_dt"]) > 1e-12:
            raise ValueError(f"physics_dt={self.p['physics_dt']} does not match the model timestep {self.core.dt}")
        self.control_period = self.core.dt * self.decimation
        self.lockstep = bool(self.p["lockstep"])
        self.log_limited = RateLimitedLog(self.get_logger().warning)
        self.exit_code: int | None = None
        self.lock = threading.Lock()

        self.epoch = 0
        self.time_offset = 0.0  # keeps /clock monotonic across virtual restarts
        self.faulted = False
        # Physics faulted: the robot's clock and the sensor stream go on (the last finite reading, held) so the
        # firmware can report the fault the way the robot would, instead of the graph going silent.
        self.held_steps = 0  # steps published since the fault, without physics
        self.last_good: StepSnapshot | None = None
        self.fault: PlantFault | None = None  # this life's physics fault
        self.physics_faults = 0
        self.cond = threading.Condition(self.lock)  # the physics thread waits on it for tick k's answer
        self.latest: Answer | None = None  # real time: the newest valid answer of this life
        self.applied_tick = -1  # the tick whose answer drives the current control period (PlantState.command_tick)
        self.pacer: Pacer | None = None  # real time: created by start_realtime()
        self.awaiting_tick: int | None = None
        self.awaiting_since = 0.0
        self.stale_count = 0
        self.out_of_order = 0
        self.rejected_commands = 0
        self.rejected_sim_control = 0

        self.pub_clock = self.create_publisher(Clock, topics.CLOCK, qos.CLOCK)
        self.pub_state = self.create_publisher(PlantState, topics.PLANT_STATE, qos.STATE_STREAM)
        self.pub_tick = self.create_publisher(PlantState, topics.PLANT_TICK, qos.LOOP)
        self.pub_joints = self.create_publisher(JointState, topics.JOINT_STATES, qos.TELEMETRY)
        self.pub_imu = self.create_publisher(Imu, topics.IMU, qos.TELEMETRY)
        self.pub_odom = self.create_publisher(Odometry, topics.ODOM_TRUTH, qos.TELEMETRY)
        self.pub_feet = self.create_publisher(FootContacts, topics.FEET_TRUTH, qos.TELEMETRY)
        self.pub_fault = self.create_publisher(PlantFault, topics.PLANT_FAULT, qos.LATCHED)  # late joiners see it
        # the robot for viewers (Foxglove, RViz): latched, published once; link names = MuJoCo body names
        self.pub_description = self.create_publisher(String, topics.ROBOT_DESCRIPTION, qos.LATCHED)
        self.pub_description.publish(String(data=build_urdf()))
        self.create_subscription(MotorCommand, topics.MOTOR_COMMAND, self.on_motor_command, qos.LOOP)
        self.create_subscription(SimControl, topics.SIM_CONTROL, self.on_sim_control, qos.COMMANDS)

        self._init_messages()
        self.core.reset()
        self._apply_damping()
        self.viewer = self._open_viewer() if self.p["viewer"] else None
        self.get_logger().info(
            f"plant ready: dt={self.core.dt} s, control every {self.decimation} steps, "
            f"{'lockstep' if self.lockstep else 'real time x' + str(self.p['realtime_factor'])}")

    # -- messages ------------------------------------------------------------------------------------------------
    def _init_messages(self) -> None:
        self.m_clock = Clock()
        self.m_state = PlantState()
        self.m_joints = JointState()
        self.m_joints.name = list(joints.SIM_NAMES)
        self.m_imu = Imu()
        self.m_imu.header.frame_id = "imu_in_pelvis"
        self.m_odom = Odometry()
        self.m_odom.header.frame_id = "world"
        self.m_odom.child_frame_id = "pelvis_link"
        self.m_feet = FootContacts()

    def sim_time(self) -> float:
        return self.time_offset + self.core.time + self.held_steps * self.core.dt

    @property
    def step_count(self) -> int:
        """Steps of this life: physics steps, then (after a physics fault) steps published without physics."""
        return self.core.step_count + self.held_steps

    def _snapshot(self, control_tick: bool) -> StepSnapshot:
        step = self.core.step_count
        standard = step % self.p["standard_topics_decimation"] == 0
        return StepSnapshot(self.core.sensors(), self.core.truth() if standard else None, self.sim_time(),
                            self.step_count, control_tick)

    def _fill_state(self, snap: StepSnapshot) -> PlantState:
        s = snap.sensors
        m = self.m_state
        to_stamp(snap.now, m.stamp)
        m.step = snap.step
        m.tick = snap.step // self.decimation
        m.control_tick = snap.control_tick
        m.command_tick = self.applied_tick
        m.epoch = self.epoch
        m.position = s.q
        m.velocity = s.qd
        m.effort = s.tau
        m.imu_orientation = s.imu_quat
        m.imu_angular_velocity = s.gyro
        m.imu_linear_acceleration = s.accel
        m.gantry_engaged = bool(s.gantry_engaged)
        return m

    def _publish_telemetry(self, snap: StepSnapshot) -> None:
        if not self.faulted:
            self.last_good = snap
        m = self._fill_state(snap)
        self.m_clock.clock = m.stamp
        self.pub_clock.publish(self.m_clock)
        self.pub_state.publish(m)
        if snap.truth is not None:
            self._publish_standard(snap.sensors, snap.truth, m.stamp)

    def _publish_step(self, control_tick: bool) -> None:
        """Publish the current step at once (start, restart): its tick first, if it is one."""
        snap = self._snapshot(control_tick)
        if control_tick:
            self.pub_tick.publish(self._fill_state(snap))
        self._publish_telemetry(snap)

    def _publish_standard(self, s: SensorReading, t: GroundTruth, stamp) -> None:
        j = self.m_joints
        j.header.stamp = stamp
        j.position = s.q.tolist()
        j.velocity = s.qd.tolist()
        j.effort = s.tau.tolist()
        self.pub_joints.publish(j)
        imu = self.m_imu
        imu.header.stamp = stamp
        quat_wxyz_to_ros(s.imu_quat, imu.orientation)
        imu.angular_velocity = Vector3(x=float(s.gyro[0]), y=float(s.gyro[1]), z=float(s.gyro[2]))
        imu.linear_acceleration = Vector3(x=float(s.accel[0]), y=float(s.accel[1]), z=float(s.accel[2]))
        self.pub_imu.publish(imu)
        o = self.m_odom
        o.header.stamp = stamp
        o.pose.pose.position.x, o.pose.pose.position.y, o.pose.pose.position.z = (float(v) for v in t.base_pos)
        quat_wxyz_to_ros(t.base_quat, o.pose.pose.orientation)
        # nav_msgs/Odometry twist is expressed in child_frame_id (the pelvis): rotate world vectors into it.
        lin = rotate_inverse(t.base_quat, t.base_lin_vel)
        ang = rotate_inverse(t.base_quat, t.base_ang_vel)
        o.twist.twist.linear = Vector3(x=float(lin[0]), y=float(lin[1]), z=float(lin[2]))
        o.twist.twist.angular = Vector3(x=float(ang[0]), y=float(ang[1]), z=float(ang[2]))
        self.pub_odom.publish(o)
        f = self.m_feet
        f.stamp = stamp
        f.left_contact, f.right_contact = bool(t.left_contact), bool(t.right_contact)
        f.left_normal_force, f.right_normal_force = float(t.left_force), float(t.right_force)
        self.pub_feet.publish(f)

    # -- commands ------------------------------------------------------------------------------------------------
    def _apply(self, targets: MotorTargets, gantry_engaged: bool, gantry_lowering: bool) -> None:
        t = targets
        self.core.set_command(t.position, t.velocity, t.kp, t.kd, t.torque_ff)
        if self.core.gantry_engaged or not gantry_engaged:  # a hook once off comes back only on restart
            self.core.set_gantry(gantry_engaged, gantry_lowering)

    def _apply_damping(self) -> None:
        n = joints.NUM_JOINTS
        zeros = np.zeros(n)
        self.core.set_command(zeros, zeros, zeros, np.full(n, self.p["watchdog_kd"]), zeros)

    def on_motor_command(self, msg: MotorCommand) -> None:
        if msg.epoch != self.epoch:
            return  # answers to the previous life of the robot
        try:  # anyone on the graph can publish here: nothing unvalidated reaches physics (or a physics thread)
            targets = validate_command(msg.position, msg.velocity, msg.kp, msg.kd, msg.torque_ff)
        except ValueError as exc:
            self.rejected_commands += 1
            self.log_limited(f"rejected {str(exc).split()[0]}", f"motor command for tick {msg.tick} rejected "
                                         f"({self.rejected_commands} so far): {exc}")
            return
        if not self.lockstep:
            with self.cond:
                if msg.epoch != self.epoch:
                    return
                if self.latest is None or msg.tick >= self.latest.tick:
                    self.latest = Answer(int(msg.tick), targets, bool(msg.gantry_engaged),
                                         bool(msg.gantry_lowering))
                if self.pacer is not None:
                    self.pacer.answer_arrived(time.monotonic())
                self.cond.notify_all()
            return
        if self.awaiting_tick is None or msg.tick != self.awaiting_tick:
            self.out_of_order += 1
            self.log_limited("order", f"lockstep: ignoring motor command for tick {msg.tick} "
                                      f"(waiting for {self.awaiting_tick})")
            return
        self.awaiting_tick = None
        self.applied_tick = int(msg.tick)
        self._apply(targets, msg.gantry_engaged, msg.gantry_lowering)
        self._advance_control_period()

    def on_sim_control(self, msg: SimControl) -> None:
        with self.cond:
            if msg.action == SimControl.ACTION_RESTART:
                self.get_logger().info("virtual restart requested: back to boot state on the gantry")
                self._restart()
                self.cond.notify_all()
            elif msg.action in (SimControl.ACTION_PUSH, SimControl.ACTION_INJECT_FAULT) and self.faulted:
                self._reject_sim_control("faulted", "sim control rejected: the physics is faulted until a restart")
            elif msg.action == SimControl.ACTION_PUSH:
                try:  # the HTTP API's bounds, applied to every push whoever publishes it
                    push = parse_push({"body": msg.body, "force": [float(f) for f in msg.force],
                                       "duration": float(msg.duration)})
                    self.core.apply_push(push.body, np.asarray(push.force, dtype=float), push.duration)
                    self.get_logger().info(f"push {list(push.force)} N on {push.body} for {push.duration} s")
                except HttpError as exc:
                    self._reject_sim_control("push", f"push rejected: {exc.message}")
                except (KeyError, ValueError) as exc:
                    self._reject_sim_control("push", f"push rejected: {exc}")
            elif msg.action == SimControl.ACTION_INJECT_FAULT:
                self.get_logger().warning("injecting a non-finite physics state on request")
                self.core.inject_non_finite()
            else:
                self._reject_sim_control("action", f"sim control rejected: unknown action {msg.action}")

    def _reject_sim_control(self, key: str, message: str) -> None:
        self.rejected_sim_control += 1
        self.log_limited(f"sim_control {key}", f"{message} ({self.rejected_sim_control} sim-control requests "
                                                f"rejected so far)")

    def _restart(self) -> None:
        self.time_offset += self.core.time + self.held_steps * self.core.dt
        self.epoch += 1
        self.core.reset()
        self.faulted = False
        self.held_steps = 0
        self.fault = None
        self.latest = None
        self.applied_tick = -1
        self._apply_damping()
        self._publish_step(control_tick=True)  # the new life's tick 0, for the edge to answer
        if self.lockstep:
            self.awaiting_tick = 0
            self.awaiting_since = time.monotonic()
        elif self.pacer is not None:
            self.pacer.reset_silence(time.monotonic())

    # -- stepping ------------------------------------------------------------------------------------------------
    def _advance_control_period(self) -> None:
        """Step physics for one control period, then publish the period's control tick, then every step's
        telemetry. The tick goes first because the edge and the policy runner wait for it and nothing else: in
        lockstep the ~25 telemetry publishes of a period then overlap their work instead of delaying it (each topic
        still carries every step, in order, with its own stamp)."""
        period: list[StepSnapshot] = []
        try:
            for i in range(self.decimation):
                self.core.step()
                period.append(self._snapshot(control_tick=(i == self.decimation - 1)))
        except PhysicsError as exc:
            for snap in period:  # the steps that completed before the fault are still reported
                self._publish_telemetry(snap)
            self._physics_fault(exc)
            return
        self.pub_tick.publish(self._fill_state(period[-1]))
        for snap in period:
            self._publish_telemetry(snap)
        if self.viewer is not None:
            self._sync_viewer()
        duration = self.p["duration"]
        if duration > 0 and self.sim_time() >= duration - 1e-9:
            self.get_logger().info(f"duration {duration} s reached at step {self.core.step_count}")
            if self.lockstep:
                wall = time.monotonic() - self.lockstep_wall_start
                sim = self.sim_time() - self.lockstep_sim_start
                self.get_logger().info(f"lockstep: simulated {sim:.3f} s in {wall:.3f} s of wall time "
                                       f"(real-time factor {sim / wall:.2f})")
            self.exit_code = 0
            return
        if self.lockstep:
            self.awaiting_tick = self.core.step_count // self.decimation
            self.awaiting_since = time.monotonic()

    def flush_publishers(self, timeout: float) -> None:
        """Before a run ends on its own: wait (bounded) until every reliable reader acknowledged what the plant
        published, so a recorder or client that is a little behind still gets the last steps of the run (a writer
        destroyed earlier takes its unacknowledged samples with it)."""
        deadline = time.monotonic() + timeout
        for pub in self.publishers:
            left = deadline - time.monotonic()
            if left <= 0 or not pub.wait_for_all_acked(Duration(nanoseconds=int(left * 1e9))):
                self.get_logger().warning(f"{pub.topic_name}: not every reader acknowledged the last messages "
                                          f"within {timeout:g} s")
                return

    def _physics_fault(self, exc: PhysicsError) -> None:
        self.faulted = True
        self.physics_faults += 1
        msg = PlantFault()
        to_stamp(self.sim_time(), msg.stamp)
        msg.step = self.core.step_count
        msg.kind = exc.kind
        msg.message = str(exc)
        msg.epoch = self.epoch
        self.fault = msg
        self.pub_fault.publish(msg)
        self.get_logger().error(f"physics fault at step {msg.step}: {exc.kind}: {exc}; the sensors hold their last "
                                "finite reading until a virtual restart")
        if self.lockstep:
            self.exit_code = EXIT_PHYSICS_FAULT

    def _publish_held_period(self) -> None:
        """Real time, physics faulted: one control period of the robot's clock without physics. The sensors hold
        their last finite reading (at rest: no velocities, no torque), the tick goes out first as always, so the
        edge keeps answering and reports the fault (DAMP with a critical alert) and the SDK stream goes on."""
        good = self.last_good
        if good is None:
            return
        zero = np.zeros_like(good.sensors.qd)
        sensors = dataclasses.replace(good.sensors, qd=zero, tau=zero, gyro=np.zeros(3))
        period = []
        for i in range(self.decimation):
            self.held_steps += 1
            period.append(StepSnapshot(sensors, good.truth, self.sim_time(), self.step_count,
                                       control_tick=(i == self.decimation - 1)))
        self.pub_tick.publish(self._fill_state(period[-1]))
        for snap in period:
            self._publish_telemetry(snap)

    def start_lockstep(self) -> None:
        self.lockstep_wall_start = time.monotonic()
        self.lockstep_sim_start = self.sim_time()
        self._publish_step(control_tick=True)
        self.awaiting_tick = 0
        self.awaiting_since = time.monotonic()

    def lockstep_stalled(self) -> bool:
        return (self.awaiting_tick is not None
                and time.monotonic() - self.awaiting_since > self.p["lockstep_timeout"])

    def participants_ready(self) -> bool:
        """The edge and the policy runner (by node name) and enough readers in all read the tick topic, and the
        edge's answer topic has a publisher. Participants join the tick topic only once their other inputs are
        matched (vasimov.ros.lockstep), so this is a readiness check, not only a count."""
        readers = {info.node_name for info in self.get_subscriptions_info_by_topic(topics.PLANT_TICK)}
        return (readers >= LOCKSTEP_NODES
                and self.pub_tick.get_subscription_count() >= self.p["lockstep_participants"]
                and self.count_publishers(topics.MOTOR_COMMAND) >= 1
                and writers_matched(self, [self.pub_state, self.pub_tick, self.pub_clock, self.pub_joints,
                                           self.pub_imu, self.pub_odom, self.pub_feet]))

    def start_realtime(self) -> None:
        """Create the pacer (before any answer can arrive) and publish tick 0."""
        with self.cond:
            self.pacer = Pacer(period_wall=self.control_period / self.p["realtime_factor"],
                               period_sim=self.control_period, answer_timeout=self.p["answer_timeout"],
                               now=time.monotonic())
            self._publish_step(control_tick=True)

    def realtime_loop(self, stop: threading.Event) -> None:
        self.guarded("physics thread", self._realtime_loop, stop)

    def _realtime_loop(self, stop: threading.Event) -> None:
        """Per control period: wait (bounded) for the answer to the current tick and for the wall clock, then step
        (with the answer; without it only after `answer_timeout` of silence, under the watchdog)."""
        pacer = self.pacer
        assert pacer is not None, "start_realtime() first"
        log_period = self.p["realtime_log_period"]
        next_log = time.monotonic() + log_period
        while not stop.is_set() and self.exit_code is None:
            with self.cond:
                if self.faulted:  # no physics until a virtual restart: the clock and the held sensors go on
                    left = pacer.release_at(True) - time.monotonic()
                    if left > 0:
                        self.cond.wait(left)
                    if self.faulted and not stop.is_set() and time.monotonic() >= pacer.release_at(True):
                        pacer.started(time.monotonic(), True)
                        self._publish_held_period()
                    continue
                while True:
                    tick = self.step_count // self.decimation  # re-read: a restart may happen while waiting
                    answered = self.latest is not None and self.latest.tick == tick
                    left = pacer.release_at(answered) - time.monotonic()
                    if left <= 0 or stop.is_set():
                        break
                    self.cond.wait(left)
                if stop.is_set():
                    return
                pacer.started(time.monotonic(), answered)
                if answered:
                    self.applied_tick = tick
                    self._apply(self.latest.targets, self.latest.gantry_engaged, self.latest.gantry_lowering)
                else:
                    self._watchdog(tick)
                try:
                    self._advance_control_period()
                except Exception:
                    if not self.context.ok():
                        return  # Ctrl-C shut the context down under us: a normal stop, not a failure
                    raise
            now = time.monotonic()
            if log_period > 0 and now >= next_log:
                next_log = now + log_period
                self.get_logger().info(f"real time, last {log_period:g} s: {pacer.take_window(now).describe()}; "
                                       f"{self.stale_count} stale-command damps, {self.rejected_commands} "
                                       f"rejected motor commands in all")

    def realtime_stats(self) -> dict[str, float]:
        w = self.pacer.summary(time.monotonic())
        p50, p99, mx = w.lateness_ms
        return {"ticks": w.ticks, "rtf": round(w.rtf, 4), "sim_s": round(w.sim_s, 3), "wall_s": round(w.wall_s, 3),
                "late_ticks": w.late_ticks, "unanswered": w.unanswered, "slipped_s": round(self.pacer.slipped_s, 3),
                "stale_commands": self.stale_count, "rejected_commands": self.rejected_commands,
                "rejected_sim_control": self.rejected_sim_control, "physics_faults": self.physics_faults,
                "p50_ms": p50, "p99_ms": p99, "max_ms": mx}

    def _watchdog(self, tick: int) -> None:
        """A tick stepped without its answer (a participant silent for answer_timeout): the last command while it
        is younger than command_timeout, then pure damping."""
        last = self.latest
        self.applied_tick = -1 if last is None else last.tick
        if last is None:
            self._apply_damping()
            return
        age = (tick - last.tick) * self.control_period
        if age > self.p["command_timeout"]:
            self.stale_count += 1
            self.applied_tick = -1
            self._apply_damping()
            self.log_limited("stale", f"motor command is {age:.3f} s old (limit {self.p['command_timeout']} s): "
                                      "damping all joints")
        else:
            self._apply(last.targets, last.gantry_engaged, last.gantry_lowering)

    # -- faults of the plant itself --------------------------------------------------------------------------------
    def guarded(self, where: str, fn: Callable[..., None], *args: object) -> None:
        """Run a long-lived loop so that an unexpected exception never leaves a silently dead thread: it becomes a
        typed fault (published, logged) and a non-zero exit, which stops the graph under `vasimov up`."""
        try:
            fn(*args)
        except Exception as exc:
            if not self.context.ok():
                return  # shutting down: rclpy raises from publishers whose context is gone
            self.internal_fault(where, exc)

    def internal_fault(self, where: str, exc: BaseException) -> None:
        text = f"{where}: {type(exc).__name__}: {exc}"
        self.get_logger().error(f"internal error in the {text}; stopping the plant\n"
                                f"{''.join(traceback.format_exception(exc)).rstrip()}")
        try:
            msg = PlantFault()
            to_stamp(self.sim_time(), msg.stamp)
            msg.step = self.core.step_count
            msg.kind = INTERNAL_FAULT_KIND
            msg.message = text
            self.pub_fault.publish(msg)
        except Exception as pub_exc:  # the exit code still reports the fault
            self.get_logger().error(f"could not publish the internal fault: {pub_exc}")
        self.exit_code = EXIT_INTERNAL_FAULT

    # -- viewer --------------------------------------------------------------------------------------------------
    def _open_viewer(self):
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            self.get_logger().error("viewer requested but there is no display (DISPLAY/WAYLAND_DISPLAY unset); "
                                    "continuing without it")
            return None
        try:
            import mujoco.viewer

            return mujoco.viewer.launch_passive(self.core.model, self.core.data)
        except Exception as exc:  # the viewer is a convenience: never take the plant down with it
            self.get_logger().error(f"could not open the MuJoCo viewer: {exc}; continuing without it")
            return None

    def _sync_viewer(self) -> None:
        if self.viewer.is_running():
            self.viewer.sync()


def main(args: list[str] | None = None) -> int:
    with ros_session(args) as stop:  # Ctrl-C/SIGTERM (any number) set `stop`, which also ends the physics thread
        node = None
        code = 0
        try:
            try:
                node = PlantNode()
            except ValueError as exc:
                print(f"plant: configuration error: {exc}", file=sys.stderr)
                return 2
            executor = SingleThreadedExecutor()
            executor.add_node(node)
            node.guarded("executor thread", _spin, node, executor, stop)
            code = node.exit_code or 0
            if node.exit_code is not None:
                node.flush_publishers(timeout=5.0)
        except ExternalShutdownException:
            code = 0
        finally:
            stop.set()
            if node is not None:
                node.destroy_node()
    return code


def _spin(node: PlantNode, executor: SingleThreadedExecutor, stop: threading.Event) -> None:
    if node.lockstep:
        while not stop.is_set() and not node.participants_ready():
            executor.spin_once(timeout_sec=0.05)
        node.get_logger().info("lockstep: all participants matched; starting")
        node.start_lockstep()
        while not stop.is_set() and node.exit_code is None:
            executor.spin_once(timeout_sec=0.5)
            if node.lockstep_stalled():
                node.get_logger().error(
                    f"lockstep: no motor command for tick {node.awaiting_tick} within "
                    f"{node.p['lockstep_timeout']} s; a participant died or stalled")
                node.exit_code = EXIT_LOCKSTEP_STALL
        return
    node.start_realtime()
    loop = threading.Thread(target=node.realtime_loop, args=(stop,), name="physics", daemon=True)
    loop.start()
    try:
        while not stop.is_set() and node.exit_code is None:
            executor.spin_once(timeout_sec=0.1)
    finally:
        stop.set()
        with node.cond:
            node.cond.notify_all()
        loop.join(timeout=5.0)
        stats = node.realtime_stats()
        print(f"plant: realtime stats: {json.dumps(stats)}", flush=True)
        print(f"{SUMMARY_TAG}real time: real-time factor {stats['rtf']:.3f} ({stats['sim_s']:.1f} s simulated in "
              f"{stats['wall_s']:.1f} s), control-tick lateness p50 {stats['p50_ms']:.2f} ms p99 "
              f"{stats['p99_ms']:.2f} ms max {stats['max_ms']:.2f} ms, {stats['late_ticks']} ticks late > 1 period, "
              f"{stats['unanswered']} without answer, {stats['stale_commands']} stale-command damps, "
              f"{stats['rejected_commands']} motor commands rejected", flush=True)


if __name__ == "__main__":
    sys.exit(main())
