"""VAS1/VAC1 codec: layout, round trips, and a table of good and bad command packets (no ROS, no sockets)."""

from __future__ import annotations

import math
import re
import struct
from pathlib import Path

import pytest

from vasimov.command_rules import Reason
from vasimov.commands import CommandSource, DampCommand, Rejection, StandCommand, VelocityCommand
from vasimov.joints import NUM_JOINTS
from vasimov_bridge import binary_stream as bs
from vasimov_bridge.binary_stream import CommandKind, CommandPacket, StateFlags, StateFrame

DOC = Path(__file__).resolve().parent.parent / "docs" / "binary_protocol.md"


def _frame(**kw) -> StateFrame:
    base = dict(sequence=7, epoch=1, sim_time=12.345, joint_pos=[0.01 * i for i in range(NUM_JOINTS)],
                joint_vel=[-0.5 * i for i in range(NUM_JOINTS)], mode=2,
                flags=StateFlags.ARMED | StateFlags.POLICY_ACTIVE | StateFlags.FIRMWARE_KNOWN | StateFlags.TRUTH_KNOWN,
                error_flags=0, ack_sequence=41, rejected=3, base_pos=(1.0, -2.0, 0.6), base_quat=(1.0, 0.0, 0.0, 0.0),
                base_lin_vel=(0.3, 0.0, 0.0), base_ang_vel=(0.0, 0.0, 0.1), velocity_command=(0.3, 0.0, 0.1))
    base.update(kw)
    return StateFrame(**base)


def test_sizes_and_offsets_are_the_documented_ones():
    assert bs.STATE_SIZE == 300 and bs.COMMAND_SIZE == 24
    offsets = {f.name: o for o, _, f in bs.layout(bs.STATE_FIELDS)}
    assert offsets["sim_time"] == 16 and offsets["sim_time"] % 8 == 0
    assert offsets["joint_pos"] == 88 and offsets["velocity_command"] == 288
    last_off, last_size, _ = bs.layout(bs.STATE_FIELDS)[-1]
    assert last_off + last_size == bs.STATE_SIZE
    last_off, last_size, _ = bs.layout(bs.COMMAND_FIELDS)[-1]
    assert last_off + last_size == bs.COMMAND_SIZE


def test_the_spec_tables_in_docs_match_the_code():
    text = DOC.read_text(encoding="utf-8")
    for fields in (bs.STATE_FIELDS, bs.COMMAND_FIELDS):
        for offset, size, f in bs.layout(fields):
            row = re.compile(rf"^\|\s*{offset}\s*\|\s*{size}\s*\|\s*`{f.name}`\s*\|", re.MULTILINE)
            assert row.search(text), f"docs/binary_protocol.md has no row '| {offset} | {size} | `{f.name}` |'"
    assert f"{bs.STATE_SIZE} bytes" in text and f"{bs.COMMAND_SIZE} bytes" in text


def test_state_round_trip_is_float32_exact():
    frame = _frame()
    data = bs.encode_state(frame)
    assert len(data) == bs.STATE_SIZE and data[:4] == b"VAS1"
    back = bs.decode_state(data)
    assert isinstance(back, StateFrame)
    assert back.sequence == 7 and back.epoch == 1 and back.mode == 2 and back.sim_time == 12.345
    assert back.flags == frame.flags and back.ack_sequence == 41 and back.rejected == 3
    for name in ("joint_pos", "joint_vel", "base_pos", "base_quat", "velocity_command"):
        want = [struct.unpack("<f", struct.pack("<f", v))[0] for v in getattr(frame, name)]
        assert list(getattr(back, name)) == want, name


def test_state_fields_sit_at_their_offsets():
    """A decoder written from the table alone (no shared struct string) reads the same values."""
    data = bs.encode_state(_frame())
    assert data[5] == 2
    assert struct.unpack_from("<I", data, 8)[0] == 7
    assert struct.unpack_from("<d", data, 16)[0] == 12.345
    assert struct.unpack_from("<3f", data, 36) == pytest.approx((1.0, -2.0, 0.6))
    assert struct.unpack_from(f"<{NUM_JOINTS}f", data, 88)[3] == pytest.approx(0.03)
    assert struct.unpack_from("<3f", data, 288) == pytest.approx((0.3, 0.0, 0.1))


@pytest.mark.parametrize("bad", [
    dict(joint_pos=[0.0] * 24), dict(base_quat=(1.0, 0.0, 0.0)), dict(joint_vel=[math.nan] * NUM_JOINTS),
    dict(base_pos=(1e39, 0.0, 0.0)), dict(sim_time=math.inf), dict(sequence=-1), dict(sequence=1 << 32),
    dict(mode=256),
])
def test_encode_state_refuses_what_a_packet_cannot_honestly_carry(bad):
    with pytest.raises(ValueError):
        bs.encode_state(_frame(**bad))


@pytest.mark.parametrize("data, reason", [
    (b"", Reason.BAD_LENGTH),
    (b"VAS1" + bytes(bs.STATE_SIZE - 5), Reason.BAD_LENGTH),
    (b"VAS2" + bytes(bs.STATE_SIZE - 4), Reason.BAD_MAGIC),
    (b"VAS1\x02" + bytes(bs.STATE_SIZE - 5), Reason.UNSUPPORTED_VERSION),
])
def test_decode_state_refuses_by_length_magic_version(data, reason):
    out = bs.decode_state(data)
    assert isinstance(out, Rejection) and out.reason == reason


GOOD = [
    (CommandPacket(CommandKind.DAMP, 1), DampCommand(source=CommandSource.BINARY, sequence=1)),
    (CommandPacket(CommandKind.STAND, 2), StandCommand(source=CommandSource.BINARY, sequence=2)),
    (CommandPacket(CommandKind.VELOCITY, 3, 0.5, -0.25, 0.125),
     VelocityCommand(0.5, -0.25, 0.125, source=CommandSource.BINARY, sequence=3)),
    (CommandPacket(CommandKind.VELOCITY, 0xFFFFFFFF, 9.0, 0.0, 0.0),  # out of range: the firmware clamps, not us
     VelocityCommand(9.0, 0.0, 0.0, source=CommandSource.BINARY, sequence=0xFFFFFFFF)),
]


@pytest.mark.parametrize("packet, want", GOOD)
def test_good_commands_decode_to_typed_binary_commands(packet, want):
    assert bs.decode_command(bs.encode_command(packet)) == want


_ok = bs.encode_command(CommandPacket(CommandKind.STAND, 5))

BAD = [
    ("text frame", "VAC1" + "\0" * 20, Reason.TEXT_FRAME),
    ("empty", b"", Reason.BAD_LENGTH),
    ("short", _ok[:-1], Reason.BAD_LENGTH),
    ("long", _ok + b"\0", Reason.BAD_LENGTH),
    ("a state packet", bs.encode_state(_frame()), Reason.BAD_LENGTH),
    ("magic", b"VAS1" + _ok[4:], Reason.BAD_MAGIC),
    ("version 0", bs.encode_command(CommandPacket(CommandKind.STAND, version=0)), Reason.UNSUPPORTED_VERSION),
    ("version 2", bs.encode_command(CommandPacket(CommandKind.STAND, version=2)), Reason.UNSUPPORTED_VERSION),
    ("kind 3 (trajectory is not in VAC1)", bs.encode_command(CommandPacket(3)), Reason.UNKNOWN_KIND),
    ("kind 255", bs.encode_command(CommandPacket(255)), Reason.UNKNOWN_KIND),
    ("reserved", bs.encode_command(CommandPacket(CommandKind.DAMP, reserved=1)), Reason.RESERVED_NONZERO),
    ("stand with velocity", bs.encode_command(CommandPacket(CommandKind.STAND, vx=0.1)), Reason.UNUSED_FIELD_SET),
    ("damp with yaw", bs.encode_command(CommandPacket(CommandKind.DAMP, vyaw=-1.0)), Reason.UNUSED_FIELD_SET),
    ("nan", bs.encode_command(CommandPacket(CommandKind.VELOCITY, vx=math.nan)), Reason.NON_FINITE),
    ("inf", bs.encode_command(CommandPacket(CommandKind.VELOCITY, vyaw=-math.inf)), Reason.NON_FINITE),
    ("nan in damp", bs.encode_command(CommandPacket(CommandKind.DAMP, vy=math.nan)), Reason.NON_FINITE),
]


@pytest.mark.parametrize("name, data, reason", BAD, ids=[b[0] for b in BAD])
def test_bad_commands_are_refused_with_a_named_reason(name, data, reason):
    out = bs.decode_command(data)
    assert isinstance(out, Rejection), f"{name} was accepted: {out}"
    assert out.reason == reason
    assert out.detail


def test_every_byte_string_of_command_size_decodes_or_is_refused_without_raising():
    import random

    rng = random.Random(5)
    for _ in range(2000):
        data = bytearray(rng.randbytes(bs.COMMAND_SIZE))
        if rng.random() < 0.5:
            data[:5] = b"VAC1\x01"
        out = bs.decode_command(bytes(data))
        assert isinstance(out, Rejection | DampCommand | StandCommand | VelocityCommand)


def test_command_kinds_match_the_ros_message_constants():
    from vasimov_msgs.msg import RobotCommand

    assert CommandKind.DAMP == RobotCommand.KIND_DAMP
    assert CommandKind.STAND == RobotCommand.KIND_STAND
    assert CommandKind.VELOCITY == RobotCommand.KIND_VELOCITY
