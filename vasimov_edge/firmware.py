"""The Asimov 1 firmware + Asimov Edge command lane as a pure state machine: commands and sensor readings in, motor
targets and reported state out.

What it reproduces, and from where (fact sheet ``firmware_behaviour``; Menlo's robot-control API page; the SDK's own
mirror of the firmware in ``menlo/asimov/robot.py::_track_arming`` and ``_preflight.py``; the contract in
``menlo_sdk_contract.md`` section 5):

* **Modes** (``asimov.io.ControlMode`` wire values): DAMP 0, STAND 1, MOVE 2 (sub-modes POLICY / TRAJECTORY),
  FAULT_DAMP 5. Boot in DAMP on the virtual gantry. Internally a latched fault is the FAULT_DAMP state; it is
  *reported* as DAMP with ``error_flags`` set and the alert active (Menlo's SDK reference: a critical alert makes
  the firmware latch DAMP with ``error_flags`` set; the SDK's CLI prints ``DAMP · faults FALL_DETECTED``), or as
  FAULT_DAMP 5 with ``report_fault_damp`` (which the SDK also accepts). The latch, not the number, drives behaviour.
* **DAMP**: kp 0, kd ``damp_kd`` on every joint. Always accepted, from any mode, even with a fault latched (the latch
  stays).
* **STAND**: a linear ramp from the measured pose to ``vasimov.joints.DEFAULT_POS`` over ``stand_ramp_s`` with the
  STAND gain table, then a hold. Refused while a fault is latched. From MOVE it ramps from the current pose.
* **Arming** (the MOVE gate): STAND held with projected-gravity z < ``arm_gravity_z`` for ``arm_hold_s``. The hold
  starts at the STAND command (if the latest reading is upright) or else at the first upright tick; the SDK's
  mirror (``Robot._track_arming``) starts at the first STAND sample it receives, which is never earlier, so the
  firmware is armed no later than ``Robot.armed`` says (on a tick-aligned state stream: on the same tick). The SDK
  times its hold on the wall clock: in real time the firmware also completes the hold on the wall clock, so a twin
  running slower than real time still arms no later; in lockstep only firmware time counts (determinism), so a
  lockstep graph running *slower* than real time can arm after ``Robot.armed`` (an SDK client there should wait for
  the firmware's ``armed``, as ``vasimov bench walk --graph`` does). A MOVE request arriving between ticks completes
  a due hold at its own arrival time. A tick gap over ``arm_max_gap_s`` or a tilt restarts the hold. Every mode
  change disarms except MOVE -> STAND.
* **Velocity**: armed STAND -> MOVE/POLICY and follow; unarmed STAND -> ignored (GATE); DAMP -> dropped
  (FW_DAMPED); MOVE -> followed, clamped to the firmware caps. Staleness: ``velocity_timeout_s`` without a velocity
  packet zeroes the command; the robot stays in MOVE balancing.
* **Trajectory**: armed STAND or MOVE -> MOVE/TRAJECTORY; 25 positions in wire frame (ankle slots = pitch, roll;
  clamped, see ``vasimov.motor_space``); kp and kd are decided per array: one with exactly 25 finite values is used,
  any other (absent, another count, a non-finite entry) is replaced by the STAND gain table for that array (the API
  page: "send exactly 25 values in kp and/or kd; any other count is silently replaced with the edge defaults"); an
  entry <= 0 gives that joint DAMP gains. Session timeout: ``trajectory_timeout_s`` without a setpoint -> DAMP.
* **MOVE/POLICY**: the policy's 23 targets (policy order, ``POLICY_TO_JOINT``) with the policy gain table unless the
  policy supplies gains, through the same target clamp as a trajectory; the neck held at its default with its
  policy gains. No usable policy output -> the previous tick's targets and gains are held (counted).
* **Virtual gantry** (twin-only: the hook of the stand the robot boots on, and its operator). The vendor's examples
  describe the robot "hanging from its gantry hook with both feet on the floor", needing that support for joint
  control and not for the walking policy. So: engaged at boot (the limp robot hangs upright); from a STAND command
  on it *lowers* (``gantry_lowering``: the plant lowers the hook while the legs stand up, so the soles rest on the
  floor and the hook carries only what the legs do not); it stays on through STAND, MOVE/TRAJECTORY and DAMP
  (a damped robot hangs where it is); it is taken off on the tick the walking policy takes the joints (MOVE/POLICY),
  never while anything else holds the robot, so the policy starts on a robot that stands on its feet and is never
  dropped by a timed release mid-balance. Only ``restart()`` puts it back on.
* **Faults latch**: a fall (projected-gravity z > ``fall_gravity_z`` once the gantry has released) or a motor over
  ``overtemp_c`` -> FAULT_DAMP, ``error_flags |= 1 | 1 << (1 + alert_id)``; the alert entry stays while its
  condition lasts and clears ``alert_clear_s`` after it ends; the flags and the latch stay until ``restart()``.
  Motor temperatures come from ``vasimov_edge.thermal`` (ASSUMED parameters); above ``temp_warning_c`` a
  MOTOR_TEMP_HIGH warning is raised. One alert entry per alert id (the wire carries at most one per catalog id,
  nanopb ``max_count: 48``): a motor alert names the hottest motor in its condition (``source_id``, ``value``).
  Severities come from asimov-protocol's alert catalog.
* **Recovery** (twin-only, opt-in ``FirmwareParams.recovery``; docs/recovery.md): a fall in STAND or MOVE does not
  latch. The recovery chain (``vasimov_edge.recovery``) takes the joints (protective pose, settle, get up, stand);
  the mode reads STAND (not armed) meanwhile, FALL_DETECTED stays raised (without ``error_flags``: nothing is
  latched) while the robot is down, velocity and trajectory commands are refused (GATE, counted). Once upright:
  STAND with its ramp done (the arming hold starts), or MOVE/POLICY at zero velocity after a fall in MOVE. Lying in
  DAMP (a ``lying_*`` boot, or DAMP sent during the chain) the robot stays limp until STAND starts a get-up. A chain
  out of retries latches the fall as the robot does.
* **Validation**: a command is first checked by the one validator every inlet uses
  (``vasimov.command_rules.validate``); then the mode rules above apply. Every dropped command is returned as a
  ``Rejection`` whose reason is the SDK's ``Refusal`` name (``vasimov.command_rules.Reason``) and whose
  ``extra["counter"]`` names the counter it incremented. Nothing raises on bad input.

Time: every ``t`` is *firmware time* in seconds since the (virtual) boot. ``restart()`` boots again, so the caller's
next ``t`` starts from 0 again. The core has no clock of its own; ``t`` must not go backwards within one boot (a
step back is counted under ``clock_anomalies`` and treated as no time passing).

Choices made where the sources are silent are marked DECISION in the code.

Why one file past 400 lines: it is one state machine. Every command and every tick read and write the same mode,
latch, arming, gantry and alert state, so splitting it by concern would scatter the rules of one transition over
several files. Its vocabulary (modes, parameters, inputs/outputs, counters) is in `firmware_types.py`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from vasimov.alerts import (
    ALERT_BMS_LOW_SOC,
    ALERT_BMS_PROTECTION,
    ALERT_FALL_DETECTED,
    ALERT_FIRMWARE_STALL,
    ALERT_IMU_FAULT,
    ALERT_JOINT_OUT_OF_RANGE,
    ALERT_MOTOR_COMM_LOSS,
    ALERT_MOTOR_OVERTEMP,
    ALERT_MOTOR_TEMP_HIGH,
    SEVERITY_WARNING,
    alert_name,
    alert_severity,
    latched_flags,
)
from vasimov.boot_states import DEFAULT_BOOT, BootState
from vasimov.command_rules import Reason, validate
from vasimov.commands import (
    DampCommand,
    Rejection,
    RobotCommand,
    StandCommand,
    TrajectoryCommand,
    VelocityCommand,
)
from vasimov.faults import FaultRequest
from vasimov.joints import (
    DEFAULT_POS,
    NON_POLICY_JOINTS,
    NUM_JOINTS,
    NUM_POLICY_JOINTS,
    POLICY_KD,
    POLICY_KP,
    POLICY_TO_JOINT,
    RANGE_HI,
    RANGE_LO,
    STAND_KD,
    STAND_KP,
)
from vasimov.motor_current import motor_current, torque_constant
from vasimov.motor_space import clamp_joint_targets, joint_to_state_torque, trajectory_to_joint_targets
from vasimov_edge.battery import BatteryModel, BatteryReading
from vasimov_edge.firmware_types import (  # noqa: F401 - re-exported: the firmware's vocabulary
    _NEUTRAL_READING,
    COUNTERS,
    TIME_EPS,
    Alert,
    FirmwareInputs,
    FirmwareOutput,
    FirmwareParams,
    Mode,
    MoveSubmode,
    _AlertBook,
    _ro,
    _Targets,
    _uint32,
    _us,
    _vec,
)
from vasimov_edge.recovery import Phase, RecoveryChain
from vasimov_edge.thermal import ThermalModel


class Firmware:
    """The firmware state machine. Call ``submit`` for each command and ``tick`` once per control period (50 Hz)."""

    def __init__(self, params: FirmwareParams | None = None) -> None:
        self.params = params or FirmwareParams()
        self._thermal = ThermalModel(self.params.thermal)
        self._battery = BatteryModel(self.params.battery)
        self._k_t = torque_constant(self.params.thermal.rated_current_a,
                                    self.params.thermal.unknown_motor_rated_torque_nm)
        self._alerts = _AlertBook(self.params.alert_clear_s)
        self._policy_epoch = 0  # monotonic across restarts, so a change always means "reset the policy"
        self._gain_notes: tuple[str, ...] = ()
        self._boot()

    # ── lifecycle ─────────────────────────────────────────────────────────────────────────────────────────────
    def _boot(self, boot: BootState = DEFAULT_BOOT) -> None:
        self._boot_state = boot
        self._wall: float | None = None  # wall clock of the call in progress (real time only)
        self._mode = Mode.DAMP
        self._submode = MoveSubmode.NONE
        self._armed = False
        self._upright_since: float | None = None
        self._upright_since_wall: float | None = None
        self._latched = False
        self._error_flags = 0
        self._alerts.clear()
        self._overtemp_active = np.zeros(NUM_JOINTS, dtype=bool)
        self._imu_failed = False  # the IMU stopped reporting (injected, or the sensors of a diverged physics)
        self._lost_motors: set[int] = set()  # motors that stopped answering on the CAN bus (injected)
        self._gantry_engaged = True
        self._gantry_lowering = False
        self._clock = 0.0
        self._last_tick_t: float | None = None
        self._ramp_from: np.ndarray | None = None
        self._ramp_t0 = 0.0
        self._velocity = np.zeros(3)
        self._last_velocity_t = 0.0
        self._velocity_stale = False
        self._traj_pos = DEFAULT_POS.copy()
        self._traj_kp = STAND_KP.copy()
        self._traj_kd = STAND_KD.copy()
        self._last_traj_t = 0.0
        self._last_valid: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._last_targets: _Targets | None = None
        self._counters: dict[str, int] = dict.fromkeys(COUNTERS, 0)
        self._recovery = RecoveryChain(self.params.recovery_params)
        self._resume_move = False  # the chain's fall happened in MOVE: resume MOVE at zero velocity
        self._gyro: np.ndarray | None = None
        if boot is BootState.STANDING:
            # DECISION (vasimov.boot_states): the robot a few seconds after STAND, the hook taken away: STAND with its
            # ramp done (the targets are the stand pose), gantry off, not armed; the upright hold starts at the first
            # tick, as the SDK's mirror starts at its first STAND sample.
            self._mode = Mode.STAND
            self._gantry_engaged = False
            self._ramp_from = DEFAULT_POS.copy()
            self._ramp_t0 = -self.params.stand_ramp_s
        elif boot.lying:
            # On the floor, the gantry off: DAMP, and the fall detector trips on the first tick's tilt, latching
            # FALL_DETECTED exactly as after a fall (with recovery on: the alert without the latch; STAND gets up).
            self._gantry_engaged = False

    def restart(self, *, reset_temperatures: bool = False, boot: BootState = DEFAULT_BOOT) -> None:
        """Virtual power cycle: DAMP on the gantry, latch/flags/alerts/counters cleared, firmware clock back to 0.

        ``boot`` names the state the robot boots in (``vasimov.boot_states``): the default is the real power-up;
        ``standing`` starts in STAND with the gantry off, ``lying_*`` in DAMP with the gantry off (the fall detector
        latches on the first tick).

        The caller's next ``t`` is relative to this new boot. Motor temperatures are physics, not firmware state, so
        they survive a restart (a still-hot motor re-trips) unless ``reset_temperatures`` asks for a cold start; heat
        put in by ``inject`` is taken out (the scenario ends with the power cycle). The battery boots fresh.
        """
        if reset_temperatures:
            self._thermal.reset()
        self._thermal.clear_injected()  # an injected heat soak was a scenario; the power cycle ends it
        self._battery.reset()
        self._boot(boot)

    # ── read-only views ───────────────────────────────────────────────────────────────────────────────────────
    @property
    def mode(self) -> Mode:
        """The reported mode (see ``FirmwareOutput.mode``)."""
        return self._reported_mode()

    def _reported_mode(self) -> Mode:
        if self._mode is Mode.FAULT_DAMP and not self.params.report_fault_damp:
            return Mode.DAMP
        return self._mode

    @property
    def boot_state(self) -> BootState:
        """The state this life booted in."""
        return self._boot_state

    @property
    def move_submode(self) -> MoveSubmode:
        return self._submode

    @property
    def armed(self) -> bool:
        return self._armed

    @property
    def fault_latched(self) -> bool:
        return self._latched

    @property
    def error_flags(self) -> int:
        return self._error_flags

    @property
    def gantry_engaged(self) -> bool:
        return self._gantry_engaged

    @property
    def counters(self) -> dict[str, int]:
        return dict(self._counters)

    @property
    def recovery_phase(self) -> Phase:
        """The recovery chain's phase (``Phase.IDLE`` when none runs or recovery is off)."""
        return self._recovery.phase

    @property
    def last_gain_notes(self) -> tuple[str, ...]:
        """Counters the last ``submit`` bumped for an applied trajectory's gains (substituted, non-finite, clamped,
        damped), so the node can log a setpoint that was applied with gains other than those sent."""
        return self._gain_notes

    # ── commands ──────────────────────────────────────────────────────────────────────────────────────────────
    def submit(self, cmd: RobotCommand, t: float, wall: float | None = None) -> Rejection | None:
        """Apply one command that arrived at firmware time ``t``; returns None if accepted, else why it was dropped.

        ``wall``: the arrival on a wall clock (seconds, any origin), given only when the twin runs against real
        clients in real time (see ``_arm_if_due``). The command has already passed the arbiter. Never raises on a
        malformed command.
        """
        self._wall = wall
        t = self._advance_clock(t)
        self._gain_notes = ()
        problem = validate(cmd)  # the one command validator every inlet uses; the core takes commands from anyone
        if problem is not None:
            counter = str(problem.extra["counter"])
            return self._reject(counter, problem.reason, problem.detail)
        if isinstance(cmd, DampCommand):
            return self._on_damp(t)
        if isinstance(cmd, StandCommand):
            return self._on_stand(t)
        if isinstance(cmd, VelocityCommand):
            return self._on_velocity(cmd, t)
        return self._on_trajectory(cmd, t)

    def count_rejection(self, rejection: Rejection) -> None:
        """Count a rejection made outside the core (decoder, arbiter) so every drop lands in one counter set.

        The counter is ``rejection.extra["counter"]`` when given, else ``rejected_<reason lower-case>``.
        """
        name = str(rejection.extra.get("counter") or f"rejected_{rejection.reason.lower()}")
        self._counters[name] = self._counters.get(name, 0) + 1
        self._counters["rejections_total"] += 1

    def _reject(self, counter: str, reason: str, detail: str) -> Rejection:
        self._counters[counter] += 1
        self._counters["rejections_total"] += 1
        return Rejection(reason=reason, detail=detail, extra={"counter": counter, "mode": self._reported_mode().name})

    def _on_damp(self, t: float) -> None:
        self._counters["accepted_damp"] += 1
        if self._latched:
            # Safety stop request while already fault-DAMPed: accepted, nothing to do, the latch stays.
            self._counters["damp_while_latched"] += 1
            return None
        self._enter(Mode.DAMP, MoveSubmode.NONE)
        return None

    def _on_stand(self, t: float) -> Rejection | None:
        if self._latched:
            return self._reject(
                "stand_fault_latched",
                Reason.FAULT_DAMPED,
                f"a fault is latched (error_flags={self._error_flags:#x}); STAND needs a firmware restart",
            )
        self._counters["accepted_stand"] += 1
        if self._lying_limp():
            # Recovery on, lying limp (not latched): STAND starts the get-up; STAND (ramp done) once upright.
            self._enter(Mode.STAND, MoveSubmode.NONE)
            self._resume_move = False
            self._counters["recovery_getups"] += 1
            self._recovery.start_getup(t, self._last_valid[0] if self._last_valid is not None else DEFAULT_POS)
            return None
        if self._mode is Mode.STAND:
            # DECISION: STAND while in STAND is accepted and changes nothing (no mode change for the SDK, no new
            # ramp, arming kept); the SDK's own `menlo stand` sends nothing in STAND.
            self._counters["stand_while_standing"] += 1
            return None
        self._enter(Mode.STAND, MoveSubmode.NONE)
        self._ramp_from = None if self._last_valid is None else self._last_valid[0].copy()
        self._ramp_t0 = t
        if self._gantry_engaged:
            self._gantry_lowering = True  # stand up on the hook: it lowers until the soles rest on the floor
        if self._last_valid is not None and self._last_valid[2][2] < self.params.arm_gravity_z:
            # The arming hold starts at the mode change itself (with the latest reading), so the firmware is armed
            # no later than the SDK's mirror, which counts from the first STAND sample it receives.
            self._upright_since = t
            self._upright_since_wall = self._wall
        return None

    def _refuse_when_damped(self, kind: str) -> Rejection | None:
        """MOVE needs a robot that is neither fault-latched nor in DAMP; ``kind`` names the command's counters."""
        if self._latched:
            return self._reject(f"{kind}_fault_latched", Reason.FAULT_DAMPED,
                                "a fault is latched; restart the firmware")
        if self._mode is Mode.DAMP:
            return self._reject(f"{kind}_in_damp", Reason.FW_DAMPED, f"{kind} is dropped in DAMP; send STAND first")
        return None

    def _lying_limp(self) -> bool:
        """Recovery on, limp (DAMP, nothing latched) and lying past the fall tilt: a STAND gets up."""
        return (
            self.params.recovery
            and self._mode is Mode.DAMP
            and not self._latched
            and not self._gantry_engaged
            and self._last_valid is not None
            and self._last_valid[2][2] > self.params.fall_gravity_z
        )

    def _refuse_during_recovery(self, kind: str) -> Rejection | None:
        if not self._recovery.active:
            return None
        return self._reject(f"{kind}_during_recovery", Reason.GATE,
                            f"the recovery chain holds the joints ({self._recovery.phase.value}); {kind} dropped")

    def _on_velocity(self, cmd: VelocityCommand, t: float) -> Rejection | None:
        v = np.array([float(cmd.vx), float(cmd.vy), float(cmd.vyaw)])  # validated: finite numbers
        refused = self._refuse_when_damped("velocity") or self._refuse_during_recovery("velocity")
        if refused is not None:
            return refused
        self._arm_if_due(t)
        if self._mode is Mode.STAND and not self._armed:
            return self._reject(
                "velocity_unarmed_stand",
                Reason.GATE,
                f"STAND not yet held upright (gravity z < {self.params.arm_gravity_z}) for {self.params.arm_hold_s} s",
            )
        caps = np.array(self.params.velocity_caps)
        clamped = np.clip(v, -caps, caps)
        if np.any(clamped != v):
            self._counters["velocity_clamped"] += 1
        self._counters["accepted_velocity"] += 1
        # Armed STAND, MOVE/POLICY or MOVE/TRAJECTORY (DECISION: a velocity in MOVE/TRAJECTORY hands the joints
        # back to the policy, as "sending velocity auto-enters POLICY" on the API page).
        self._enter(Mode.MOVE, MoveSubmode.POLICY)
        self._velocity = clamped
        self._last_velocity_t = t
        self._velocity_stale = False
        return None

    def _on_trajectory(self, cmd: TrajectoryCommand, t: float) -> Rejection | None:
        pos = np.array([float(x) for x in cmd.positions])  # validated: 25 finite numbers
        refused = self._refuse_when_damped("trajectory") or self._refuse_during_recovery("trajectory")
        if refused is not None:
            return refused
        self._arm_if_due(t)
        if self._mode is Mode.STAND and not self._armed:
            # DECISION: like velocity, a trajectory enters MOVE only from an armed STAND (the SDK's FakeEdge and
            # contract 5.7); `robot.stand()` returns once armed, so SDK flows are unaffected.
            return self._reject(
                "trajectory_unarmed_stand",
                Reason.GATE,
                f"STAND not yet held upright for {self.params.arm_hold_s} s; the trajectory is ignored",
            )
        kp, kd, notes = self._trajectory_gains(cmd.kp, cmd.kd)
        targets, clamped = trajectory_to_joint_targets(pos)
        if clamped:
            self._counters["trajectory_targets_clamped"] += 1
        # Only a trajectory that is applied counts its gain adjustments (a dropped one changed nothing).
        for note in notes:
            self._counters[note] += 1
        self._gain_notes = notes
        self._counters["accepted_trajectory"] += 1
        self._enter(Mode.MOVE, MoveSubmode.TRAJECTORY)
        self._traj_pos, self._traj_kp, self._traj_kd = targets, kp, kd
        self._last_traj_t = t
        self._velocity = np.zeros(3)
        return None

    def _trajectory_gains(self, kp_in: Any, kd_in: Any) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
        """(kp, kd, counters to bump if the trajectory is applied) for a validated trajectory (its gains, when given,
        are numbers: ``vasimov.command_rules.validate``).

        Each array is decided on its own, as the Menlo API page says ("send exactly 25 values in kp and/or kd. Any
        other count ... is silently replaced with the edge defaults"): an array of 25 finite values is used, an
        absent one gets the STAND gain table, one of another length or with a non-finite entry gets the table too
        (counted). DECISION (non-finite): the page lists non-finite *positions* among the drop conditions but not
        gains, and it replaces gains it cannot use rather than dropping the setpoint; so a non-finite gain array is
        treated like one of the wrong length. The SDK never sends a lone gain or a non-finite one (it refuses both
        client-side, believing "Asimov Edge ignores a lone gain"), so SDK-visible behaviour does not depend on this.
        """
        notes: list[str] = []
        out: list[np.ndarray] = []
        for raw, table in ((kp_in, STAND_KP), (kd_in, STAND_KD)):
            if raw is None:
                out.append(table.copy())
                continue
            g = np.array([float(x) for x in raw])
            if g.size != NUM_JOINTS:
                notes.append("trajectory_gains_substituted")
                out.append(table.copy())
            elif not np.all(np.isfinite(g)):
                notes.append("trajectory_gains_non_finite")
                out.append(table.copy())
            else:
                out.append(g)
        kp, kd = out
        capped_kp = np.minimum(kp, self.params.trajectory_kp_max)
        capped_kd = np.minimum(kd, self.params.trajectory_kd_max)
        if np.any(capped_kp != kp) or np.any(capped_kd != kd):
            notes.append("trajectory_gains_clamped")
        damped = (kp <= 0.0) | (kd <= 0.0)
        if np.any(damped):
            notes.append("trajectory_gains_damped")
            capped_kp[damped] = 0.0
            capped_kd[damped] = self.params.damp_kd
        return capped_kp, capped_kd, tuple(dict.fromkeys(notes))

    # ── state transitions ─────────────────────────────────────────────────────────────────────────────────────
    def _enter(self, mode: Mode, submode: MoveSubmode) -> None:
        """Change mode with the firmware's arming rule: every mode change disarms except MOVE -> STAND."""
        prev = self._mode
        if mode is not prev:
            self._counters["mode_changes"] += 1
            self._armed = mode is Mode.MOVE or (prev is Mode.MOVE and mode is Mode.STAND and self._armed)
            self._upright_since = None
            self._upright_since_wall = None
        if submode is MoveSubmode.POLICY and not (prev is Mode.MOVE and self._submode is MoveSubmode.POLICY):
            self._policy_epoch += 1
        self._mode, self._submode = mode, submode
        if mode is not Mode.MOVE or submode is not MoveSubmode.POLICY:
            self._velocity = np.zeros(3)
        if mode in (Mode.DAMP, Mode.FAULT_DAMP):
            self._gantry_lowering = False  # a DAMPed robot hangs on the hook where it is
            self._recovery.reset()  # DAMP (asked for, or a latch) ends a recovery chain: the robot goes limp
        elif mode is Mode.MOVE and submode is MoveSubmode.POLICY and self._gantry_engaged:
            # The walking policy takes the joints: the hook comes off now, with the robot on its feet, so the policy
            # balances from its first tick what it will balance from then on (joint control keeps the hook).
            self._gantry_engaged = False
            self._gantry_lowering = False
            self._counters["gantry_releases"] += 1

    def latch_sensor_fault(self) -> None:
        """The robot's sensors stopped reporting (the twin's physics diverged; the plant holds the last finite
        reading): latch DAMP with the critical IMU_FAULT alert, as the firmware does for a sensor that fails. The
        alert stays until a restart, because the condition does."""
        self._imu_failed = True
        self._alerts.update(ALERT_IMU_FAULT, 0, True, 1.0, 0.0, self._clock)
        self._latch(ALERT_IMU_FAULT, "sensor_fault_latches")

    def inject(self, request: FaultRequest) -> None:
        """Set up an injected fault's condition (``vasimov.faults``); the next tick's checks raise its alert and
        latch it if it is critical, as they would for the real condition. Until a restart.

        What the firmware detects itself from its inputs (a joint reading past its range, the sensors of a diverged
        physics) needs nothing here. What it learns from hardware the twin has no model of, it learns here: an IMU
        that stopped updating (the IMU driver's timeout) and a motor that stopped answering (the CAN bus). The
        thermal and battery models take the heat and the charge.
        """
        name, joint = request.name, request.joint
        self._counters["faults_injected"] += 1
        if name == "imu_failure":
            self._imu_failed = True
        elif name == "motor_comm_loss" and joint is not None:
            self._lost_motors.add(joint)
        elif name in ("motor_overtemp", "motor_temp_high") and joint is not None:
            self._thermal.inject_heat(joint, request.value)
        elif name == "bms_low_soc":
            self._battery.set_soc(request.value)
        elif name == "bms_protection":
            self._battery.set_soc(0.0)

    def _latch(self, alert_id: int, counter: str) -> None:
        bit = latched_flags(alert_id)
        if self._error_flags & bit == bit:
            return
        self._error_flags |= bit
        self._counters[counter] += 1
        self._latched = True
        self._enter(Mode.FAULT_DAMP, MoveSubmode.NONE)

    def _advance_clock(self, t: float) -> float:
        try:
            tf = float(t)
        except (TypeError, ValueError):
            tf = math.nan
        if not math.isfinite(tf) or tf < self._clock:
            self._counters["clock_anomalies"] += 1
            return self._clock
        self._clock = tf
        return tf

    # ── the control tick ──────────────────────────────────────────────────────────────────────────────────────
    def tick(self, t: float, inp: FirmwareInputs, wall: float | None = None) -> FirmwareOutput:
        """One control period at firmware time ``t``: faults, watchdogs, arming, then the motor targets.

        ``wall``: the tick's wall-clock time, in real time only (see ``_arm_if_due``).
        """
        self._wall = wall
        p = self.params
        t = self._advance_clock(t)
        dt = 0.0 if self._last_tick_t is None else t - self._last_tick_t
        self._last_tick_t = t

        reading = self._read_inputs(inp)
        input_error = reading if isinstance(reading, str) else None
        valid = not isinstance(reading, str)
        if valid:
            self._last_valid = reading
        # Before the first valid reading: a neutral one (only DAMP/STAND targets can depend on it).
        q, qd, g, tau = self._last_valid or _NEUTRAL_READING

        # Thermal model (physics of the motors; runs in every mode).
        temps: np.ndarray | None = None
        currents: np.ndarray | None = None
        battery: BatteryReading | None = None
        tau_motor = joint_to_state_torque(tau)
        if p.thermal_model:
            temps = self._thermal.step(tau_motor, dt if valid else 0.0)
            currents = self._thermal.current(tau_motor)
        if p.battery_model:
            # power is frame-independent: joint-space torque x joint velocity
            battery = self._battery.step(tau, qd, motor_current(tau_motor, self._k_t), dt if valid else 0.0)

        if valid:
            self._check_faults(t, q, g, temps)
        self._check_injected(t, battery)

        # Watchdogs (Edge): trajectory session -> DAMP; velocity staleness -> zero, stay MOVE.
        if (
            self._mode is Mode.MOVE
            and self._submode is MoveSubmode.TRAJECTORY
            and t - self._last_traj_t >= p.trajectory_timeout_s - TIME_EPS
        ):
            self._counters["trajectory_timeouts"] += 1
            self._enter(Mode.DAMP, MoveSubmode.NONE)
        if (
            self._mode is Mode.MOVE
            and self._submode is MoveSubmode.POLICY
            and not self._velocity_stale
            and t - self._last_velocity_t >= p.velocity_timeout_s - TIME_EPS
        ):
            self._velocity_stale = True
            if np.any(self._velocity != 0.0):
                self._counters["velocity_timeouts"] += 1
            self._velocity = np.zeros(3)

        self._track_arming(t, dt, g if valid else None)

        override = self._run_recovery(t, q, g) if p.recovery else None
        targets = override if override is not None else self._targets(t, q, inp)
        self._last_targets = targets
        return FirmwareOutput(
            t=t,
            timestamp_us=_us(t),
            mode=self._reported_mode(),
            move_submode=self._submode,
            armed=self._armed,
            fault_latched=self._latched,
            error_flags=self._error_flags,
            alerts=self._alerts.snapshot(),
            velocity_command=_ro(self._velocity.copy()),
            policy_active=self._mode is Mode.MOVE and self._submode is MoveSubmode.POLICY,
            policy_epoch=self._policy_epoch,
            gantry_engaged=self._gantry_engaged,
            gantry_lowering=self._gantry_lowering,
            stand_ramp_done=self._mode is Mode.STAND and t - self._ramp_t0 >= p.stand_ramp_s - TIME_EPS,
            position=targets.position,
            velocity=targets.velocity,
            kp=targets.kp,
            kd=targets.kd,
            torque_ff=targets.torque_ff,
            motor_temperature=None if temps is None else _ro(temps),
            motor_current=None if currents is None else _ro(currents),
            battery=battery,
            input_error=input_error,
            counters=dict(self._counters),
            recovery_phase=self._recovery.phase.value,
        )

    def _read_inputs(self, inp: FirmwareInputs) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | str:
        """The tick's sensor reading as validated arrays, or why it is unusable (counted)."""
        fields = (("q", NUM_JOINTS), ("qd", NUM_JOINTS), ("projected_gravity", 3), ("tau", NUM_JOINTS))
        out = []
        for name, n in fields:
            a = _vec(getattr(inp, name, None), n)
            if a is None:
                self._counters["bad_inputs"] += 1
                return f"{name} must be {n} finite numbers"
            out.append(a)
        self._gyro = _vec(getattr(inp, "gyro", None), 3)  # optional; None when absent or unusable
        return out[0], out[1], out[2], out[3]

    def _check_injected(self, t: float, battery: BatteryReading | None) -> None:
        """Conditions that hold whatever the tick's reading: a failed IMU, lost motors, the BMS."""
        if self._imu_failed:
            self._alerts.update(ALERT_IMU_FAULT, 0, True, 1.0, 0.0, t)
            self._latch(ALERT_IMU_FAULT, "sensor_fault_latches")
        lost = sorted(self._lost_motors)
        self._alerts.update(ALERT_MOTOR_COMM_LOSS, lost[0] if lost else 0, bool(lost), len(lost), 0.0, t)
        if lost:
            self._latch(ALERT_MOTOR_COMM_LOSS, "comm_loss_latches")
        if battery is None:
            return
        p = self.params
        self._alerts.update(ALERT_BMS_LOW_SOC, 0, battery.soc_percent < p.low_soc_percent, battery.soc_percent,
                            p.low_soc_percent, t)
        cutoff_mv = p.battery.cells * p.battery.cell_cutoff_v * 1000.0
        tripped = battery.protection_flags != 0
        self._alerts.update(ALERT_BMS_PROTECTION, 0, tripped, battery.voltage_v * 1000.0, cutoff_mv, t)
        if tripped:
            self._latch(ALERT_BMS_PROTECTION, "bms_latches")

    def _check_range(self, t: float, q: np.ndarray) -> None:
        """JOINT_OUT_OF_RANGE from the reported positions. DECISION: armed while no other fault is latched -- after
        a latch the joints are no longer commanded, and a limp joint pressed against its stop by the fall that
        latched is a consequence, not a new fault."""
        margin = self.params.joint_range_margin_rad
        if margin is None:
            return
        bit = latched_flags(ALERT_JOINT_OUT_OF_RANGE)
        if self._latched and self._error_flags & bit != bit:
            return
        past = np.maximum(RANGE_LO - q, q - RANGE_HI)
        out = past > margin
        worst = int(np.argmax(past))
        self._alerts.update(ALERT_JOINT_OUT_OF_RANGE, worst, bool(np.any(out)), past[worst] * 1000.0,
                            margin * 1000.0, t)
        if np.any(out):
            self._latch(ALERT_JOINT_OUT_OF_RANGE, "joint_range_latches")

    def _check_faults(self, t: float, q: np.ndarray, g: np.ndarray, temps: np.ndarray | None) -> None:
        p = self.params
        self._check_range(t, q)
        # Fall: armed only once the gantry has let go (the gantry holds the robot upright anyway).
        fallen = p.fall_detection and not self._gantry_engaged and not self._imu_failed and g[2] > p.fall_gravity_z
        tilt = math.degrees(math.acos(max(-1.0, min(1.0, -g[2] / (float(np.linalg.norm(g)) or 1.0)))))
        trip_tilt = math.degrees(math.acos(max(-1.0, min(1.0, -p.fall_gravity_z))))
        if p.recovery and not self._latched:
            self._check_fall_recovery(t, q, g, fallen, tilt, trip_tilt)
        else:
            # the catalog's severity (CRITICAL), also over a recovery chain's WARNING entry when another fault latched
            self._alerts.update(ALERT_FALL_DETECTED, 0, fallen, tilt, trip_tilt, t,
                                severity=alert_severity(ALERT_FALL_DETECTED))
            if fallen:
                self._latch(ALERT_FALL_DETECTED, "fall_latches")

        if temps is None:
            return
        # Over-temperature condition with hysteresis: starts at overtemp_c, ends below overtemp_clear_c.
        self._overtemp_active = np.where(self._overtemp_active, temps >= p.overtemp_clear_c, temps >= p.overtemp_c)
        for alert_id, cond, threshold in (
            (ALERT_MOTOR_TEMP_HIGH, temps >= p.temp_warning_c, p.temp_warning_c),
            (ALERT_MOTOR_OVERTEMP, self._overtemp_active, p.overtemp_c),
        ):
            # one entry per id, naming the hottest motor in the condition (the first one when none is)
            hottest = int(np.argmax(np.where(cond, temps, -np.inf))) if np.any(cond) else 0
            self._alerts.update(alert_id, hottest, bool(np.any(cond)), temps[hottest], threshold, t)
        if np.any(self._overtemp_active):
            self._latch(ALERT_MOTOR_OVERTEMP, "overtemp_latches")

    def _check_fall_recovery(self, t: float, q: np.ndarray, g: np.ndarray, fallen: bool, tilt: float,
                             trip_tilt: float) -> None:
        """Recovery on: a fall while the joints are driven (STAND, MOVE) starts the chain instead of the latch;
        FALL_DETECTED is raised while the robot is down or the chain runs, without latching anything."""
        p = self.params
        driven = self._mode in (Mode.STAND, Mode.MOVE)
        trips = fallen or (
            p.fall_detection and not self._gantry_engaged and not self._imu_failed
            and self._recovery.falling(g, self._gyro)
        )
        if driven and trips and not self._recovery.active:
            self._resume_move = self._mode is Mode.MOVE
            self._counters["recovery_falls"] += 1
            self._enter(Mode.STAND, MoveSubmode.NONE)
            self._recovery.start_fall(t, q, g)
        # DECISION (twin-only): raised as a WARNING, not the catalog's CRITICAL. The SDK reads any critical alert as
        # a latched fault (`State.faulted`: "it stays latched until the firmware restarts"), so `menlo stand -y`
        # from a lying boot gave up at once with exit code 3 while the firmware got up; nothing is latched here.
        # The chain out of retries latches, and the alert turns CRITICAL with it (_run_recovery).
        self._alerts.update(ALERT_FALL_DETECTED, 0, fallen or self._recovery.active, tilt, trip_tilt, t,
                            severity=SEVERITY_WARNING)

    def _run_recovery(self, t: float, q: np.ndarray, g: np.ndarray) -> _Targets | None:
        """One tick of the recovery chain; its targets, or None (no chain: the mode's own targets)."""
        chain = self._recovery
        if not chain.active:
            return None
        retries = chain.retries
        out = chain.step(t, q, g, self._gyro)
        self._counters["recovery_retries"] += max(0, chain.retries - retries)
        if chain.phase is Phase.FAILED:
            self._counters["recovery_failures"] += 1
            self._alerts.update(ALERT_FALL_DETECTED, 0, True, 0.0, 0.0, t,
                                severity=alert_severity(ALERT_FALL_DETECTED))  # the catalog's CRITICAL
            self._latch(ALERT_FALL_DETECTED, "fall_latches")  # out of retries: the robot's own fall latch
            return None
        if chain.done:
            self._counters["recoveries"] += 1
            if self._resume_move:
                # DECISION (twin-only): after a fall in MOVE, MOVE/POLICY at zero velocity, so the walking
                # controller balances in place; a new velocity walks on.
                self._enter(Mode.MOVE, MoveSubmode.POLICY)
                self._velocity = np.zeros(3)
                self._last_velocity_t = t
                self._velocity_stale = True
            else:
                self._ramp_from, self._ramp_t0 = DEFAULT_POS.copy(), t - self.params.stand_ramp_s
                self._upright_since, self._upright_since_wall = None, None
            chain.reset()
            return None
        if out is None:
            return None
        zeros = np.zeros(NUM_JOINTS)
        return _targets(out.position.copy(), zeros, out.kp.copy(), out.kd.copy(), zeros)

    def _arm_if_due(self, t: float) -> None:
        """Complete a running hold at a command's arrival time, between ticks.

        The real firmware's loop is faster than the twin's 50 Hz tick; without this, a MOVE request arriving in the
        last tick period of the hold would be refused although the SDK (timing the hold on its own clock) already
        calls the robot armed. The hold only completes if the latest reading is still upright.
        """
        if (
            self._mode is Mode.STAND
            and not self._armed
            and self._upright_since is not None
            and self._last_valid is not None
            and self._last_valid[2][2] < self.params.arm_gravity_z
            and self._hold_done(t)
        ):
            self._armed = True

    def _hold_done(self, t: float) -> bool:
        """The upright hold has lasted ``arm_hold_s`` in firmware time -- or, in real time, on the wall clock.

        DECISION: the SDK times the hold on its own clock from the samples' arrival. When the twin cannot keep up
        and runs slower than real time (it slows rather than drop ticks), 0.5 s of wall clock holds less than 0.5 s
        of firmware time, and a firmware timing the hold in its own time would refuse the `balance` that the SDK
        sends the moment `Robot.armed` is true. Either clock completing the hold arms the robot, so the firmware is
        never armed later than the SDK's mirror. Without a wall clock (lockstep) only firmware time counts.
        """
        hold = self.params.arm_hold_s - TIME_EPS
        if self._upright_since is not None and t - self._upright_since >= hold:
            return True
        wall, since = self._wall, self._upright_since_wall
        return wall is not None and since is not None and wall - since >= hold

    def _track_arming(self, t: float, dt: float, g: np.ndarray | None) -> None:
        """The MOVE gate, mirroring menlo-sdk ``Robot._track_arming`` tick by tick."""
        p = self.params
        if self._mode is not Mode.STAND or self._armed or self._recovery.active:
            return
        if g is None or dt > p.arm_max_gap_s + TIME_EPS:
            self._upright_since = self._upright_since_wall = None
            if g is None:
                return
        if g[2] < p.arm_gravity_z:
            if self._upright_since is None:
                self._upright_since, self._upright_since_wall = t, self._wall
            elif self._hold_done(t):
                self._armed = True
        else:
            self._upright_since = self._upright_since_wall = None

    def _targets(self, t: float, q: np.ndarray, inp: FirmwareInputs) -> _Targets:
        p = self.params
        zeros = np.zeros(NUM_JOINTS)
        if self._mode in (Mode.DAMP, Mode.FAULT_DAMP):
            return _targets(q.copy(), zeros, zeros.copy(), np.full(NUM_JOINTS, p.damp_kd), zeros)
        if self._mode is Mode.STAND:
            if self._ramp_from is None:
                self._ramp_from = q.copy()  # STAND arrived before any reading: ramp from the first one
            s = 1.0 if p.stand_ramp_s <= 0.0 else min(max((t - self._ramp_t0) / p.stand_ramp_s, 0.0), 1.0)
            pos = self._ramp_from + (DEFAULT_POS - self._ramp_from) * s
            return _targets(pos, zeros, STAND_KP.copy(), STAND_KD.copy(), zeros)
        if self._submode is MoveSubmode.TRAJECTORY:
            return _targets(self._traj_pos.copy(), zeros, self._traj_kp.copy(), self._traj_kd.copy(), zeros)
        return self._policy_targets(q, inp)

    def _policy_targets(self, q: np.ndarray, inp: FirmwareInputs) -> _Targets:
        """MOVE/POLICY: the policy's 23 targets with the policy gains; the neck held at its default pose."""
        zeros = np.zeros(NUM_JOINTS)
        target = _vec(inp.policy_target, NUM_POLICY_JOINTS)
        if target is None:
            self._counters["policy_output_invalid" if inp.policy_target is not None else "policy_output_missing"] += 1
            # DECISION: no (usable) policy output yet -> hold the previous tick's position targets and gains (the
            # STAND pose when MOVE was just entered), with no feed-forward.
            last = self._last_targets
            if last is None:
                return _targets(DEFAULT_POS.copy(), zeros, STAND_KP.copy(), STAND_KD.copy(), zeros)
            return _targets(last.position.copy(), zeros, last.kp.copy(), last.kd.copy(), zeros)
        pos = DEFAULT_POS.copy()
        kp = POLICY_KP.copy()
        kd = POLICY_KD.copy()
        ff = np.zeros(NUM_JOINTS)
        pos[POLICY_TO_JOINT] = target
        for name, dest in (("policy_kp", kp), ("policy_kd", kd), ("policy_torque_ff", ff)):
            raw = getattr(inp, name)
            if raw is None:
                continue
            v = _vec(raw, NUM_POLICY_JOINTS)
            if v is None or (name != "policy_torque_ff" and np.any(v < 0.0)):
                self._counters["policy_output_invalid"] += 1
                continue
            dest[POLICY_TO_JOINT] = v
        pos[list(NON_POLICY_JOINTS)] = DEFAULT_POS[list(NON_POLICY_JOINTS)]
        if self.params.clamp_policy_targets:
            pos, clamped = clamp_joint_targets(pos)
            if clamped:
                self._counters["policy_targets_clamped"] += 1
        return _targets(pos, zeros, kp, kd, ff)


def _targets(pos: np.ndarray, vel: np.ndarray, kp: np.ndarray, kd: np.ndarray, ff: np.ndarray) -> _Targets:
    return _Targets(_ro(pos), _ro(vel.copy()), _ro(kp), _ro(kd), _ro(ff.copy()))


__all__ = [
    "ALERT_FALL_DETECTED",
    "ALERT_FIRMWARE_STALL",
    "ALERT_IMU_FAULT",
    "ALERT_MOTOR_OVERTEMP",
    "ALERT_MOTOR_TEMP_HIGH",
    "COUNTERS",
    "Alert",
    "Firmware",
    "FirmwareInputs",
    "FirmwareOutput",
    "FirmwareParams",
    "Mode",
    "MoveSubmode",
    "alert_name",
]
