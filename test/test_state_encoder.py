"""The direct RobotState encoder (vasimov_bridge.state_encoder) writes exactly the bytes asimov_protocol's own
generated class writes, for any frame the bridge can build: random values, absent optional fields, alerts, battery
blocks with zero and negative-zero readings, integers at their range ends, floats that round to float32 zero or
overflow it."""

from __future__ import annotations

import math

from asimov_protocol.v1 import asimov_state_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from vasimov.joints import NUM_JOINTS
from vasimov_bridge import sdk_wire, state_encoder
from vasimov_bridge.sdk_wire import AlertEntry, BatteryReading, StateFrame

U32 = st.integers(0, (1 << 32) - 1)
U64 = st.integers(0, (1 << 64) - 1)
# finite doubles: ordinary values, exact zeros of both signs, subnormal-to-float32 and beyond-float32 magnitudes
FLOATS = st.one_of(st.floats(-1e4, 1e4), st.sampled_from([0.0, -0.0, 1e-50, -1e-45, 3.4e38, 3.5e38, -1e39]),
                   st.floats(allow_nan=False, allow_infinity=False))


def floats(n: int) -> st.SearchStrategy[list[float]]:
    return st.lists(FLOATS, min_size=n, max_size=n)


ALERTS = st.builds(AlertEntry, id=U32, severity=U32, value=U32, threshold=U32, first_set_us=U64, source_id=U32)
BATTERY = st.builds(BatteryReading, voltage_v=FLOATS, current_a=FLOATS, soc_percent=FLOATS, max_cell_temp_c=FLOATS,
                    protection_flags=U32)
FRAMES = st.builds(
    StateFrame,
    timestamp_us=U64, sequence=U32, current_mode=st.integers(-(1 << 31), (1 << 31) - 1),
    joint_pos=floats(NUM_JOINTS), joint_vel=floats(NUM_JOINTS), base_ang_vel=floats(3),
    projected_gravity=floats(3), base_quat=floats(4),
    joint_current=st.none() | floats(NUM_JOINTS), joint_temp=st.none() | floats(NUM_JOINTS),
    error_flags=U32, active_alerts=st.lists(ALERTS, max_size=sdk_wire.MAX_ALERTS),
    battery=st.none() | BATTERY, protocol_version=U32,
)


@settings(max_examples=400, deadline=None)
@given(FRAMES)
def test_direct_encoder_is_byte_identical_to_asimov_protocol(frame: StateFrame) -> None:
    expected = sdk_wire.encode_state_protobuf(frame)
    assert sdk_wire.encode_state(frame) == expected
    assert asimov_state_pb2.RobotState.FromString(expected).sequence == frame.sequence  # the reference parses


@settings(max_examples=100, deadline=None)
@given(FRAMES.filter(lambda f: all(abs(v) < 3e38 for v in f.joint_pos + f.joint_vel + f.base_quat)))
def test_direct_encoder_handles_in_range_frames_itself(frame: StateFrame) -> None:
    """No fallback hides a mismatch: within float32's range the direct path answers (it raises only on overflow)."""
    try:
        data = state_encoder.encode(frame)
    except OverflowError:
        return  # an optional block (current, temp, battery, gyro...) held an out-of-range value
    assert data == sdk_wire.encode_state_protobuf(frame)


def test_a_realistic_frame_is_identical_and_parses_back() -> None:
    frame = StateFrame(timestamp_us=20_000, sequence=1, current_mode=2, joint_pos=[0.1] * NUM_JOINTS,
                       joint_vel=[-0.0] * NUM_JOINTS, base_ang_vel=(0.0, 0.0, 0.0), projected_gravity=(0, 0, -1),
                       base_quat=(1, 0, 0, 0), battery=BatteryReading(0.0, -0.0, 0.0, 0.0))
    data = state_encoder.encode(frame)
    assert data == sdk_wire.encode_state_protobuf(frame)
    msg = asimov_state_pb2.RobotState.FromString(data)
    assert msg.HasField("battery") and math.copysign(1.0, msg.battery.current_a) == -1.0
    assert list(msg.base_quat) == [1.0, 0.0, 0.0, 0.0]


def test_varint_matches_protobuf_for_edge_values() -> None:
    for v in (0, 1, 127, 128, 16383, 16384, (1 << 32) - 1, (1 << 64) - 1):
        assert state_encoder.varint(v) == asimov_state_pb2.RobotState(timestamp_us=v).SerializeToString()[1:] or v == 0
    assert state_encoder.varint(-1) == b"\xff" * 9 + b"\x01"
