"""The firmware faults a user can inject into the twin, and the one parser every inlet applies to a request.

Why a catalog: the real robot's firmware raises the alerts of asimov-protocol's catalog (``vasimov.alerts``) from
its sensors; the twin raises the ones it can *model*, and the inject request only sets up the physical or sensor
condition, so the firmware's own rule then trips (or not) as it would on the robot. Two processes act on a request
(the plant: a motor that goes limp, a frozen IMU, an encoder reading; the edge: the firmware's detection and its
thermal and battery models), and two inlets accept one (``POST /api/sim/inject``, a ``SimControl`` message on the
graph), so the names, parameters and bounds live here, below all of them.

Names are the alert names in lower case, plus ``non_finite`` (corrupt the physics state: the IMU_FAILURE path of a
diverged simulation, since the sensors stop). Every fault but ``non_finite`` is cleared by a virtual restart (the
scenario ends with the power cycle); the latch of a critical alert only ever clears with one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from vasimov.alerts import (
    ALERT_BMS_LOW_SOC,
    ALERT_BMS_PROTECTION,
    ALERT_IMU_FAULT,
    ALERT_JOINT_OUT_OF_RANGE,
    ALERT_MOTOR_COMM_LOSS,
    ALERT_MOTOR_OVERTEMP,
    ALERT_MOTOR_TEMP_HIGH,
)
from vasimov.joints import ANKLE_PAIRS, joint_index

#: MOTOR_TEMP_HIGH warning and MOTOR_OVERTEMP trip (deg C): the thresholds menlo-sdk quotes (fact sheet ``thermal``).
TEMP_WARNING_C = 60.0
OVERTEMP_C = 80.0
#: Hottest winding temperature an inject may ask for (deg C): the insulation class of small servo motors (class F,
#: 155 deg C) with a margin; beyond, a number is a typo, not a scenario.
MAX_INJECT_TEMP_C = 150.0
#: BMS_LOW_SOC warning below this state of charge (%), the threshold menlo-sdk quotes.
LOW_SOC_PERCENT = 20.0
#: How far past its range (rad) ``joint_out_of_range`` makes a joint's encoder read, by default.
DEFAULT_OUT_OF_RANGE_RAD = 0.3
MAX_OUT_OF_RANGE_RAD = 3.0


class FaultError(ValueError):
    """A request that breaks a rule (HTTP 400); the message names the rule and what would be valid."""


class UnknownJointError(FaultError):
    """A request naming a joint the robot does not have (HTTP 404)."""


@dataclass(frozen=True)
class FaultSpec:
    """One injectable fault: the alert it leads to, which process acts, and its one optional numeric parameter.

    ``plant``: the plant changes the physics or a sensor; ``edge``: the firmware core (its detection, or its thermal
    or battery model) acts. ``param``: the name of the numeric parameter (None: none), with its default and bounds
    (inclusive low, exclusive high when ``high_open``).
    """

    name: str
    alert_id: int
    plant: bool
    edge: bool
    needs_joint: bool
    what: str
    param: str | None = None
    default: float = 0.0
    low: float = 0.0
    high: float = 0.0
    high_open: bool = False


CATALOG: dict[str, FaultSpec] = {s.name: s for s in (
    FaultSpec("non_finite", ALERT_IMU_FAULT, plant=True, edge=False, needs_joint=False,
              what="corrupt the physics state with NaN: the simulation stops, the sensors hold their last reading, "
                   "the firmware latches IMU_FAILURE (a diverged simulation's path)"),
    FaultSpec("imu_failure", ALERT_IMU_FAULT, plant=True, edge=True, needs_joint=False,
              what="the IMU stops updating (orientation, gyro, accelerometer frozen; the physics goes on); the "
                   "firmware's IMU timeout latches IMU_FAILURE"),
    FaultSpec("motor_comm_loss", ALERT_MOTOR_COMM_LOSS, plant=True, edge=True, needs_joint=True,
              what="the joint's motor stops answering on the CAN bus: it goes limp and its reported state freezes "
                   "(an ankle motor takes its whole ankle); the firmware latches MOTOR_COMM_LOSS"),
    FaultSpec("joint_out_of_range", ALERT_JOINT_OUT_OF_RANGE, plant=True, edge=False, needs_joint=True,
              what="the joint's encoder reads past its upper limit (an encoder slip); the firmware's range check on "
                   "the reported positions latches JOINT_OUT_OF_RANGE",
              param="excess_rad", default=DEFAULT_OUT_OF_RANGE_RAD, low=0.15, high=MAX_OUT_OF_RANGE_RAD),
    FaultSpec("motor_overtemp", ALERT_MOTOR_OVERTEMP, plant=False, edge=True, needs_joint=True,
              what="heat the joint's motor winding to temperature_c in the thermal model, which then trips "
                   "MOTOR_OVERTEMP (critical, latches) and cools on its own time constant",
              param="temperature_c", default=85.0, low=OVERTEMP_C, high=MAX_INJECT_TEMP_C),
    FaultSpec("motor_temp_high", ALERT_MOTOR_TEMP_HIGH, plant=False, edge=True, needs_joint=True,
              what="heat the joint's motor winding to temperature_c, between the warning and the trip: "
                   "MOTOR_TEMP_HIGH (warning, no latch) while it stays above 60 C",
              param="temperature_c", default=65.0, low=TEMP_WARNING_C, high=OVERTEMP_C, high_open=True),
    FaultSpec("bms_low_soc", ALERT_BMS_LOW_SOC, plant=False, edge=True, needs_joint=False,
              what="the battery model's state of charge drops to soc_percent: BMS_LOW_SOC (warning, no latch) below "
                   "20 %; the battery block shows the charge and the voltage it gives",
              param="soc_percent", default=15.0, low=1.0, high=LOW_SOC_PERCENT, high_open=True),
    FaultSpec("bms_protection", ALERT_BMS_PROTECTION, plant=False, edge=True, needs_joint=False,
              what="the battery model's pack is empty: its voltage under load sags below the BMS under-voltage "
                   "cut-off, the BMS sets its under-voltage protection flags and the firmware latches "
                   "BMS_PROTECTION"),
)}

#: The names, in catalog order, for error messages and docs.
FAULT_NAMES: tuple[str, ...] = tuple(CATALOG)


@dataclass(frozen=True)
class FaultRequest:
    """A validated inject request. ``joint``: the firmware index of the named joint (None when the fault names
    none); ``value``: the parameter (``spec.param``), its default when not given."""

    spec: FaultSpec
    joint: int | None = None
    value: float = 0.0

    @property
    def name(self) -> str:
        return self.spec.name


def affected_joints(joint: int) -> tuple[int, ...]:
    """The joints a lost motor takes with it: itself, or both joints of its ankle (motors A and B drive the ankle's
    pitch and roll together through the linkage; one without the other holds neither)."""
    for pair in ANKLE_PAIRS:
        if joint in pair:
            return pair
    return (joint,)


def _describe(spec: FaultSpec) -> str:
    parts = ['"fault": "' + spec.name + '"']
    if spec.needs_joint:
        parts.append('"joint": NAME')
    if spec.param is not None:
        parts.append(f'"{spec.param}": {spec.default:g}')
    return "{" + ", ".join(parts) + "}"


def usage() -> str:
    """One line per fault: the request shape."""
    return "; ".join(_describe(s) for s in CATALOG.values())


def parse_fault(payload: Any) -> FaultRequest:
    """``{"fault": NAME, "joint": NAME?, PARAM: number?}`` -> ``FaultRequest``.

    Raises ``FaultError`` naming the rule (an unknown fault lists the valid names; an unknown key, a missing or
    superfluous joint, a parameter out of bounds) and ``UnknownJointError`` for a joint the robot lacks.
    """
    if not isinstance(payload, dict):
        raise FaultError(f"expected a JSON object; valid requests: {usage()}")
    name = payload.get("fault")
    spec = CATALOG.get(name) if isinstance(name, str) else None
    if spec is None:
        raise FaultError(f"unknown fault {name!r}; valid: {', '.join(FAULT_NAMES)}")
    allowed = {"fault"} | ({"joint"} if spec.needs_joint else set()) | ({spec.param} if spec.param else set())
    unknown = set(payload) - allowed
    if unknown:
        raise FaultError(f"{spec.name}: unknown keys {sorted(unknown)}; valid: {_describe(spec)}")
    joint: int | None = None
    if spec.needs_joint:
        raw = payload.get("joint")
        if not isinstance(raw, str) or not raw:
            raise FaultError(f"{spec.name} needs a joint name: {_describe(spec)}")
        try:
            joint = joint_index(raw)
        except KeyError as exc:
            raise UnknownJointError(str(exc.args[0])) from None
    value = spec.default
    if spec.param is not None and spec.param in payload:
        raw = payload[spec.param]
        if not isinstance(raw, int | float) or isinstance(raw, bool) or not math.isfinite(raw):
            raise FaultError(f"{spec.name}: {spec.param} must be a finite number")
        value = float(raw)
        too_high = value >= spec.high if spec.high_open else value > spec.high
        if value < spec.low or too_high:
            bracket = ")" if spec.high_open else "]"
            raise FaultError(f"{spec.name}: {spec.param} must lie in [{spec.low:g}, {spec.high:g}{bracket}, "
                             f"got {value:g}")
    return FaultRequest(spec, joint, value)


def from_fields(fault: str, joint: str, value: float) -> FaultRequest:
    """The request a ``SimControl`` message carries (empty ``fault``: ``non_finite``, the message's old meaning;
    empty ``joint``: none; ``value`` NaN: the default), through the same rules."""
    payload: dict[str, Any] = {"fault": fault or "non_finite"}
    spec = CATALOG.get(payload["fault"])
    if joint:
        payload["joint"] = joint
    if spec is not None and spec.param is not None and math.isfinite(value):
        payload[spec.param] = value
    return parse_fault(payload)
