"""The injectable-fault catalog, the battery model, the thermal model's injected heat, and the firmware's answer to
each fault, as pure code (no graph): every rule the HTTP inlet, the plant and the edge share."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_firmware import DT, Rig

from vasimov.alerts import (
    ALERT_BMS_LOW_SOC,
    ALERT_BMS_PROTECTION,
    ALERT_IMU_FAULT,
    ALERT_JOINT_OUT_OF_RANGE,
    ALERT_MOTOR_COMM_LOSS,
    ALERT_MOTOR_OVERTEMP,
    ALERT_MOTOR_TEMP_HIGH,
    alert_severity,
    latched_flags,
)
from vasimov.faults import (
    CATALOG,
    FAULT_NAMES,
    FaultError,
    UnknownJointError,
    affected_joints,
    from_fields,
    parse_fault,
)
from vasimov.joints import ANKLE_PAIRS, NUM_JOINTS, RANGE_HI, joint_index
from vasimov_edge.battery import PROT_CELL_UNDERVOLT, PROT_PACK_UNDERVOLT, BatteryModel, BatteryParams, ocv_cell
from vasimov_edge.firmware import FirmwareParams, Mode
from vasimov_edge.thermal import ThermalModel, ThermalParams

ZEROS = np.zeros(NUM_JOINTS)


# ── the catalog and its parser ────────────────────────────────────────────────────────────────────────────────
def test_every_fault_names_a_catalog_alert_and_its_severity() -> None:
    for spec in CATALOG.values():
        assert alert_severity(spec.alert_id) in (0, 1)
    assert {s.name for s in CATALOG.values() if alert_severity(s.alert_id) == 1} == {"motor_temp_high",
                                                                                     "bms_low_soc"}


def test_parse_accepts_each_fault_with_its_defaults() -> None:
    for name, spec in CATALOG.items():
        payload = {"fault": name} | ({"joint": "L_Knee"} if spec.needs_joint else {})
        req = parse_fault(payload)
        assert req.name == name and req.value == spec.default
        assert (req.joint == joint_index("L_Knee")) if spec.needs_joint else req.joint is None
    assert parse_fault({"fault": "motor_overtemp", "joint": "left_knee_joint", "temperature_c": 90}).value == 90.0


@pytest.mark.parametrize("payload, words", [
    ({"fault": "meltdown"}, ["unknown fault 'meltdown'", *FAULT_NAMES]),
    ({}, ["unknown fault None"]),
    ([1], ["JSON object"]),
    ({"fault": "motor_overtemp"}, ["needs a joint"]),
    ({"fault": "motor_overtemp", "joint": "L_Knee", "temperature_c": 70}, ["temperature_c must lie in [80, 150]"]),
    ({"fault": "motor_temp_high", "joint": "L_Knee", "temperature_c": 80}, ["[60, 80)"]),
    ({"fault": "motor_overtemp", "joint": "L_Knee", "temperature_c": math.nan}, ["finite"]),
    ({"fault": "motor_overtemp", "joint": "L_Knee", "temperature_c": True}, ["finite number"]),
    ({"fault": "bms_low_soc", "soc_percent": 25}, ["soc_percent"]),
    ({"fault": "imu_failure", "joint": "L_Knee"}, ["unknown keys ['joint']"]),
    ({"fault": "non_finite", "extra": 1}, ["unknown keys"]),
])
def test_bad_requests_are_refused_naming_the_rule(payload: object, words: list[str]) -> None:
    with pytest.raises(FaultError) as exc:
        parse_fault(payload)
    assert not isinstance(exc.value, UnknownJointError)
    for w in words:
        assert w in str(exc.value)


def test_an_unknown_joint_is_its_own_error() -> None:
    with pytest.raises(UnknownJointError, match="L_Knee"):
        parse_fault({"fault": "motor_comm_loss", "joint": "L_Tail"})


def test_message_fields_go_through_the_same_rules() -> None:
    assert from_fields("", "", math.nan).name == "non_finite"  # the message's old meaning
    assert from_fields("bms_low_soc", "", math.nan).value == 15.0
    assert from_fields("bms_low_soc", "", 5.0).value == 5.0
    with pytest.raises(FaultError):
        from_fields("bms_low_soc", "", 50.0)
    with pytest.raises(UnknownJointError):
        from_fields("motor_comm_loss", "nope", math.nan)


def test_an_ankle_motor_takes_its_whole_ankle() -> None:
    a, b = ANKLE_PAIRS[0]
    assert affected_joints(a) == (a, b) == affected_joints(b)
    assert affected_joints(joint_index("L_Knee")) == (joint_index("L_Knee"),)


# ── battery model ─────────────────────────────────────────────────────────────────────────────────────────────
def test_battery_boots_full_sags_under_load_and_drains() -> None:
    bat = BatteryModel()
    p = bat.params
    idle = bat.step(ZEROS, ZEROS, ZEROS, 1.0)
    ocv = p.cells * ocv_cell(100.0)
    assert idle.voltage_v < ocv and idle.current_a < 0 and idle.protection_flags == 0
    assert idle.voltage_v * -idle.current_a == pytest.approx(p.idle_w)
    ocv_now = p.cells * ocv_cell(idle.soc_percent)
    assert ocv_now - idle.voltage_v == pytest.approx(-idle.current_a * p.internal_resistance_ohm)
    current = np.full(NUM_JOINTS, 5.0)
    loaded = bat.step(ZEROS, ZEROS, current, 1.0)
    assert loaded.voltage_v < idle.voltage_v  # copper loss of 25 motors at 5 A: 219 W more
    soc0 = bat.soc_percent
    bat.step(ZEROS, ZEROS, ZEROS, 3600.0)
    drawn_ah = p.idle_w / idle.voltage_v  # ~1.1 A for an hour
    assert soc0 - bat.soc_percent == pytest.approx(drawn_ah / p.capacity_ah * 100.0, rel=0.01)


def test_an_empty_pack_trips_the_bms_after_its_delay_and_stays_tripped() -> None:
    bat = BatteryModel()
    bat.set_soc(0.0)
    first = bat.step(ZEROS, ZEROS, ZEROS, 0.5)
    assert first.voltage_v < bat.params.cells * bat.params.cell_cutoff_v and first.protection_flags == 0
    tripped = bat.step(ZEROS, ZEROS, ZEROS, 0.5)
    assert tripped.protection_flags == PROT_CELL_UNDERVOLT | PROT_PACK_UNDERVOLT
    bat.set_soc(50.0)
    assert bat.step(ZEROS, ZEROS, ZEROS, 0.02).protection_flags != 0  # a BMS stays open until recharged
    bat.reset()
    assert bat.reading.protection_flags == 0 and bat.soc_percent == 100.0


def test_a_load_spike_shorter_than_the_delay_does_not_trip_a_full_pack() -> None:
    bat = BatteryModel()
    spike = np.full(NUM_JOINTS, 80.0)  # 25 motors at 80 A: ~56 kW of copper loss, the voltage collapses
    r = bat.step(ZEROS, ZEROS, spike, 0.5)
    assert r.voltage_v == pytest.approx(0.5 * bat.params.cells * ocv_cell(bat.soc_percent), rel=1e-3)
    assert bat.step(ZEROS, ZEROS, ZEROS, 0.02).protection_flags == 0


def test_battery_params_are_validated() -> None:
    with pytest.raises(ValueError, match="capacity_ah"):
        BatteryParams(capacity_ah=0.0)
    with pytest.raises(ValueError, match="boot_soc_percent"):
        BatteryParams(boot_soc_percent=120.0)


# ── thermal model: injected heat is the model's own state, and comes out again ──────────────────────────────────
def test_injected_heat_cools_with_the_model_and_can_be_taken_out() -> None:
    m = ThermalModel(ThermalParams(time_constant_s=10.0))
    knee = joint_index("L_Knee")
    tau = np.zeros(NUM_JOINTS)
    tau[knee] = 20.0
    ref = ThermalModel(ThermalParams(time_constant_s=10.0))
    for _ in range(10):
        m.step(tau, 1.0)
        ref.step(tau, 1.0)
    m.inject_heat(knee, 90.0)
    assert m.temperature[knee] == 90.0
    for _ in range(5):
        m.step(tau, 1.0)
        ref.step(tau, 1.0)
    assert ref.temperature[knee] < m.temperature[knee] < 90.0
    m.clear_injected()
    np.testing.assert_allclose(m.temperature, ref.temperature, atol=1e-9)


# ── the firmware's answer to each fault ─────────────────────────────────────────────────────────────────────────
def _standing_rig(**kw: object) -> Rig:
    rig = Rig(**kw)
    rig.tick(1)
    return rig


@pytest.mark.parametrize("payload, alert_id", [
    ({"fault": "imu_failure"}, ALERT_IMU_FAULT),
    ({"fault": "motor_comm_loss", "joint": "R_Elbow"}, ALERT_MOTOR_COMM_LOSS),
    ({"fault": "motor_overtemp", "joint": "R_Elbow"}, ALERT_MOTOR_OVERTEMP),
    ({"fault": "bms_protection"}, ALERT_BMS_PROTECTION),
])
def test_a_critical_fault_latches_damp_with_its_flag_until_a_restart(payload: dict, alert_id: int) -> None:
    rig = _standing_rig()
    rig.fw.inject(parse_fault(payload))
    out = rig.tick(round(1.5 / DT))  # the BMS trips after its 1 s delay
    bit = latched_flags(alert_id)
    assert out.fault_latched and out.mode is Mode.DAMP and out.error_flags & bit == bit
    entry = next(a for a in out.alerts if a.id == alert_id)
    assert entry.severity == 0
    if payload.get("joint"):
        assert entry.source_id == joint_index(payload["joint"])
    rig.fw.restart()
    rig.k = 0
    out = rig.tick(round(1.5 / DT))
    assert not out.fault_latched and out.error_flags == 0 and out.alerts == ()


@pytest.mark.parametrize("payload, alert_id", [
    ({"fault": "motor_temp_high", "joint": "R_Elbow"}, ALERT_MOTOR_TEMP_HIGH),
    ({"fault": "bms_low_soc", "soc_percent": 12}, ALERT_BMS_LOW_SOC),
])
def test_a_warning_fault_does_not_latch_and_a_restart_clears_it(payload: dict, alert_id: int) -> None:
    rig = _standing_rig()
    rig.fw.inject(parse_fault(payload))
    out = rig.tick(5)
    entry = next(a for a in out.alerts if a.id == alert_id)
    assert entry.severity == 1 and not out.fault_latched and out.error_flags == 0
    if alert_id == ALERT_BMS_LOW_SOC:
        assert entry.value == 12 and out.battery is not None and out.battery.soc_percent == pytest.approx(12, abs=0.01)
    rig.fw.restart()
    rig.k = 0
    out = rig.tick(2)
    assert out.alerts == () and out.battery is not None and out.battery.soc_percent > 99.9


def test_a_joint_reading_past_its_range_latches_joint_out_of_range() -> None:
    rig = _standing_rig()
    knee = joint_index("L_Knee")
    rig.q = rig.q.copy()
    rig.q[knee] = RANGE_HI[knee] + 0.05  # inside the margin: a joint pressed into its soft limit
    out = rig.tick(3)
    assert not out.fault_latched
    rig.q[knee] = RANGE_HI[knee] + 0.3
    out = rig.tick(1)
    assert out.fault_latched and out.error_flags == latched_flags(ALERT_JOINT_OUT_OF_RANGE)
    entry = next(a for a in out.alerts if a.id == ALERT_JOINT_OUT_OF_RANGE)
    assert entry.source_id == knee and entry.value == 300 and entry.threshold == 100


def test_the_range_check_does_not_add_to_an_earlier_latch() -> None:
    rig = _standing_rig()
    rig.fw.inject(parse_fault({"fault": "imu_failure"}))
    rig.tick(1)
    knee = joint_index("L_Knee")
    rig.q = rig.q.copy()
    rig.q[knee] = RANGE_HI[knee] + 0.5  # a limp joint slammed by what latched
    out = rig.tick(2)
    assert out.error_flags == latched_flags(ALERT_IMU_FAULT)


def test_the_battery_block_is_reported_and_can_be_switched_off() -> None:
    out = _standing_rig().tick(1)
    assert out.battery is not None and out.battery.soc_percent > 99.9 and out.battery.voltage_v > 50.0
    assert _standing_rig(battery_model=False).tick(1).battery is None
    assert FirmwareParams().battery_model
