"""The edge node: Asimov Edge + firmware. Converts messages to calls of the pure `Firmware` core and back.

Per control tick k it needs the plant's tick-k sensor state and the policy's tick-k targets (lockstep waits for
both; real time waits for the policy's answer too, decides tick k with the latest answer once tick k+1 arrives, and
does not wait before the policy runner's first answer). Commands from every source go through the
arbiter, then the firmware; rejections are counted and logged (rate-limited) and never change state.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np
from geometry_msgs.msg import Twist
from rclpy.clock import Clock, ClockType
from vasimov_msgs.msg import Alert, FirmwareState, MotorCommand, PlantFault, PlantState, PolicyStep, SimControl
from vasimov_msgs.msg import RobotCommand as RobotCommandMsg

from vasimov import joints
from vasimov.boot_states import DEFAULT_BOOT, BootState, parse_boot
from vasimov.command_rules import validated
from vasimov.commands import CommandSource, Rejection, RobotCommand, VelocityCommand
from vasimov.faults import FaultError, from_fields
from vasimov.frames import projected_gravity
from vasimov.ros import node_names, qos, topics
from vasimov.ros.command_msgs import from_msg
from vasimov.ros.lean_node import LeanNode
from vasimov.ros.lockstep import join_lockstep
from vasimov.ros.params import COMMON, ParamSpec, declare
from vasimov.ros.ratelog import RateLimitedLog
from vasimov.ros.spin import run_node
from vasimov.tick_sync import TickSync
from vasimov_edge import command_script
from vasimov_edge.arbiter import Arbiter
from vasimov_edge.firmware import Firmware, FirmwareInputs, FirmwareOutput, FirmwareParams

PARAMS: tuple[ParamSpec, ...] = (
    *COMMON,
    ParamSpec("command_script", "", "YAML file of timed commands submitted at their tick (deterministic source)."),
    ParamSpec("stand_ramp_duration", 2.0, "Seconds STAND takes to blend to the stand pose.", min=0.1, max=10.0),
    ParamSpec("thermal_model", True, "Compute motor temperatures from simulated effort (assumed parameters); off = "
              "temperatures are not reported and no thermal alert fires."),
    ParamSpec("arbiter_hold", 1.0, "Seconds a higher-priority command source keeps control after its last command.",
              min=0.0, max=60.0),
    ParamSpec("battery_model", True, "Model the battery pack (assumed parameters): the battery block of the state "
              "and the BMS alerts; off = no battery is reported."),
    ParamSpec("report_fault_damp", False, "Report a latched fault as mode FAULT_DAMP (5) instead of DAMP (0); either "
              "way error_flags and the alert are set and the latch holds until a restart."),
    ParamSpec("recovery", False, "Twin-only, opt-in: a fall does not latch; the robot protects itself, gets up and "
              "resumes (docs/recovery.md). false = the hardware fall latch."),
)


#: Lockstep: how often the edge checks whether the policy runner is stuck waiting for its firmware state, and after
#: how long without an answer it re-sends that state (``EdgeNode._resend_if_policy_waits``). A lockstep tick takes
#: milliseconds; the plant gives up after 20 s.
RESEND_CHECK_S = 0.25
RESEND_AFTER_S = 0.5


class EdgeNode(LeanNode):
    def __init__(self, **node_options: Any) -> None:
        """``node_options``: rclpy Node keywords (cli_args, ...), for a composed process (vasimov_tools.compose)."""
        super().__init__(node_names.EDGE, **node_options)
        self.p = declare(self, PARAMS)
        self.lockstep = bool(self.p["lockstep"])
        self.control_period = self.p["physics_dt"] * self.p["control_decimation"]
        self.firmware = Firmware(FirmwareParams(
            stand_ramp_s=self.p["stand_ramp_duration"],
            thermal_model=self.p["thermal_model"],
            report_fault_damp=self.p["report_fault_damp"],
            battery_model=self.p["battery_model"],
            recovery=bool(self.p["recovery"]),
        ))
        self.arbiter = Arbiter(hold_s=self.p["arbiter_hold"])
        self.script = command_script.ScriptPlayer(
            command_script.load(self.p["command_script"]) if self.p["command_script"] else [])
        self.sync = TickSync(("state", "policy"))
        self.log_limited = RateLimitedLog(self.get_logger().warning)
        self.epoch = 0
        self.last_tick = -1
        self.t_fw = 0.0
        self.last_policy: PolicyStep | None = None
        self.policy_late = 0
        self.last_mode: int | None = None
        self.last_decided_at = time.monotonic()  # wall time of the last tick decided (lockstep's re-send check)
        self.firmware_state_resent = 0

        self.pending_fault_epoch: int | None = None  # a plant fault of a life this node has not seen a tick of yet
        self.pub_cmd = self.create_publisher(MotorCommand, topics.MOTOR_COMMAND, qos.LOOP)
        self.pub_state = self.create_publisher(FirmwareState, topics.FIRMWARE_STATE, qos.LOOP)
        self.pub_sim = self.create_publisher(SimControl, topics.SIM_CONTROL, qos.COMMANDS)  # script disturbances
        self.boot_state: BootState = DEFAULT_BOOT
        # real time: the newest few ticks/answers only, so a stalled edge resumes at the present, not seconds behind
        loop_in = qos.LOOP if self.lockstep else qos.LOOP_NEWEST
        sub_policy = self.create_subscription(PolicyStep, topics.POLICY_STEP, self.on_policy, loop_in)
        self.create_subscription(RobotCommandMsg, topics.ROBOT_COMMAND, self.on_command, qos.COMMANDS)
        self.create_subscription(Twist, topics.CMD_VEL, self.on_cmd_vel, qos.COMMANDS)
        self.create_subscription(PlantFault, topics.PLANT_FAULT, self.on_plant_fault, qos.LATCHED)
        self.create_subscription(SimControl, topics.SIM_CONTROL, self.on_sim_control, qos.COMMANDS)
        self.m_cmd = MotorCommand()
        self.m_state = FirmwareState()
        subscribe_tick = lambda: self.create_subscription(PlantState, topics.PLANT_TICK, self.on_tick, loop_in)  # noqa: E731
        if self.lockstep:
            join_lockstep(self, [sub_policy], subscribe_tick, outputs=[self.pub_cmd, self.pub_state])
            self.create_timer(RESEND_CHECK_S, self._resend_if_policy_waits,
                              clock=Clock(clock_type=ClockType.STEADY_TIME))
        else:
            subscribe_tick()
        self.get_logger().info("edge ready: firmware boots in DAMP on the virtual gantry")

    # -- inputs --------------------------------------------------------------------------------------------------
    def on_tick(self, msg: PlantState) -> None:
        if msg.epoch != self.epoch or msg.boot_state != self.boot_state:  # a new life (the first may boot off-gantry)
            self._restart(msg.epoch, msg.boot_state)
        self.sync.put("state", msg.epoch, msg.tick, msg)
        if not self.lockstep and self.last_policy is None and msg.tick > self.last_tick:
            # real time, no policy answer yet in this life (the runner still starting): nothing to wait for. The
            # plant waits for this tick's answer; the firmware uses policy targets only in MOVE, long after this.
            self._decide(msg, None)
            return
        self._try(msg.tick)
        if not self.lockstep:
            # real time: a tick whose policy answer never came is decided with the latest answer
            for k in range(self.last_tick + 1, msg.tick):
                st = self.sync.get("state", k)
                if st is not None:
                    self.policy_late += 1
                    self._decide(st, self.last_policy)

    def on_policy(self, msg: PolicyStep) -> None:
        if msg.epoch != self.epoch:
            return
        self.last_policy = msg
        self.sync.put("policy", msg.epoch, msg.tick, msg)
        self._try(msg.tick)

    def _resend_if_policy_waits(self) -> None:
        """Lockstep: re-send the last firmware state while the policy runner has not answered the next tick for
        ``RESEND_AFTER_S`` of wall time. Why: the runner answers tick k only with the firmware's state after tick
        k-1, and a volatile DDS writer delivers only to readers it has matched *itself*; each side of a match is
        discovered on its own, so at start-up the runner's reader can see this writer (and the runner join) while this
        writer has not yet matched that reader. The first firmware state then reaches nobody, and the loop waited
        until the plant's 20 s stall check ended the run (CI, 2026-12-06: "no motor command for tick 1"). The same
        message again changes nothing in the run (the runner answers from its contents, not its arrival time), so
        lockstep stays bit-identical; other readers of the topic see that one state twice."""
        k = self.last_tick + 1
        if self.last_tick < 0 or self.sync.get("state", k) is None or self.sync.get("policy", k) is not None:
            return
        waited = time.monotonic() - self.last_decided_at
        if waited < RESEND_AFTER_S:
            return
        self.pub_state.publish(self.m_state)
        self.firmware_state_resent += 1
        self.log_limited("resend", f"lockstep: no policy answer for tick {k} {waited:.1f} s after firmware state "
                                   f"{self.last_tick} went out; re-sent it ({self.firmware_state_resent} so far)")

    def _try(self, tick: int) -> None:
        if tick <= self.last_tick:
            return
        slot = self.sync.take(tick)
        if slot is not None:
            self._decide(slot["state"], slot["policy"])

    def on_plant_fault(self, msg: PlantFault) -> None:
        """The plant's physics diverged (or it injected a fault): the sensors hold their last reading, so the
        firmware latches DAMP with a critical sensor alert, as the robot does when a sensor stops reporting."""
        if msg.kind == "internal_error":
            return  # the plant is exiting; the graph stops
        if msg.epoch > self.epoch:
            self.pending_fault_epoch = int(msg.epoch)
            return
        if msg.epoch == self.epoch:
            self._latch_plant_fault(msg.kind)

    def on_sim_control(self, msg: SimControl) -> None:
        """The firmware's part of an injected fault (``vasimov.faults``): what it detects of hardware the twin has no
        model of (an IMU timeout, a motor silent on the CAN bus), and the heat or charge of its own models. The plant
        does the physical part from the same message; each validates it with the same rules."""
        if msg.action != SimControl.ACTION_INJECT_FAULT:
            return
        try:
            req = from_fields(msg.fault, msg.joint, float(msg.value))
        except FaultError as exc:
            self.log_limited("inject", f"fault injection rejected: {exc}")
            return
        if req.spec.edge:
            self.firmware.inject(req)
            self.get_logger().warning(f"fault injected: {req.name}"
                                      + ("" if req.joint is None else f" on {joints.JOINTS[req.joint].firmware_name}"))

    def _latch_plant_fault(self, kind: str) -> None:
        self.firmware.latch_sensor_fault()
        self.get_logger().error(f"plant fault ({kind}): the sensors stopped reporting; DAMP latched with IMU_FAULT "
                                "until a restart")

    def on_command(self, msg: RobotCommandMsg) -> None:
        cmd = from_msg(msg)
        self._submit(cmd)

    def on_cmd_vel(self, msg: Twist) -> None:
        self._submit(validated(VelocityCommand(msg.linear.x, msg.linear.y, msg.angular.z,
                                               source=CommandSource.FOXGLOVE)))

    def _submit(self, cmd: RobotCommand | Rejection) -> None:
        if isinstance(cmd, Rejection):
            self.firmware.count_rejection(cmd)
            self.log_limited(cmd.reason, f"command rejected: {cmd.reason} {cmd.detail}")
            return
        rejection = self.arbiter.admit(cmd, self.t_fw)
        if rejection is None:
            rejection = self.firmware.submit(cmd, self.t_fw, None if self.lockstep else time.monotonic())
            for note in self.firmware.last_gain_notes:
                if note in ("trajectory_gains_substituted", "trajectory_gains_non_finite"):
                    self.log_limited(note, f"{type(cmd).__name__} from {cmd.source.name} applied with the gain table "
                                           f"for an unusable kp/kd array ({note})")
        else:
            self.firmware.count_rejection(rejection)
        if rejection is not None:
            self.log_limited(rejection.reason, f"{type(cmd).__name__} from {cmd.source.name} rejected: "
                                               f"{rejection.reason} {rejection.detail}")

    def _restart(self, epoch: int, boot_state: int = 0) -> None:
        try:
            self.boot_state = parse_boot(int(boot_state))
        except ValueError:
            self.log_limited("boot", f"plant booted into unknown boot state {boot_state}; firmware boots as on the "
                                     "gantry")
            self.boot_state = DEFAULT_BOOT
        self.get_logger().info(f"plant restarted (epoch {epoch}, boot {self.boot_state.label}): virtual firmware "
                               f"restart, {'STAND' if self.boot_state is BootState.STANDING else 'DAMP'}")
        self.epoch = epoch
        self.sync.reset(epoch)
        self.firmware.restart(boot=self.boot_state)
        self.arbiter.reset()
        self.script.rewind()
        self.last_tick = -1
        self.t_fw = 0.0
        self.last_policy = None
        if self.pending_fault_epoch == epoch:
            self.pending_fault_epoch = None
            self._latch_plant_fault("reported before this life's first tick")

    # -- one control tick ----------------------------------------------------------------------------------------
    def _decide(self, state: PlantState, policy: PolicyStep | None) -> None:
        tick = int(state.tick)
        self.last_tick = tick
        self.last_decided_at = time.monotonic()
        self.t_fw = tick * self.control_period
        for cmd in self.script.due(self.t_fw):
            self._submit(cmd)
        for d in self.script.disturbances_due(self.t_fw + self.control_period):
            self._send_disturbance(d, tick + 1, int(state.epoch))
        inputs = FirmwareInputs(
            q=np.asarray(state.position),
            qd=np.asarray(state.velocity),
            projected_gravity=projected_gravity(np.asarray(state.imu_orientation)),
            tau=np.asarray(state.effort),
            policy_target=None if policy is None else np.asarray(policy.target),
            policy_torque_ff=None if policy is None else np.asarray(policy.torque_ff),
            policy_kp=None if policy is None or len(policy.kp) == 0 else np.asarray(policy.kp),
            policy_kd=None if policy is None or len(policy.kd) == 0 else np.asarray(policy.kd),
            gyro=np.asarray(state.imu_angular_velocity),
        )
        out = self.firmware.tick(self.t_fw, inputs, None if self.lockstep else time.monotonic())
        self._publish(state, out)

    def _send_disturbance(self, d: command_script.Disturbance, tick: int, epoch: int) -> None:
        """A script's push or force, for the plant to apply from the period answering ``tick`` (one ahead)."""
        m = SimControl(action=SimControl.ACTION_PUSH if d.duration is not None else SimControl.ACTION_FORCE,
                       body=d.body, force=[float(f) for f in d.force], duration=float(d.duration or 0.0),
                       tick=tick, epoch=epoch)
        self.pub_sim.publish(m)

    def _publish(self, state: PlantState, out: FirmwareOutput) -> None:
        c = self.m_cmd
        c.stamp = state.stamp
        c.tick = state.tick
        c.epoch = state.epoch
        c.position = out.position
        c.velocity = out.velocity
        c.kp = out.kp
        c.kd = out.kd
        c.torque_ff = out.torque_ff
        c.gantry_engaged = bool(out.gantry_engaged)
        c.gantry_lowering = bool(out.gantry_lowering)
        self.pub_cmd.publish(c)

        s = self.m_state
        s.stamp = state.stamp
        s.tick = state.tick
        s.epoch = state.epoch
        s.firmware_time_us = round(self.t_fw * 1e6)
        s.mode = int(out.mode)
        s.mode_name = out.mode.name
        s.move_submode = out.move_submode
        s.armed = bool(out.armed)
        s.error_flags = int(out.error_flags)
        s.alerts = [Alert(id=a.id, severity=a.severity, value=a.value, threshold=a.threshold,
                          first_set_us=a.first_set_us, source_id=a.source_id, name=a.name) for a in out.alerts]
        s.velocity_command = [float(v) for v in out.velocity_command]
        s.control_source = self.arbiter.holder_name()
        s.policy_active = bool(out.policy_active)
        s.gantry_engaged = bool(out.gantry_engaged)
        s.thermal_model_active = out.motor_temperature is not None
        s.motor_temperature = (np.zeros(joints.NUM_JOINTS) if out.motor_temperature is None
                               else np.asarray(out.motor_temperature, dtype=float))
        b = out.battery
        s.battery_active = b is not None
        if b is not None:
            s.battery_voltage_v, s.battery_current_a, s.battery_soc_percent = b.voltage_v, b.current_a, b.soc_percent
            s.battery_max_cell_temp_c, s.battery_protection_flags = b.max_cell_temp_c, int(b.protection_flags)
        counters = dict(out.counters)
        counters["policy_late"] = self.policy_late
        s.recovery_phase = out.recovery_phase
        s.counter_names = list(counters)
        s.counter_values = [int(v) for v in counters.values()]
        self.pub_state.publish(s)
        if out.mode != self.last_mode:
            self.get_logger().info(f"mode {out.mode.name}{'/' + out.move_submode if out.move_submode else ''} "
                                   f"at t={self.t_fw:.2f} s")
            self.last_mode = out.mode


def main(args: list[str] | None = None) -> int:
    return run_node(node_names.EDGE, EdgeNode, args, config_errors=(ValueError, command_script.ScriptError))


if __name__ == "__main__":
    sys.exit(main())
