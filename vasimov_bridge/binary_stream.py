"""VAS1 / VAC1: the compact binary stream for light clients (phones, microcontrollers, browsers without protobuf).

Two fixed-size little-endian packets, each starting with a 4-byte magic whose last character is the major version:

* **VAS1** (state, server -> client, ``STATE_SIZE`` bytes): firmware mode and flags, simulated time, the base's
  ground-truth pose and twist (the twin's extra; the real robot cannot measure these), the 25 joint positions and
  velocities in *joint space* (firmware order, ankle slots = ankle pitch/roll joints, the order of
  ``vasimov.joints``, so a client can pose the published MJCF/URDF directly), the firmware's clamped velocity
  command, and per-connection command feedback.
* **VAC1** (command, client -> server, ``COMMAND_SIZE`` bytes): DAMP, STAND or VELOCITY with a sequence number.

Why fixed size: a receiver can reject a packet by its length before reading a single field, and a decoder in any
language is one struct definition. The layout tables below are the single source for ``docs/binary_protocol.md``
(a test compares them).

Pure: no sockets, no rclpy. ``decode_command`` checks the framing (length, magic, version, known kind, and an
allow-list of fields per kind: fields a kind does not use must be zero, so a client that thinks DAMP carries a
velocity learns otherwise instead of being silently half-obeyed); what the command carries is checked by the one
validator every inlet shares (``vasimov.command_rules``), under its one reason vocabulary.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum, IntFlag

from vasimov.command_rules import Reason, check_finite, validated
from vasimov.commands import CommandSource, DampCommand, Rejection, RobotCommand, StandCommand, VelocityCommand
from vasimov.joints import NUM_JOINTS

VERSION = 1
STATE_MAGIC = b"VAS1"
COMMAND_MAGIC = b"VAC1"

#: ``mode`` value while no firmware state has been received for the current epoch (FIRMWARE_KNOWN clear).
MODE_UNKNOWN = 255


@dataclass(frozen=True)
class Field:
    """One field of a packet layout: name, struct code, element count, unit and meaning (for the spec table)."""

    name: str
    code: str
    count: int
    unit: str
    meaning: str


STATE_FIELDS: tuple[Field, ...] = (
    Field("magic", "4s", 1, "", 'ASCII "VAS1"'),
    Field("version", "B", 1, "", "protocol version, 1"),
    Field("mode", "B", 1, "", "firmware ControlMode wire value: 0 DAMP, 1 STAND, 2 MOVE, 5 FAULT_DAMP; 255 unknown"),
    Field("flags", "H", 1, "", "StateFlags bit field (ARMED, FAULT, GANTRY, POLICY_ACTIVE, FIRMWARE_KNOWN, "
          "TRUTH_KNOWN)"),
    Field("sequence", "I", 1, "", "packet counter of this connection, from 1, wraps at 2^32"),
    Field("epoch", "I", 1, "", "virtual restarts since the plant started"),
    Field("sim_time", "d", 1, "s", "simulated time of the plant state in this packet"),
    Field("error_flags", "I", 1, "", "firmware error bit field (bit 0 fault latched, bit 1+n critical alert n)"),
    Field("ack_sequence", "I", 1, "", "sequence of the last VAC1 packet of this connection that passed "
          "validation and was forwarded to the firmware (0: none yet)"),
    Field("rejected", "I", 1, "", "VAC1 packets of this connection refused so far"),
    Field("base_pos", "f", 3, "m", "pelvis position, world frame (ground truth)"),
    Field("base_quat", "f", 4, "", "pelvis orientation w, x, y, z, world frame (ground truth)"),
    Field("base_lin_vel", "f", 3, "m/s", "pelvis linear velocity, world frame (ground truth)"),
    Field("base_ang_vel", "f", 3, "rad/s", "pelvis angular velocity, world frame (ground truth)"),
    Field("joint_pos", "f", NUM_JOINTS, "rad", "joint positions, joint space, firmware order"),
    Field("joint_vel", "f", NUM_JOINTS, "rad/s", "joint velocities, joint space, firmware order"),
    Field("velocity_command", "f", 3, "m/s, m/s, rad/s", "vx, vy, vyaw the policy is given (firmware-clamped)"),
)

COMMAND_FIELDS: tuple[Field, ...] = (
    Field("magic", "4s", 1, "", 'ASCII "VAC1"'),
    Field("version", "B", 1, "", "protocol version, 1"),
    Field("kind", "B", 1, "", "0 DAMP, 1 STAND, 2 VELOCITY"),
    Field("reserved", "H", 1, "", "must be 0"),
    Field("sequence", "I", 1, "", "client's counter, echoed as ack_sequence when accepted; not checked"),
    Field("vx", "f", 1, "m/s", "forward velocity (VELOCITY only, else 0)"),
    Field("vy", "f", 1, "m/s", "lateral velocity (VELOCITY only, else 0)"),
    Field("vyaw", "f", 1, "rad/s", "yaw rate (VELOCITY only, else 0)"),
)


def _struct(fields: Sequence[Field]) -> struct.Struct:
    return struct.Struct("<" + "".join(f.code if f.count == 1 else f"{f.count}{f.code}" for f in fields))


def layout(fields: Sequence[Field]) -> list[tuple[int, int, Field]]:
    """(offset, size in bytes, field) for each field, in packet order (the spec table's rows)."""
    rows, offset = [], 0
    for f in fields:
        size = struct.calcsize("<" + f.code) * (1 if f.code == "4s" else f.count)
        rows.append((offset, size, f))
        offset += size
    return rows


STATE_STRUCT = _struct(STATE_FIELDS)
COMMAND_STRUCT = _struct(COMMAND_FIELDS)
STATE_SIZE = STATE_STRUCT.size  # 300
COMMAND_SIZE = COMMAND_STRUCT.size  # 24


class StateFlags(IntFlag):
    ARMED = 1 << 0  # firmware armed (motors enabled)
    FAULT = 1 << 1  # fault latched (error_flags bit 0): damped until a virtual restart, whatever mode is reported
    GANTRY = 1 << 2  # the virtual gantry holds the pelvis
    POLICY_ACTIVE = 1 << 3  # MOVE with the locomotion policy driving the joints
    FIRMWARE_KNOWN = 1 << 4  # mode/armed/fault/error_flags/velocity_command come from a firmware state
    TRUTH_KNOWN = 1 << 5  # base_* fields come from ground truth; when clear they are zero


NO_FLAGS = StateFlags(0)


class CommandKind(IntEnum):
    """VAC1 kinds; the values equal vasimov_msgs/RobotCommand KIND_* so nothing needs a table to convert."""

    DAMP = 0
    STAND = 1
    VELOCITY = 2


@dataclass(frozen=True)
class StateFrame:
    """Everything one VAS1 packet says, as Python values (what ``encode_state`` packs and ``decode_state`` returns)."""

    sequence: int
    epoch: int
    sim_time: float
    joint_pos: Sequence[float]
    joint_vel: Sequence[float]
    mode: int = MODE_UNKNOWN
    flags: StateFlags = NO_FLAGS
    error_flags: int = 0
    ack_sequence: int = 0
    rejected: int = 0
    base_pos: Sequence[float] = (0.0, 0.0, 0.0)
    base_quat: Sequence[float] = (1.0, 0.0, 0.0, 0.0)
    base_lin_vel: Sequence[float] = (0.0, 0.0, 0.0)
    base_ang_vel: Sequence[float] = (0.0, 0.0, 0.0)
    velocity_command: Sequence[float] = (0.0, 0.0, 0.0)
    version: int = VERSION


@dataclass(frozen=True)
class CommandPacket:
    """A VAC1 packet as values (for clients and tests; the server goes straight to a typed command)."""

    kind: int
    sequence: int = 0
    vx: float = 0.0
    vy: float = 0.0
    vyaw: float = 0.0
    version: int = VERSION
    reserved: int = 0
    magic: bytes = field(default=COMMAND_MAGIC)


_F32_MAX = 3.4028234663852886e38
_VECTORS = (("base_pos", 3), ("base_quat", 4), ("base_lin_vel", 3), ("base_ang_vel", 3), ("joint_pos", NUM_JOINTS),
            ("joint_vel", NUM_JOINTS), ("velocity_command", 3))


def encode_state(frame: StateFrame) -> bytes:
    """Pack a state frame. Raises ValueError on a wrong vector length or a value that does not fit its field, so a
    bug upstream never goes out as a plausible-looking packet."""
    values: list[float] = []
    for name, n in _VECTORS:
        v = [float(x) for x in getattr(frame, name)]
        if len(v) != n:
            raise ValueError(f"{name} has {len(v)} values, VAS1 carries {n}")
        if not all(math.isfinite(x) and abs(x) <= _F32_MAX for x in v):
            raise ValueError(f"{name} has a value a finite float32 cannot carry: {v}")
        values += v
    if not math.isfinite(frame.sim_time):
        raise ValueError(f"sim_time {frame.sim_time} is not finite")
    for name, bits in (("sequence", 32), ("epoch", 32), ("error_flags", 32), ("ack_sequence", 32), ("rejected", 32),
                       ("mode", 8), ("flags", 16), ("version", 8)):
        value = int(getattr(frame, name))
        if not 0 <= value < (1 << bits):
            raise ValueError(f"{name}={value} does not fit in {bits} unsigned bits")
    return STATE_STRUCT.pack(STATE_MAGIC, frame.version, frame.mode, int(frame.flags), frame.sequence, frame.epoch,
                             float(frame.sim_time), frame.error_flags, frame.ack_sequence, frame.rejected, *values)


def decode_state(data: bytes) -> StateFrame | Rejection:
    """Unpack a VAS1 packet (what a client does); refuses by length first, then magic and version."""
    if len(data) != STATE_SIZE:
        return Rejection(Reason.BAD_LENGTH, f"{len(data)} bytes, VAS1 is {STATE_SIZE}")
    if bytes(data[:4]) != STATE_MAGIC:
        return Rejection(Reason.BAD_MAGIC, f"magic {bytes(data[:4])!r}, expected {STATE_MAGIC!r}")
    t = STATE_STRUCT.unpack(data)
    if t[1] != VERSION:
        return Rejection(Reason.UNSUPPORTED_VERSION, f"version {t[1]}, this decoder reads {VERSION}")
    rest = list(t[10:])
    vectors: dict[str, tuple[float, ...]] = {}
    for name, n in _VECTORS:
        vectors[name], rest = tuple(rest[:n]), rest[n:]
    return StateFrame(version=t[1], mode=t[2], flags=StateFlags(t[3]), sequence=t[4], epoch=t[5], sim_time=t[6],
                      error_flags=t[7], ack_sequence=t[8], rejected=t[9], **vectors)


def encode_command(packet: CommandPacket) -> bytes:
    """Pack a VAC1 packet exactly as given (tests use it to build malformed ones too)."""
    return COMMAND_STRUCT.pack(packet.magic, packet.version, packet.kind, packet.reserved, packet.sequence,
                               packet.vx, packet.vy, packet.vyaw)


def decode_command(data: bytes | bytearray | memoryview | str) -> RobotCommand | Rejection:
    """A VAC1 packet -> a typed command with source BINARY, or the reason it was refused.

    Order of checks: frame type, length (before any field is read), magic, version, kind, reserved, the kind's
    field allow-list, finiteness. Velocity limits are the firmware's business (it clamps and counts), exactly as for
    the SDK's UDP commands.
    """
    if isinstance(data, str):
        return Rejection(Reason.TEXT_FRAME, "VAC1 commands are binary frames; a text frame was received")
    if len(data) != COMMAND_SIZE:
        return Rejection(Reason.BAD_LENGTH, f"{len(data)} bytes, VAC1 is {COMMAND_SIZE}")
    magic, version, kind, reserved, sequence, vx, vy, vyaw = COMMAND_STRUCT.unpack(data)
    if magic != COMMAND_MAGIC:
        return Rejection(Reason.BAD_MAGIC, f"magic {magic!r}, expected {COMMAND_MAGIC!r}")
    if version != VERSION:
        return Rejection(Reason.UNSUPPORTED_VERSION, f"version {version}, this server speaks {VERSION}")
    try:
        k = CommandKind(kind)
    except ValueError:
        valid = ", ".join(f"{c.value} {c.name}" for c in CommandKind)
        return Rejection(Reason.UNKNOWN_KIND, f"kind {kind}; valid: {valid}")
    if reserved != 0:
        return Rejection(Reason.RESERVED_NONZERO, f"reserved field is {reserved}, must be 0")
    velocity = (vx, vy, vyaw)
    non_finite = check_finite(velocity, "velocity")  # before the allow-list: a NaN in DAMP is NON_FINITE
    if non_finite is not None:
        return non_finite
    if k is CommandKind.VELOCITY:
        return validated(VelocityCommand(vx, vy, vyaw, source=CommandSource.BINARY, sequence=sequence))
    if any(v != 0.0 for v in velocity):
        return Rejection(Reason.UNUSED_FIELD_SET, f"{k.name} carries no velocity; vx, vy, vyaw must be 0, got "
                                                  f"{velocity}")
    if k is CommandKind.DAMP:
        return DampCommand(source=CommandSource.BINARY, sequence=sequence)
    return StandCommand(source=CommandSource.BINARY, sequence=sequence)
