"""The SDK wire codecs: tables of good and bad datagrams, fuzzing, and the SDK's own encoder/decoder as the oracle."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
from asimov_protocol.v1 import asimov_command_pb2, asimov_state_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from menlo.asimov import Mode
from menlo.asimov._command import ModeCommand, Trajectory, Velocity
from menlo.asimov.transport._wire import encode_command, state_from_robot_state

from vasimov.command_rules import Reason
from vasimov.commands import (
    CommandSource,
    DampCommand,
    Rejection,
    StandCommand,
    TrajectoryCommand,
    VelocityCommand,
)
from vasimov.joints import NUM_JOINTS
from vasimov_bridge.sdk_wire import (
    FILLED_STATE_FIELDS,
    MAX_COMMAND_BYTES,
    AlertEntry,
    BatteryReading,
    RejectionCounter,
    StateFrame,
    decode_command,
    decode_state,
    encode_state,
)

# A STAND-like pose inside the ankle limits (firmware STAND ankles: L=(-0.606, 0.606), R=(0.606, -0.606)).
POSE = tuple(
    {4: -0.606, 5: 0.606, 10: 0.606, 11: -0.606}.get(i, 0.01 * i) for i in range(NUM_JOINTS)
)


def cmd(**fields: object) -> asimov_command_pb2.RobotCommand:
    fields.setdefault("protocol_version", 1)
    return asimov_command_pb2.RobotCommand(**fields)


def raw(**fields: object) -> bytes:
    return cmd(**fields).SerializeToString()


def trajectory_bytes(positions=None, kp=None, kd=None, **fields: object) -> bytes:
    fields.setdefault("mode", 2)
    fields.setdefault("command_control", 1)
    m = cmd(**fields)
    m.all_trajectory.positions.extend(POSE if positions is None else positions)
    if kp is not None:
        m.all_trajectory.kp.extend(kp)
    if kd is not None:
        m.all_trajectory.kd.extend(kd)
    return m.SerializeToString()


def rejected(result: object, reason: Reason) -> None:
    assert isinstance(result, Rejection), result
    assert result.reason == reason, result
    assert result.detail


# ── the SDK's own bytes decode to the right typed commands ─────────────────────────────────────────────────────


def test_sdk_damp_is_bare_and_decodes_to_damp() -> None:
    data = encode_command(ModeCommand("damp"), 7)
    parsed = asimov_command_pb2.RobotCommand.FromString(data)
    assert parsed.WhichOneof("command_data") is None and parsed.mode == 0
    assert decode_command(data) == DampCommand(source=CommandSource.UDP, sequence=7)


def test_sdk_stand_decodes_to_stand() -> None:
    assert decode_command(encode_command(ModeCommand("stand"), 1)) == StandCommand(sequence=1)


def test_sdk_velocity_decodes_with_its_values() -> None:
    got = decode_command(encode_command(Velocity(0.25, -0.1, 0.5), 3))
    assert isinstance(got, VelocityCommand)
    assert (got.vx, got.vy, got.vyaw) == pytest.approx((0.25, -0.1, 0.5), abs=1e-6)
    assert got.sequence == 3 and got.source is CommandSource.UDP


def test_sdk_zero_velocity_is_an_empty_policy_and_still_a_velocity() -> None:
    data = encode_command(Velocity(0.0, 0.0, 0.0), 9)
    assert b"\x1a\x00" in data  # the empty `policy` sub-message
    assert decode_command(data) == VelocityCommand(0.0, 0.0, 0.0, sequence=9)


def test_sdk_trajectory_carries_ankle_pitch_roll_on_the_wire() -> None:
    got = decode_command(encode_command(Trajectory(POSE), 11))
    assert isinstance(got, TrajectoryCommand)
    assert got.kp is None and got.kd is None
    # The SDK rewrites (A, B) -> (pitch, roll): pitch = (A - B) / 4.04, roll = -(A + B) / 1.6.
    assert got.positions[4] == pytest.approx(-0.3, abs=1e-6)
    assert got.positions[5] == pytest.approx(0.0, abs=1e-6)
    assert got.positions[10] == pytest.approx(0.3, abs=1e-6)
    assert got.positions[11] == pytest.approx(0.0, abs=1e-6)
    assert got.positions[12] == pytest.approx(POSE[12], abs=1e-6)


def test_sdk_trajectory_with_gains() -> None:
    kp = tuple(float(10 + i) for i in range(NUM_JOINTS))
    kd = tuple(0.5 for _ in range(NUM_JOINTS))
    got = decode_command(encode_command(Trajectory(POSE, kp, kd), 2))
    assert isinstance(got, TrajectoryCommand)
    assert got.kp == pytest.approx(kp) and got.kd == pytest.approx(kd)


def test_largest_valid_command_fits_the_size_cap_with_margin() -> None:
    big = encode_command(Trajectory(POSE, (500.0,) * NUM_JOINTS, (5.0,) * NUM_JOINTS), 0xFFFFFFFF)
    assert len(big) * 4 < MAX_COMMAND_BYTES
    assert isinstance(decode_command(big), TrajectoryCommand)


def test_sequence_and_timestamp_are_not_checked() -> None:
    # Each CLI process restarts its sequence at 1; the timestamp is the sender's wall clock.
    for seq, ts in ((1000, 5), (1, 0), (1, 0), (0, 2**64 - 1)):
        got = decode_command(raw(mode=1, sequence=seq, timestamp_us=ts))
        assert got == StandCommand(sequence=seq)


def test_source_is_attached() -> None:
    assert decode_command(raw(), CommandSource.SCRIPT) == DampCommand(source=CommandSource.SCRIPT)


def test_trajectory_with_unset_command_control_is_accepted() -> None:
    m = cmd(mode=2)
    m.all_trajectory.positions.extend(POSE)
    assert isinstance(decode_command(m.SerializeToString()), TrajectoryCommand)


def test_velocity_with_unset_mode_is_accepted() -> None:
    m = cmd()
    m.policy.vx = 0.1
    got = decode_command(m.SerializeToString())
    assert isinstance(got, VelocityCommand) and got.vx == pytest.approx(0.1)


def test_damp_ignores_command_control() -> None:
    assert decode_command(raw(mode=0, command_control=1)) == DampCommand()


def test_unknown_fields_are_ignored() -> None:
    data = raw(mode=1, sequence=4) + bytes([0xF8, 0x07, 0x01])  # field 127, varint 1
    assert decode_command(data) == StandCommand(sequence=4)


# ── malformed classes ─────────────────────────────────────────────────────────────────────────────────────────


def _velocity(vx: float, vy: float = 0.0, vyaw: float = 0.0) -> bytes:
    m = cmd(mode=2)
    m.policy.vx, m.policy.vy, m.policy.vyaw = vx, vy, vyaw
    return m.SerializeToString()


def _eol() -> bytes:
    m = cmd(mode=2)
    m.eol.motor_id = 3
    return m.SerializeToString()


def _stand_with_policy() -> bytes:
    m = cmd(mode=1)
    m.policy.vx = 0.1
    return m.SerializeToString()


def _policy_as_trajectory_control() -> bytes:
    m = cmd(mode=2, command_control=1)
    m.policy.vx = 0.1
    return m.SerializeToString()


_SDK_TRAJECTORY = encode_command(Trajectory(POSE), 5)
_ONES = (1.0,) * NUM_JOINTS

MALFORMED = [
    ("empty", b"", Reason.EMPTY_DATAGRAM),
    ("garbage", b"\xff" * 10, Reason.PARSE),
    ("garbage_text", b"GET /api/version HTTP/1.1\r\n\r\n", Reason.PARSE),
    ("truncated", _SDK_TRAJECTORY[:-7], Reason.PARSE),
    ("oversized_junk", b"\x00" * (MAX_COMMAND_BYTES + 1), Reason.OVERSIZED),
    ("oversized_valid", raw(mode=1) + bytes([0xFA, 0x07]) + b"\x80\x10" + b"x" * 2048, Reason.OVERSIZED),
    ("protocol_version_0", raw(mode=1, protocol_version=0), Reason.PROTOCOL_VERSION),
    ("protocol_version_2", raw(mode=1, protocol_version=2), Reason.PROTOCOL_VERSION),
    ("nan_velocity", _velocity(math.nan), Reason.NON_FINITE),
    ("inf_velocity", _velocity(0.0, math.inf), Reason.NON_FINITE),
    ("neg_inf_yaw", _velocity(0.0, 0.0, -math.inf), Reason.NON_FINITE),
    ("float32_overflow", _velocity(1e39), Reason.NON_FINITE),
    ("nan_position", trajectory_bytes(positions=(math.nan, *POSE[1:])), Reason.NON_FINITE),
    ("24_positions", trajectory_bytes(positions=POSE[:24]), Reason.BAD_LENGTH),
    ("26_positions", trajectory_bytes(positions=(*POSE, 0.0)), Reason.BAD_LENGTH),
    ("empty_trajectory", trajectory_bytes(positions=()), Reason.EMPTY_TRAJECTORY),
    ("empty_trajectory_with_gains", trajectory_bytes(positions=(), kp=_ONES, kd=_ONES), Reason.EMPTY_TRAJECTORY),
    ("eol", _eol(), Reason.UNSUPPORTED),
    ("move_without_payload", raw(mode=2), Reason.UNKNOWN_MODE),
    ("fault_damp_without_payload", raw(mode=5), Reason.UNKNOWN_MODE),
    ("unknown_mode", raw(mode=7), Reason.UNKNOWN_MODE),
    ("negative_mode", raw(mode=-1), Reason.UNKNOWN_MODE),
    ("stand_with_policy", _stand_with_policy(), Reason.UNKNOWN_COMMAND),
    ("policy_with_trajectory_control", _policy_as_trajectory_control(), Reason.UNKNOWN_COMMAND),
    ("trajectory_with_unknown_control", trajectory_bytes(command_control=9), Reason.UNKNOWN_COMMAND),
]


@pytest.mark.parametrize(
    "data",
    [trajectory_bytes(kp=_ONES), trajectory_bytes(kd=_ONES), trajectory_bytes(kp=_ONES[:24], kd=_ONES[:24]),
     trajectory_bytes(kp=_ONES, kd=_ONES[:24]), trajectory_bytes(kp=(math.inf, *_ONES[1:]), kd=_ONES),
     trajectory_bytes(kp=_ONES, kd=(*_ONES[:-1], math.nan))],
    ids=["kp_without_kd", "kd_without_kp", "short_gains", "mismatched_gains", "inf_kp", "nan_kd"],
)
def test_gains_never_drop_the_setpoint_they_travel_on_for_the_firmware_to_decide(data: bytes) -> None:
    """The Menlo API page lists only positions among a trajectory's drop conditions and replaces gains it cannot
    use with Edge's table: the setpoint still counts, the gains go on as sent (the firmware core decides)."""
    cmd = decode_command(data)
    assert isinstance(cmd, TrajectoryCommand)
    assert cmd.positions == pytest.approx(POSE)
    sent = trajectory_bytes()  # the same positions without gains decode to the same setpoint
    assert decode_command(sent).positions == cmd.positions


@pytest.mark.parametrize(("data", "reason"), [(d, r) for _, d, r in MALFORMED], ids=[n for n, _, _ in MALFORMED])
def test_malformed_commands_are_rejected_by_name(data: bytes, reason: Reason) -> None:
    rejected(decode_command(data), reason)


def test_non_bytes_input_is_a_rejection_not_an_exception() -> None:
    rejected(decode_command("not bytes"), Reason.PARSE)  # type: ignore[arg-type]


def test_protocol_version_rejection_names_what_is_valid() -> None:
    r = decode_command(raw(mode=1, protocol_version=2, sequence=4))
    assert isinstance(r, Rejection)
    assert "1" in r.detail and r.extra["protocol_version"] == 2 and r.extra["sequence"] == 4


def test_non_finite_rejection_names_the_field_and_index() -> None:
    r = decode_command(trajectory_bytes(positions=(*POSE[:3], math.inf, *POSE[4:])))
    assert isinstance(r, Rejection) and r.extra["field"] == "positions" and r.extra["index"] == 3


# ── fuzzing: never raises, always a command or a Rejection, and every command obeys the rules ──────────────────

_COMMAND_TYPES = (DampCommand, StandCommand, VelocityCommand, TrajectoryCommand)


def _check_invariants(result: object) -> None:
    assert isinstance(result, (*_COMMAND_TYPES, Rejection)), result
    if isinstance(result, Rejection):
        assert result.reason in set(Reason)
    if isinstance(result, VelocityCommand):
        assert all(math.isfinite(v) for v in (result.vx, result.vy, result.vyaw))
    if isinstance(result, TrajectoryCommand):
        assert len(result.positions) == NUM_JOINTS
        assert all(math.isfinite(v) for v in result.positions)
        # gains are numbers but may be non-finite or short: by design (command_rules.validate, the Menlo API page)
        # they never drop a setpoint; the firmware replaces gains it cannot use with its own table
        for values in (result.kp or (), result.kd or ()):
            assert all(isinstance(v, float) for v in values)


@given(st.binary(max_size=3000))
@settings(max_examples=1500, deadline=None)
def test_fuzz_random_bytes(data: bytes) -> None:
    _check_invariants(decode_command(data))


_floats = st.floats(width=32, allow_nan=True, allow_infinity=True)
_float_lists = st.one_of(
    st.lists(_floats, min_size=NUM_JOINTS, max_size=NUM_JOINTS),
    st.lists(_floats, max_size=30),
)


@st.composite
def _valid_ish_commands(draw: st.DrawFn) -> bytes:
    m = asimov_command_pb2.RobotCommand(
        mode=draw(st.sampled_from([0, 1, 2, 5]) | st.integers(-(2**31), 2**31 - 1)),
        command_control=draw(st.sampled_from([0, 1]) | st.integers(-(2**31), 2**31 - 1)),
        protocol_version=draw(st.sampled_from([1, 1, 1, 0, 2]) | st.integers(0, 2**32 - 1)),
        sequence=draw(st.integers(0, 2**32 - 1)),
        timestamp_us=draw(st.integers(0, 2**64 - 1)),
    )
    payload = draw(st.sampled_from(["none", "policy", "trajectory", "eol"]))
    if payload == "policy":
        m.policy.vx, m.policy.vy, m.policy.vyaw = draw(st.tuples(_floats, _floats, _floats))
    elif payload == "trajectory":
        m.all_trajectory.positions.extend(draw(_float_lists))
        if draw(st.booleans()):
            m.all_trajectory.kp.extend(draw(_float_lists))
        if draw(st.booleans()):
            m.all_trajectory.kd.extend(draw(_float_lists))
    elif payload == "eol":
        m.eol.motor_id = draw(st.integers(0, 2**32 - 1))
    data = m.SerializeToString()
    # Sometimes corrupt it: flip, cut or splice bytes.
    action = draw(st.sampled_from(["keep", "keep", "flip", "cut", "splice"]))
    if action == "flip" and data:
        i = draw(st.integers(0, len(data) - 1))
        data = data[:i] + bytes([data[i] ^ draw(st.integers(1, 255))]) + data[i + 1 :]
    elif action == "cut" and data:
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif action == "splice":
        data = data + draw(st.binary(max_size=40))
    return data


@given(_valid_ish_commands())
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_fuzz_valid_ish_protobufs(data: bytes) -> None:
    _check_invariants(decode_command(data))


# ── state ─────────────────────────────────────────────────────────────────────────────────────────────────────


def make_frame(**overrides: object) -> StateFrame:
    fields: dict[str, object] = dict(
        timestamp_us=123_456,
        sequence=42,
        current_mode=1,
        joint_pos=POSE,
        joint_vel=tuple(0.1 * i for i in range(NUM_JOINTS)),
        joint_current=tuple(0.5 + i for i in range(NUM_JOINTS)),
        joint_temp=tuple(30.0 + i for i in range(NUM_JOINTS)),
        base_ang_vel=(0.01, -0.02, 0.03),
        projected_gravity=(0.05, -0.02, -0.998),
        base_quat=(0.999, 0.01, -0.02, 0.03),
        error_flags=0x101,
        active_alerts=(
            AlertEntry(id=7, severity=0, value=1, threshold=2, first_set_us=100, source_id=3),
            {"id": 17, "severity": 1, "value": 62, "threshold": 60},
        ),
        battery=BatteryReading(voltage_v=48.2, current_a=-3.5, soc_percent=76.0, max_cell_temp_c=31.0),
    )
    fields.update(overrides)
    return StateFrame(**fields)  # type: ignore[arg-type]


def test_filled_fields_exist_in_robot_state() -> None:
    names = {f.name for f in asimov_state_pb2.RobotState.DESCRIPTOR.fields}
    assert set(FILLED_STATE_FIELDS) <= names
    assert len(set(FILLED_STATE_FIELDS)) == len(FILLED_STATE_FIELDS)


def test_encode_decode_round_trip() -> None:
    frame = make_frame()
    back = decode_state(encode_state(frame))
    assert isinstance(back, StateFrame)
    assert (back.timestamp_us, back.sequence, back.current_mode, back.error_flags) == (123_456, 42, 1, 0x101)
    for name in ("joint_pos", "joint_vel", "joint_current", "joint_temp", "base_ang_vel", "projected_gravity"):
        assert getattr(back, name) == pytest.approx(getattr(frame, name), abs=1e-5), name
    assert back.base_quat == pytest.approx(frame.base_quat, abs=1e-6)
    assert back.active_alerts == frame.active_alerts
    assert back.battery is not None and back.battery.soc_percent == pytest.approx(76.0)
    assert back.protocol_version == 1


def test_sdk_reads_every_filled_field() -> None:
    msg = asimov_state_pb2.RobotState.FromString(encode_state(make_frame()))
    s = state_from_robot_state(msg, None)
    assert s.mode is Mode.STAND
    assert len(s.joints) == NUM_JOINTS
    assert s.joints[4].pos == pytest.approx(-0.606, abs=1e-6)
    assert s.joints[3].temp == pytest.approx(33.0) and s.joints[3].current == pytest.approx(3.5)
    assert s.gravity == pytest.approx((0.05, -0.02, -0.998), abs=1e-6)
    assert s.gyro == pytest.approx((0.01, -0.02, 0.03), abs=1e-6)
    assert s.quat == pytest.approx((0.999, 0.01, -0.02, 0.03), abs=1e-6)
    assert s.error_flags == 0x101 and s.faulted
    assert [(a.id, a.severity, a.name) for a in s.alerts] == [(7, 0, "FALL_DETECTED"), (17, 1, "MOTOR_TEMP_HIGH")]
    assert s.alerts[0].first_set_us == 100 and s.alerts[0].source_id == 3
    assert s.battery is not None and s.battery.voltage_v == pytest.approx(48.2, abs=1e-4)
    assert s.sequence == 42 and s.fw_timestamp_us == 123_456 and s.protocol_version == 1


def test_omitted_current_temp_and_battery_read_as_not_reported() -> None:
    frame = make_frame(joint_current=None, joint_temp=None, battery=None, active_alerts=(), error_flags=0)
    msg = asimov_state_pb2.RobotState.FromString(encode_state(frame))
    assert not msg.HasField("battery") and len(msg.joint_current) == 0
    s = state_from_robot_state(msg, None)
    assert all(j.current is None and j.temp is None for j in s.joints)
    assert s.battery is None and not s.faulted
    back = decode_state(encode_state(frame))
    assert isinstance(back, StateFrame) and back.joint_current is None and back.battery is None


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"joint_pos": POSE[:24]}, "joint_pos"),
        ({"joint_vel": (0.0,) * 26}, "joint_vel"),
        ({"joint_temp": (1.0,) * 3}, "joint_temp"),
        ({"projected_gravity": (0.0, -1.0)}, "projected_gravity"),
        ({"base_quat": (1.0, 0.0, 0.0)}, "base_quat"),
        ({"joint_vel": (math.nan,) * NUM_JOINTS}, "joint_vel"),
        ({"projected_gravity": (0.0, math.inf, -1.0)}, "projected_gravity"),
        ({"sequence": 2**32}, "sequence"),
        ({"sequence": -1}, "sequence"),
        ({"timestamp_us": 2**64}, "timestamp_us"),
        ({"error_flags": 2**32}, "error_flags"),
        ({"current_mode": 2**31}, "current_mode"),
        ({"active_alerts": [AlertEntry(id=i, severity=2) for i in range(49)]}, "active_alerts"),
        ({"active_alerts": [{"id": 1, "severity": 0, "colour": "red"}]}, "colour"),
    ],
)
def test_bad_frames_fail_where_they_are_built(overrides: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        make_frame(**overrides)


def test_non_finite_battery_is_refused() -> None:
    with pytest.raises(ValueError, match="voltage_v"):
        BatteryReading(voltage_v=math.nan, current_a=0.0, soc_percent=50.0, max_cell_temp_c=30.0)


def test_integer_likes_are_accepted_and_floats_refused() -> None:
    frame = make_frame(sequence=np.uint32(7), current_mode=Mode.MOVE, error_flags=np.int64(0))
    assert type(frame.sequence) is int and frame.sequence == 7 and type(frame.current_mode) is int
    assert isinstance(decode_state(encode_state(frame)), StateFrame)
    with pytest.raises(ValueError, match="sequence"):
        make_frame(sequence=7.0)
    with pytest.raises(ValueError, match="current_mode"):
        make_frame(current_mode=True)


def test_decode_state_rejects_garbage() -> None:
    rejected(decode_state(b"\xff\xff\xff"), Reason.PARSE)
    rejected(decode_state(asimov_state_pb2.RobotState(joint_pos=[0.0] * 6).SerializeToString()), Reason.BAD_LENGTH)
    msg = asimov_state_pb2.RobotState.FromString(encode_state(make_frame()))  # a valid frame, then a NaN gyro
    msg.base_ang_vel[0] = math.nan
    rejected(decode_state(msg.SerializeToString()), Reason.NON_FINITE)


# ── counters ──────────────────────────────────────────────────────────────────────────────────────────────────


def test_rejection_counter_is_a_thread_safe_mapping() -> None:
    c = RejectionCounter()

    def bump() -> None:
        for _ in range(2000):
            c.add("PARSE")
            c.add(Reason.NON_FINITE)

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert c["PARSE"] == 8000 and c["NON_FINITE"] == 8000
    assert dict(c) == {"PARSE": 8000, "NON_FINITE": 8000} and c.total == 16000 and len(c) == 2
    assert c.get("BAD_LENGTH", 0) == 0
    c.clear()
    assert c.snapshot() == {}
