"""The firmware core's vocabulary: modes, alerts, parameters, inputs and outputs, counters, and small helpers.

Split from :mod:`vasimov_edge.firmware` so that file holds the state machine only; nothing here has behaviour of its
own beyond validation and the alert book. Importable from either module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from enum import IntEnum, StrEnum
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from vasimov.alerts import (
    alert_name,
    alert_severity,
)
from vasimov.control_rate import DAMP_KD
from vasimov.faults import LOW_SOC_PERCENT, OVERTEMP_C, TEMP_WARNING_C
from vasimov.joints import (
    DEFAULT_POS,
    NUM_JOINTS,
)
from vasimov_edge.battery import BatteryParams, BatteryReading
from vasimov_edge.recovery import RecoveryParams
from vasimov_edge.thermal import ThermalParams

# Times are sums of float ticks (k * CONTROL_DT); compare with this slack so "exactly 0.5 s later" counts as 0.5 s.
TIME_EPS = 1e-9


class Mode(IntEnum):
    """Reported control mode; values are ``asimov.io.ControlMode`` (asimov-protocol 1.3)."""

    DAMP = 0
    STAND = 1
    MOVE = 2
    FAULT_DAMP = 5


class MoveSubmode(StrEnum):
    """What drives the joints in MOVE (twin-only detail; the wire reports MOVE for both)."""

    NONE = ""
    POLICY = "POLICY"
    TRAJECTORY = "TRAJECTORY"


@dataclass(frozen=True)
class Alert:
    """One active firmware alert, shaped like ``asimov.io.Alert`` (value/threshold are uint32 on the wire).

    One entry per alert id. ``source_id`` is the firmware motor index (``joint_pos`` index) for motor alerts, the
    hottest motor in the condition (``value`` is its temperature), and 0 otherwise.
    """

    id: int
    severity: int
    value: int
    threshold: int
    first_set_us: int
    source_id: int
    name: str


@dataclass(frozen=True)
class FirmwareParams:
    """Every tunable of the firmware core, with where its default comes from.

    stand_ramp_s: STAND ramp duration; Menlo API page ("ramps to a standing pose over ~2 s"), fact sheet
        ``stand_ramp`` (ASSUMED linear profile, from vasimov).
    arm_gravity_z, arm_hold_s, arm_max_gap_s: the MOVE gate; menlo-sdk ``_preflight.ARM_GRAVITY_Z`` /
        ``ARM_HOLD_S`` / ``ARM_MAX_GAP_S`` (the SDK mirrors the firmware; the firmware must not arm later).
    fall_gravity_z: fall trip, projected-gravity z above this (tilt > 60 deg); menlo-sdk comments, fact sheet
        ``fall_detection``.
    fall_detection: twin-only switch (vasimov's ``fall_latch_enabled``); the real firmware always detects falls.
    trajectory_timeout_s: trajectory session timeout -> DAMP; Menlo API page.
    velocity_timeout_s: velocity staleness -> zero velocity, stay MOVE; Menlo API page / contract 5.6.
    velocity_caps: firmware clamp (vx, vy, vyaw); menlo-sdk ``Limits`` defaults ("the firmware's own caps").
    damp_kd: DAMP-mode kd on every joint (kp 0); fact sheet ``pd_gains.damp_mode`` (vasimov value).
    trajectory_kp_max, trajectory_kd_max: documented gain ranges of a trajectory (API page: kp 0-500, kd 0-5.0);
        larger values are clamped (DECISION: the page gives the range but not what happens outside it).
    alert_clear_s: an alert entry clears this long after its condition ends; contract 5.10 / fact sheet.
    report_fault_damp: report a latched fault as mode FAULT_DAMP (5) instead of DAMP (0). Off by default: Menlo's
        SDK reference says a critical alert makes the firmware latch DAMP with ``error_flags`` set, and the SDK's own
        CLI tests print ``DAMP · faults FALL_DETECTED``; the SDK accepts FAULT_DAMP too (``State.faulted``).
    thermal_model: run the motor thermal model; off -> no temperatures (None) and no thermal alerts.
    thermal: the thermal model's (ASSUMED) parameters.
    temp_warning_c, overtemp_c, overtemp_clear_c: MOTOR_TEMP_HIGH warning, MOTOR_OVERTEMP trip, and the temperature
        the over-temperature *condition* ends below (hysteresis); fact sheet ``thermal`` (menlo-sdk quotes 60/80).
    clamp_policy_targets: apply the firmware's target clamp (ankle pitch/roll limits, joint ranges) to the policy's
        targets too; the firmware's clamp lives in ``policy_thread.c::apply_ankle_coupling``, so the real robot's
        policy output goes through it.
    battery_model: run the battery model (``vasimov_edge.battery``, ASSUMED parameters ``battery``): the battery
        block of the state and the BMS alerts (BMS_LOW_SOC below ``low_soc_percent``, BMS_PROTECTION when the BMS
        trips); off -> no battery reported.
    recovery: twin-only, opt-in (issue 21; docs/recovery.md): a fall does not latch; the recovery chain
        (``vasimov_edge.recovery``) takes the joints, keeps FALL_DETECTED raised while the robot is down and gets it
        up; off (the default) = the hardware's fall latch. ``recovery_params`` are the chain's thresholds.
    joint_range_margin_rad: JOINT_OUT_OF_RANGE trips when a reported joint position is more than this past its
        range (DECISION: the twin's joints meet MuJoCo's limits, which are soft constraints a hard landing presses
        a little into; the check is for an encoder reading or a joint really past its limit). None: no check.
    """

    stand_ramp_s: float = 2.0
    arm_gravity_z: float = -0.87
    arm_hold_s: float = 0.5
    arm_max_gap_s: float = 0.25
    fall_gravity_z: float = -0.5
    fall_detection: bool = True
    trajectory_timeout_s: float = 2.0
    velocity_timeout_s: float = 2.0
    velocity_caps: tuple[float, float, float] = (0.4, 0.4, 0.8)
    damp_kd: float = DAMP_KD
    trajectory_kp_max: float = 500.0
    trajectory_kd_max: float = 5.0
    alert_clear_s: float = 2.5
    report_fault_damp: bool = False
    thermal_model: bool = True
    thermal: ThermalParams = field(default_factory=ThermalParams)
    temp_warning_c: float = TEMP_WARNING_C
    overtemp_c: float = OVERTEMP_C
    overtemp_clear_c: float = 70.0
    clamp_policy_targets: bool = True
    battery_model: bool = True
    battery: BatteryParams = field(default_factory=BatteryParams)
    low_soc_percent: float = LOW_SOC_PERCENT
    joint_range_margin_rad: float | None = 0.1
    recovery: bool = False
    recovery_params: RecoveryParams = field(default_factory=RecoveryParams)

    def __post_init__(self) -> None:
        nonneg = (
            "stand_ramp_s",
            "arm_hold_s",
            "arm_max_gap_s",
            "trajectory_timeout_s",
            "velocity_timeout_s",
            "damp_kd",
            "trajectory_kp_max",
            "trajectory_kd_max",
            "alert_clear_s",
        )
        for name in nonneg:
            v = getattr(self, name)
            if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0.0):
                raise ValueError(f"FirmwareParams.{name} must be a finite number >= 0, got {v!r}")
        if len(self.velocity_caps) != 3 or not all(math.isfinite(c) and c >= 0.0 for c in self.velocity_caps):
            raise ValueError(f"FirmwareParams.velocity_caps must be 3 finite values >= 0, got {self.velocity_caps!r}")
        for name in ("arm_gravity_z", "fall_gravity_z"):
            v = getattr(self, name)
            if not (math.isfinite(v) and -1.0 <= v <= 1.0):
                raise ValueError(f"FirmwareParams.{name} must lie in [-1, 1], got {v!r}")
        if not self.overtemp_clear_c <= self.overtemp_c:
            raise ValueError(
                f"FirmwareParams.overtemp_clear_c ({self.overtemp_clear_c}) must not exceed overtemp_c "
                f"({self.overtemp_c})"
            )


@dataclass(frozen=True)
class FirmwareInputs:
    """What the firmware reads at one control tick (joint space, ``vasimov.joints`` order).

    q, qd, tau: 25 joint positions (rad), velocities (rad/s) and the torques the motors applied (N·m).
    projected_gravity: 3, unit gravity in the IMU frame (z ~ -1 upright).
    gyro: 3, the IMU's angular rate (rad/s, IMU frame), optional: only the recovery chain reads it (without it the
        chain estimates the rate from the turn of gravity).
    policy_target: 23 joint targets in *policy* order from the locomotion policy for this tick, or None when the
        policy produced nothing. policy_torque_ff / policy_kp / policy_kd: optional 23-entry overrides.
    """

    q: ArrayLike
    qd: ArrayLike
    projected_gravity: ArrayLike
    tau: ArrayLike
    policy_target: ArrayLike | None = None
    policy_torque_ff: ArrayLike | None = None
    policy_kp: ArrayLike | None = None
    policy_kd: ArrayLike | None = None
    gyro: ArrayLike | None = None


class _Targets(NamedTuple):
    position: np.ndarray
    velocity: np.ndarray
    kp: np.ndarray
    kd: np.ndarray
    torque_ff: np.ndarray


@dataclass(frozen=True)
class FirmwareOutput:
    """The firmware's answer to one tick: what to send the motors and what ``RobotState`` reports.

    mode is the *reported* mode: with a fault latched it is DAMP (FAULT_DAMP with ``report_fault_damp``);
    fault_latched says whether a fault is latched, whatever number is reported.

    position, velocity, kp, kd, torque_ff: the motor command for the plant, joint space, 25 each, read-only:
    ``tau = kp (position - q) + kd (velocity - qd) + torque_ff`` (the plant clamps to the torque limit).
    motor_temperature / motor_current are in firmware (motor) order, ankle slots = motors A, B; None when the thermal
    model is off. battery: the BMS reading, None when the battery model is off.
    policy_epoch increments every time MOVE/POLICY is entered (reset the policy backend when it
    changes). input_error says why this tick's inputs were unusable (the previous valid reading was used).
    counters are cumulative since boot.
    """

    t: float
    timestamp_us: int
    mode: Mode
    move_submode: MoveSubmode
    armed: bool
    fault_latched: bool
    error_flags: int
    alerts: tuple[Alert, ...]
    velocity_command: np.ndarray
    policy_active: bool
    policy_epoch: int
    gantry_engaged: bool
    gantry_lowering: bool
    stand_ramp_done: bool
    position: np.ndarray
    velocity: np.ndarray
    kp: np.ndarray
    kd: np.ndarray
    torque_ff: np.ndarray
    motor_temperature: np.ndarray | None
    motor_current: np.ndarray | None
    battery: BatteryReading | None
    input_error: str | None
    counters: dict[str, int]
    recovery_phase: str = ""  # vasimov_edge.recovery.Phase value; "" when no recovery chain runs


# Every counter the core keeps, all present from boot (so a reader sees zeros, not missing keys).
COUNTERS: tuple[str, ...] = (
    # accepted commands
    "accepted_damp",
    "accepted_stand",
    "accepted_velocity",
    "accepted_trajectory",
    # rejections (each is also counted in rejections_total)
    "rejections_total",
    "velocity_non_finite",  # NON_FINITE
    "velocity_in_damp",  # FW_DAMPED
    "velocity_fault_latched",  # FAULT_DAMPED
    "velocity_unarmed_stand",  # GATE
    "trajectory_empty",  # EMPTY_TRAJECTORY
    "trajectory_bad_length",  # BAD_LENGTH
    "trajectory_non_finite",  # NON_FINITE (positions)
    "trajectory_in_damp",  # FW_DAMPED
    "trajectory_fault_latched",  # FAULT_DAMPED
    "trajectory_unarmed_stand",  # GATE
    "stand_fault_latched",  # FAULT_DAMPED
    "command_unparsable",  # PARSE (a field that is not a number)
    "command_unknown",  # UNKNOWN_COMMAND
    # accepted, but changed or without effect
    "damp_while_latched",
    "stand_while_standing",
    "velocity_clamped",
    "trajectory_targets_clamped",
    "trajectory_gains_substituted",  # a kp or kd array of another length than 25 -> gain table for that array
    "trajectory_gains_non_finite",  # a kp or kd array with a non-finite entry -> gain table for that array
    "trajectory_gains_damped",  # joints given DAMP gains for an entry <= 0
    "trajectory_gains_clamped",
    # watchdogs and faults
    "velocity_timeouts",
    "trajectory_timeouts",
    "fall_latches",
    "overtemp_latches",
    "sensor_fault_latches",
    "comm_loss_latches",
    "joint_range_latches",
    "bms_latches",
    "faults_injected",
    "gantry_releases",
    "mode_changes",
    # the tick's inputs
    "policy_output_missing",
    "policy_output_invalid",
    "policy_targets_clamped",
    "bad_inputs",
    "clock_anomalies",
    # the opt-in recovery chain (FirmwareParams.recovery)
    "recovery_falls",  # falls caught by the chain (not latched)
    "recovery_getups",  # get-ups started by STAND while lying
    "recoveries",  # chains that ended upright
    "recovery_retries",  # stalled key poses / failed stand-ups retried
    "recovery_failures",  # chains out of retries (the fall then latches as on the robot)
    "velocity_during_recovery",  # GATE: a velocity sent while the chain holds the joints
    "trajectory_during_recovery",  # GATE: a trajectory sent while the chain holds the joints
)


class _AlertBook:
    """Active alerts keyed by id: raised while a condition holds, dropped ``clear_s`` after it ends.

    One entry per id, as the wire allows (``RobotState.active_alerts`` has nanopb ``max_count: 48``, one per catalog
    id): 25 hot motors are one MOTOR_TEMP_HIGH entry, never 25, so a frame can never overflow.
    """

    @dataclass
    class _Entry:
        alert: Alert
        ended_at: float | None = None

    def __init__(self, clear_s: float) -> None:
        self._clear_s = clear_s
        self._entries: dict[int, _AlertBook._Entry] = {}

    def clear(self) -> None:
        self._entries.clear()

    def update(self, alert_id: int, source_id: int, active: bool, value: float, threshold: float, t: float,
               severity: int | None = None) -> None:
        """The condition of ``alert_id`` now; while active, ``source_id``/``value`` name its current worst source.
        ``severity`` overrides the catalog's (and an active entry's) severity; None keeps it."""
        key = alert_id
        entry = self._entries.get(key)
        if active:
            v = _uint32(value)
            if entry is None:
                sev = alert_severity(alert_id) if severity is None else severity
                alert = Alert(alert_id, sev, v, _uint32(threshold), _us(t), source_id, alert_name(alert_id))
                self._entries[key] = _AlertBook._Entry(alert)
            else:
                sev = entry.alert.severity if severity is None else severity
                entry.alert = replace(entry.alert, value=v, source_id=source_id, severity=sev)
                entry.ended_at = None
        elif entry is not None:
            if entry.ended_at is None:
                entry.ended_at = t
            if t - entry.ended_at >= self._clear_s - TIME_EPS:
                del self._entries[key]

    def snapshot(self) -> tuple[Alert, ...]:
        return tuple(
            sorted((e.alert for e in self._entries.values()), key=lambda a: (a.first_set_us, a.id, a.source_id))
        )


_NEUTRAL_READING: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] = (
    DEFAULT_POS.copy(),
    np.zeros(NUM_JOINTS),
    np.array([0.0, 0.0, -1.0]),
    np.zeros(NUM_JOINTS),
)


def _uint32(x: float) -> int:
    """A measured value as the wire's uint32 (rounded, clipped at 0)."""
    if not math.isfinite(x):
        return 0
    return int(min(max(round(x), 0), 2**32 - 1))


def _us(t: float) -> int:
    return max(0, round(t * 1e6))


def _vec(x: ArrayLike | None, n: int) -> np.ndarray | None:
    """``x`` as a finite float vector of length ``n``, else None."""
    if x is None:
        return None
    try:
        a = np.array(x, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        return None
    if a.shape != (n,) or not np.all(np.isfinite(a)):
        return None
    return a


def _ro(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a
