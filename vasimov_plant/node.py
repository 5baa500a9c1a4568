"""The plant node: the only process that owns MuJoCo state. This file is the wiring and the stepping.

It steps physics, applies the latest motor command through the motor model, and publishes what the robot's
sensors read (every step) plus ground truth and `/clock`. Two time modes, each with its own driver:

* real time (`vasimov_plant.realtime`): lockstep held back to the wall clock by a physics thread and the pacer
  (`vasimov_plant.pacing`); a machine that cannot keep up slows simulated time instead of stepping a tick without
  its answer; a silent participant (`answer_timeout`) lets ticks pass under a command-age watchdog;
* lockstep (`vasimov_plant.lockstep`): once the start gate (`vasimov.lockstep_gate`) saw every declared participant
  ready, after publishing control tick k the plant waits until the motor command answering tick k arrives, then
  applies it for the next `control_decimation` physics steps. A command published in answer to tick k therefore
  takes effect at physics step k*decimation and stays until step (k+1)*decimation; nothing depends on wall time.

Message mapping is in `vasimov_plant.telemetry`, the viewer in `vasimov_plant.viewer`.

Why one file past 400 lines: the plant's ROS wiring (parameters, topics, services) and the stepping the time drivers
call (commands, restart, faults, disturbances); telemetry, the drivers and the viewer are their own modules.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from rclpy.duration import Duration
from rclpy.executors import ExternalShutdownException
from vasimov_msgs.msg import MotorCommand, PlantFault, SimControl

from vasimov import joints
from vasimov.boot_states import BOOT_NAMES, BootError, BootState, parse_boot
from vasimov.control_rate import DAMP_KD
from vasimov.faults import FaultError, FaultRequest, affected_joints, from_fields
from vasimov.graph_status import announce_started
from vasimov.realism import describe, parse_realism
from vasimov.ros import node_names, qos, topics
from vasimov.ros.lean_node import LeanNode
from vasimov.ros.params import COMMON, ParamSpec, declare
from vasimov.ros.ratelog import RateLimitedLog
from vasimov.ros.spin import make_executor, ros_session
from vasimov.scenes import parse_scene
from vasimov_plant.boot_pose import boot
from vasimov_plant.disturbances import Disturbances
from vasimov_plant.lockstep import EXIT_LOCKSTEP_STALL, LockstepDriver
from vasimov_plant.physics import GroundTruth, MotorTargets, PhysicsError, PlantCore, validate_command
from vasimov_plant.realtime import RealtimeDriver
from vasimov_plant.telemetry import PlantPublishers, StepSnapshot
from vasimov_plant.viewer import Viewer

PARAMS: tuple[ParamSpec, ...] = (
    *COMMON,
    ParamSpec("duration", 0.0, "Simulated seconds to run before exiting 0 (0 = until stopped).", min=0.0, max=1e7),
    ParamSpec("seed", 0, "Seed for every random draw of the plant.", min=0, max=2**31 - 1),
    ParamSpec("viewer", False, "Open MuJoCo's passive viewer (needs a display)."),
    ParamSpec("scene", "flat", "The world around the robot, BASE[+FRICTION] (vasimov.scenes; `vasimov scenes` lists "
              "them): flat, slopes, stairs, obstacles, rough ground; +wet / +ice override the floor friction."),
    ParamSpec("realism", "none", "Sensor and actuator realism, PROFILE[,KEY=VALUE...] (vasimov.realism): none "
              "(ideal sensors, the fact sheet's robot), typical, training; drawn from `seed`."),
    ParamSpec("boot", "gantry", f"Boot state of the first life (vasimov.boot_states): {', '.join(BOOT_NAMES)}; "
              "POST /api/sim/restart {\"boot\": ...} picks it for a later one."),
    ParamSpec("gantry_height", 0.639, "Pelvis height the virtual gantry holds at boot (m).", min=0.4, max=1.5),
    ParamSpec("command_timeout", 0.1, "Real time only, once a participant is silent (answer_timeout): the last "
              "motor command is used while younger than this (sim s), then replaced by damping.", min=0.01, max=10.0),
    ParamSpec("answer_timeout", 1.0, "Real time only: wall seconds without any motor command after which the plant "
              "stops waiting for each tick's answer and steps on at wall pace (a participant is gone).",
              min=0.05, max=10.0),
    ParamSpec("realtime_log_period", 10.0, "Real time only: wall seconds between log lines with the achieved "
              "real-time factor, tick lateness and watchdog damps (0 = off).", min=0.0, max=3600.0),
    ParamSpec("realtime_report_period", 1.0, "Real time only: wall seconds between real-time conformance reports on "
              "/vasimov/realtime (control period and lateness p50/p99/max, real-time factor; 0 = off).",
              min=0.0, max=3600.0),
    ParamSpec("realtime_warn_rtf", 0.95, "Real time only: the plant warns once when a report window's real-time "
              "factor falls below this (the machine cannot keep real time).", min=0.0, max=1.0),
    ParamSpec("watchdog_kd", DAMP_KD, "Damping gain applied to every joint while the motor command is stale.",
              min=0.0, max=50.0),
    ParamSpec("standard_topics_decimation", 1, "Publish /joint_states, /imu and ground truth every N physics "
              "steps.", min=1, max=1000),
    ParamSpec("clock_decimation", 1, "Publish /clock every N physics steps (on the steps where step % N == 0, so "
              "N = control_decimation is once per control period, at its tick). Every node with use_sim_time reads "
              "each /clock message: at 1 that is three readers x 200 Hz, the graph's most numerous hop, for clocks "
              "nothing in the graph reads finer than a control period.", min=1, max=1000),
    ParamSpec("realtime_factor", 1.0, "Real time only: simulated seconds per wall second.", min=0.01, max=100.0),
    ParamSpec("lockstep_timeout", 20.0, "Lockstep only: wall seconds to wait for a participant's answer before "
              "declaring it dead and exiting non-zero.", min=0.5, max=3600.0),
    ParamSpec("lockstep_participants", "edge,policy", "Lockstep only: node names (comma-separated) that take part; "
              "the first tick goes out once each announced ready (vasimov.lockstep_gate). Reading the tick topic "
              "makes nobody a participant."),
    ParamSpec("camera_lockstep", False, "Lockstep only: the camera (node name `camera`) takes part: each control "
              "period also waits until the camera took its state, so every frame is rendered at its simulated time "
              "and a seed gives the same images (slower: rendering is in the loop).  `vasimov up --lockstep "
              "--record` turns it on."),
    ParamSpec("lockstep_join_timeout", 120.0, "Lockstep only: wall seconds to wait for every participant to be "
              "ready before exiting non-zero (0 = wait forever).", min=0.0, max=3600.0),
    ParamSpec("speed_torque_envelope", False, "Limit motor torque linearly to zero at the joint's no-load speed "
              "(assumed envelope)."),
)

EXIT_PHYSICS_FAULT = 3
EXIT_INTERNAL_FAULT = 5
INTERNAL_FAULT_KIND = "internal_error"  # PlantFault.kind of an unexpected exception in one of the plant's threads
__all__ = ["EXIT_INTERNAL_FAULT", "EXIT_LOCKSTEP_STALL", "EXIT_PHYSICS_FAULT", "INTERNAL_FAULT_KIND", "PARAMS",
           "PlantNode", "main"]


@dataclass(frozen=True)
class Answer:
    """A validated motor command and the control tick it answers."""

    tick: int
    targets: MotorTargets
    gantry_engaged: bool
    gantry_lowering: bool


class PlantNode(LeanNode):
    def __init__(self, **node_options: Any) -> None:
        """``node_options``: rclpy Node keywords (cli_args, ...), for a composed process (vasimov_tools.compose)."""
        super().__init__(node_names.PLANT, **node_options)
        self.p = declare(self, PARAMS)
        self.decimation = int(self.p["control_decimation"])
        scene = parse_scene(self.p["scene"], seed=int(self.p["seed"]))  # SceneError: a configuration error
        realism = parse_realism(self.p["realism"])  # RealismError: a configuration error
        self.core = PlantCore(gantry_height=self.p["gantry_height"], seed=self.p["seed"],
                              speed_torque_envelope=self.p["speed_torque_envelope"], scene=scene, realism=realism)
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
        self.last_good_truth: GroundTruth | None = None  # the newest ground truth before a physics fault
        self.fault: PlantFault | None = None  # this life's physics fault
        self.physics_faults = 0
        self.cond = threading.Condition(self.lock)  # the physics thread waits on it for tick k's answer
        self.latest: Answer | None = None  # real time: the newest valid answer of this life
        self.applied_tick = -1  # the tick whose answer drives the current control period (PlantState.command_tick)
        self.out_of_order = 0
        self.rejected_commands = 0
        self.rejected_sim_control = 0

        self.pubs = PlantPublishers(self, self.decimation, ideal_sensors=self.core.realism is not None,
                                    clock_decimation=int(self.p["clock_decimation"]))
        self.disturb = Disturbances(self)
        self.boot_state = parse_boot(self.p["boot"])  # BootError (a ValueError): a configuration error
        self.pubs.publish_scene(scene, self.core.model)
        if self.core.realism is not None:
            self.get_logger().info(f"realism {self.p['realism']!r} (seed {self.p['seed']}): "
                                   f"{describe(realism, self.p['realism'])['params']}; drawn actuation delay "
                                   f"{self.core.realism.delay_steps} physics steps; ideal sensors on "
                                   f"{topics.JOINT_STATES_TRUTH} and {topics.IMU_TRUTH}")
        self.create_subscription(MotorCommand, topics.MOTOR_COMMAND, self.on_motor_command, qos.LOOP)
        self.create_subscription(SimControl, topics.SIM_CONTROL, self.on_sim_control, qos.COMMANDS)
        # one driver per time mode (a bad participant list is a configuration error, raised here)
        self.lockstep_driver = LockstepDriver(self) if self.lockstep else None
        self.realtime = None if self.lockstep else RealtimeDriver(self)

        self._boot()
        self.apply_damping()
        self.viewer = Viewer(self.core.model, self.core.data, self.get_logger().error) if self.p["viewer"] else None
        self.get_logger().info(
            f"plant ready: scene {scene.name}, boot {self.boot_state.label}, dt={self.core.dt} s, control every "
            f"{self.decimation} steps, "
            f"{'lockstep' if self.lockstep else 'real time x' + str(self.p['realtime_factor'])}")

    # -- time and steps ------------------------------------------------------------------------------------------
    def sim_time(self) -> float:
        return self.time_offset + self.core.time + self.held_steps * self.core.dt

    @property
    def step_count(self) -> int:
        """Steps of this life: physics steps, then (after a physics fault) steps published without physics."""
        return self.core.step_count + self.held_steps

    def _snapshot(self, control_tick: bool) -> StepSnapshot:
        step = self.core.step_count
        standard = step % self.p["standard_topics_decimation"] == 0
        ideal = self.core.ideal_sensors() if standard and self.core.realism is not None else None
        truth = self.core.truth() if standard and self.pubs.wants_truth() else None
        return StepSnapshot(self.core.sensors(), truth, self.sim_time(), self.step_count, control_tick,
                            self.applied_tick, ideal, standard)

    def _publish_telemetry(self, snap: StepSnapshot) -> None:
        if not self.faulted:
            self.last_good = snap
        self.pubs.publish_step(snap, self.epoch)

    def publish_current_step(self, control_tick: bool) -> None:
        """Publish the current step at once (start, restart): its tick first, if it is one."""
        snap = self._snapshot(control_tick)
        if control_tick:
            self.pubs.publish_tick(snap, self.epoch)
        self._publish_telemetry(snap)
        self.pubs.publish_samples([snap], self.epoch, self._truth(snap))

    def _truth(self, last: StepSnapshot) -> GroundTruth | None:
        """The ground truth of a period's last step for its PlantSamples (computed if that step had none); kept as
        the last good one, which a faulted plant's held periods report."""
        if last.truth is not None or self.faulted or self.pubs.samples.get_subscription_count() == 0:
            truth = last.truth
        else:
            truth = self.core.truth()
        if truth is not None and not self.faulted:
            self.last_good_truth = truth
        return truth

    def await_tick(self, tick: int) -> None:
        """Lockstep: physics waits for the answer to `tick` (and, with camera_lockstep, for the camera to take the
        state just published; the stall check times from now)."""
        self.lockstep_driver.hold.wait(tick, self.epoch, self.step_count, time.monotonic())

    def advance_when_released(self) -> None:
        """Lockstep: step the next control period once every answer to the last one is in."""
        if self.exit_code is None and self.lockstep_driver.hold.release():
            self.advance_control_period()

    # -- commands ------------------------------------------------------------------------------------------------
    def apply_answer(self, answer: Answer) -> None:
        self.applied_tick = answer.tick
        self._apply(answer.targets, answer.gantry_engaged, answer.gantry_lowering)

    def _apply(self, targets: MotorTargets, gantry_engaged: bool, gantry_lowering: bool) -> None:
        t = targets
        self.core.set_command(t.position, t.velocity, t.kp, t.kd, t.torque_ff)
        if self.core.gantry_engaged or not gantry_engaged:  # a hook once off comes back only on restart
            self.core.set_gantry(gantry_engaged, gantry_lowering)

    def apply_damping(self) -> None:
        n = joints.NUM_JOINTS
        zeros = np.zeros(n)
        self.applied_tick = -1
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
                if self.realtime.pacer is not None:
                    self.realtime.pacer.answer_arrived(time.monotonic())
                self.cond.notify_all()
            return
        hold = self.lockstep_driver.hold
        if not hold.answer(int(msg.tick)):
            self.out_of_order += 1
            self.log_limited("order", f"lockstep: ignoring motor command for tick {msg.tick} "
                                      f"(waiting for {hold.tick})")
            return
        self.applied_tick = int(msg.tick)
        self._apply(targets, msg.gantry_engaged, msg.gantry_lowering)
        self.advance_when_released()

    def on_sim_control(self, msg: SimControl) -> None:
        with self.cond:
            if msg.action == SimControl.ACTION_RESTART:
                try:
                    state = parse_boot(msg.boot)
                except BootError as exc:
                    self.disturb.reject("restart", "sim_control", str(exc))
                    return
                self.restart(state, "sim_control")
            elif msg.action in (SimControl.ACTION_PUSH, SimControl.ACTION_FORCE):
                # the one rule set (vasimov.sim_control, the HTTP API's too), applied whoever publishes it
                self.disturb.on_message(msg)
            elif msg.action == SimControl.ACTION_INJECT_FAULT and self.faulted:
                self._reject_sim_control("faulted", "sim control rejected: the physics is faulted until a restart")
            elif msg.action == SimControl.ACTION_INJECT_FAULT:
                try:  # the one set of fault rules (the HTTP API's too)
                    self._inject(from_fields(msg.fault, msg.joint, float(msg.value)))
                except FaultError as exc:
                    self._reject_sim_control("inject", f"fault injection rejected: {exc}")
            else:
                self._reject_sim_control("action", f"sim control rejected: unknown action {msg.action}")

    def _inject(self, req: FaultRequest) -> None:
        """The plant's part of an injected fault (``vasimov.faults``): the physics or a sensor; the edge does the
        firmware's part from the same message."""
        if not req.spec.plant:
            return
        joint = req.joint
        what = f"{req.name}" + ("" if joint is None else f" on {joints.JOINTS[joint].firmware_name}")
        self.get_logger().warning(f"injecting {what} on request")
        if req.name == "non_finite":
            self.core.inject_non_finite()
        elif req.name == "imu_failure":
            self.core.freeze_imu()
        elif req.name == "motor_comm_loss" and joint is not None:
            self.core.lose_motors(affected_joints(joint))
        elif req.name == "joint_out_of_range" and joint is not None:
            # the encoder reads req.value past the upper limit, from the joint's position now
            q = float(self.core.sensors().q[joint])
            self.core.offset_encoder(joint, float(joints.RANGE_HI[joint]) + req.value - q)

    def _reject_sim_control(self, key: str, message: str) -> None:
        self.rejected_sim_control += 1
        self.log_limited(f"sim_control {key}", f"{message} ({self.rejected_sim_control} sim-control requests "
                                                f"rejected so far)")

    def _boot(self) -> None:
        """Reset the core into this life's boot state (``vasimov_plant.boot_pose``); PlantState carries it."""
        self.pubs.boot_state = int(self.boot_state)
        try:
            boot(self.core, self.boot_state)
        except PhysicsError as exc:  # the pose did not settle (a scene it cannot lie or stand on): not silent
            self.get_logger().error(f"boot state {self.boot_state.label} did not settle ({exc}); the first step "
                                    "reports the physics fault")

    def restart(self, state: BootState, source: str) -> None:
        """A virtual restart into ``state`` (node.cond held); told on the event topic."""
        self.get_logger().info(f"virtual restart requested ({source}): boot state {state.label}")
        self.boot_state = state
        self._restart()
        self.disturb.restarted(state.label, source)
        self.cond.notify_all()

    def _restart(self) -> None:
        self.time_offset += self.core.time + self.held_steps * self.core.dt
        self.epoch += 1
        self._boot()
        self.faulted = False
        self.held_steps = 0
        self.fault = None
        self.latest = None
        self.apply_damping()
        self.publish_current_step(control_tick=True)  # the new life's tick 0, for the edge to answer
        if self.lockstep:
            self.await_tick(0)
        elif self.realtime.pacer is not None:
            self.realtime.pacer.reset_silence(time.monotonic())

    # -- stepping ------------------------------------------------------------------------------------------------
    def advance_control_period(self) -> None:
        """Step physics for one control period, then publish the period's control tick, then every step's
        telemetry. The tick goes first because the edge and the policy runner wait for it and nothing else: in
        lockstep the ~25 telemetry publishes of a period then overlap their work instead of delaying it (each topic
        still carries every step, in order, with its own stamp)."""
        period: list[StepSnapshot] = []
        if self.disturb.queue:
            self.disturb.apply_due(self.core.step_count // self.decimation)
        try:
            for i in range(self.decimation):
                self.core.step()
                period.append(self._snapshot(control_tick=(i == self.decimation - 1)))
        except PhysicsError as exc:
            for snap in period:  # the steps that completed before the fault are still reported
                self._publish_telemetry(snap)
            self.pubs.publish_samples(period, self.epoch, None)
            self._physics_fault(exc)
            return
        self.pubs.publish_tick(period[-1], self.epoch)
        for snap in period:
            self._publish_telemetry(snap)
        self.pubs.publish_samples(period, self.epoch, self._truth(period[-1]))
        if self.viewer is not None:
            self.viewer.sync()
        duration = self.p["duration"]
        if duration > 0 and self.sim_time() >= duration - 1e-9:
            self.get_logger().info(f"duration {duration} s reached at step {self.core.step_count}")
            if self.lockstep:
                self.lockstep_driver.log_speed()
            self.exit_code = 0
            return
        if self.lockstep:
            self.await_tick(self.core.step_count // self.decimation)

    def drive(self, executor: Any, stop: threading.Event, flush_timeout: float) -> int:
        """Run the lockstep or real-time driver on ``executor`` until the run ends or ``stop``; the exit code. One
        place for this process's main loop and the composed process's (vasimov_tools.compose)."""
        driver = self.lockstep_driver if self.lockstep else self.realtime
        self.guarded("executor thread", driver.run, executor, stop)
        if self.exit_code is not None:
            self.flush_publishers(timeout=flush_timeout)
        return self.exit_code or 0

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
        msg = self.pubs.publish_fault(self.sim_time(), self.core.step_count, exc.kind, str(exc), self.epoch)
        self.fault = msg
        self.get_logger().error(f"physics fault at step {msg.step}: {exc.kind}: {exc}; the sensors hold their last "
                                "finite reading until a virtual restart")
        if self.lockstep:
            self.exit_code = EXIT_PHYSICS_FAULT

    def publish_held_period(self) -> None:
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
            period.append(StepSnapshot(sensors, self.last_good_truth, self.sim_time(), self.step_count,
                                       control_tick=(i == self.decimation - 1), command_tick=self.applied_tick,
                                       standard=self.step_count % self.p["standard_topics_decimation"] == 0))
        self.pubs.publish_tick(period[-1], self.epoch)
        for snap in period:
            self._publish_telemetry(snap)
        self.pubs.publish_samples(period, self.epoch, self.last_good_truth)

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
            self.pubs.publish_fault(self.sim_time(), self.core.step_count, INTERNAL_FAULT_KIND, text)
        except Exception as pub_exc:  # the exit code still reports the fault
            self.get_logger().error(f"could not publish the internal fault: {pub_exc}")
        self.exit_code = EXIT_INTERNAL_FAULT


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
            announce_started()
            executor = make_executor(node)
            executor.add_node(node)
            code = node.drive(executor, stop, flush_timeout=5.0)
        except ExternalShutdownException:
            code = 0
        finally:
            stop.set()
            if node is not None:
                node.destroy_node()
    return code


if __name__ == "__main__":
    sys.exit(main())
