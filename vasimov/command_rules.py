"""The one command validator and the one vocabulary of rejection reasons, for every inlet and the firmware.

Six places turn outside input into a ``RobotCommand``: the SDK's UDP datagrams (``vasimov_bridge.sdk_wire``), the
VAC1 binary stream (``vasimov_bridge.binary_stream``), Foxglove teleop (``vasimov_bridge.foxglove_teleop``), ROS
``/cmd_vel`` and the ``RobotCommand`` topic (``vasimov_edge.node``, ``vasimov.ros.command_msgs``), and the firmware
core itself, which accepts commands from any caller. Decoders only parse: each builds the typed command from its
bytes and hands it to :func:`validate`, so a velocity with a NaN, an empty or short trajectory, or a field that is not
a number is refused by the same rule, under the same reason, wherever it came from.

:class:`Reason` is the whole vocabulary a user can see (on the wire, in logs, in the per-reason counters). Names
reuse the SDK's ``Refusal`` vocabulary (Edge's reasons) where one fits, so a counter reads like the vendor's
diagnostics; the rest name the framing rule of one inlet. A rejection made by :func:`validate` also names, in
``extra["counter"]``, the firmware counter that counts that rule, so the edge counts a rule in one counter whichever
path refused it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from enum import StrEnum

from vasimov.commands import DampCommand, Rejection, RobotCommand, StandCommand, TrajectoryCommand, VelocityCommand
from vasimov.joints import NUM_JOINTS


class Reason(StrEnum):
    """Every reason a command can be refused for, whichever inlet refused it."""

    # content of a command (validate): every inlet
    PARSE = "PARSE"  # not parseable: bytes that are not the message, a field that is not a number
    NON_FINITE = "NON_FINITE"  # NaN or +-inf in a velocity or a position target (gains: see validate)
    EMPTY_TRAJECTORY = "EMPTY_TRAJECTORY"  # a trajectory with no positions
    BAD_LENGTH = "BAD_LENGTH"  # positions != 25 (VAC1: a packet that is not COMMAND_SIZE bytes)
    UNKNOWN_COMMAND = "UNKNOWN_COMMAND"  # not a robot command, or a payload its mode/control contradicts
    # the SDK's UDP lane (sdk_wire)
    EMPTY_DATAGRAM = "EMPTY_DATAGRAM"  # zero bytes: parses as an all-default message, so named explicitly
    OVERSIZED = "OVERSIZED"  # longer than sdk_wire.MAX_COMMAND_BYTES
    PROTOCOL_VERSION = "PROTOCOL_VERSION"  # protocol_version != 1 (firmware netrx rule)
    UNSUPPORTED = "UNSUPPORTED"  # the eol (end-of-line test) payload: factory only, not simulated
    UNKNOWN_MODE = "UNKNOWN_MODE"  # no payload and a mode other than DAMP/STAND; a teleop mode word not known
    DECODER_ERROR = "DECODER_ERROR"  # the decoder raised (a bug; counted, the lane lives on)
    # the VAC1 binary stream (binary_stream)
    TEXT_FRAME = "TEXT_FRAME"  # a WebSocket text frame: VAC1 is binary only
    BAD_MAGIC = "BAD_MAGIC"  # first 4 bytes are not "VAC1"
    UNSUPPORTED_VERSION = "UNSUPPORTED_VERSION"  # version byte != VERSION
    UNKNOWN_KIND = "UNKNOWN_KIND"  # kind not in CommandKind
    RESERVED_NONZERO = "RESERVED_NONZERO"  # the reserved field is not 0
    UNUSED_FIELD_SET = "UNUSED_FIELD_SET"  # DAMP/STAND with a non-zero velocity field
    # Foxglove teleop (foxglove_teleop)
    NOT_ALLOWED = "NOT_ALLOWED"  # a topic clients may not publish
    UNSUPPORTED_ENCODING = "UNSUPPORTED_ENCODING"  # an encoding other than cdr/json
    WRONG_SCHEMA = "WRONG_SCHEMA"  # an advertised schema other than the topic's type
    TOO_LARGE = "TOO_LARGE"  # a message larger than teleop ever needs
    UNSUPPORTED_AXIS = "UNSUPPORTED_AXIS"  # a Twist axis the robot cannot follow (linear.z, angular.x/y)
    OUT_OF_ENVELOPE = "OUT_OF_ENVELOPE"  # a velocity outside the teleop envelope
    # the ROS RobotCommand topic and the arbiter
    UNSUPPORTED_SOURCE = "UNSUPPORTED_SOURCE"  # a command naming no known source
    NOT_ACTIVE = "NOT_ACTIVE"  # a higher-priority source holds control
    # the firmware's state (the SDK's Refusal names)
    FW_DAMPED = "FW_DAMPED"  # velocity/trajectory in DAMP
    FAULT_DAMPED = "FAULT_DAMPED"  # a fault is latched
    GATE = "GATE"  # MOVE requested from an unarmed STAND


def check_finite(values: Iterable[float], what: str) -> Rejection | None:
    """NON_FINITE if any of ``values`` is NaN or infinite (``what`` names them in the detail), else None.

    For decoders whose framing rules need finiteness before a command exists (VAC1 checks the velocity fields of
    every kind); a built command goes through :func:`validate`."""
    vals = tuple(values)
    if all(math.isfinite(v) for v in vals):
        return None
    return Rejection(Reason.NON_FINITE, f"{what} {vals} has a non-finite component")


def _numbers(values: object) -> tuple[float, ...] | None:
    """``values`` as floats, or None when one is not a number (a string, a nested list, None)."""
    try:
        return tuple(float(v) for v in values)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        return None


def _refuse(reason: Reason, counter: str, detail: str, **extra: object) -> Rejection:
    return Rejection(reason=reason, detail=detail, extra={"counter": counter, **extra})


def validate(cmd: object) -> Rejection | None:
    """None if ``cmd`` is a well-formed robot command, else the first rule it breaks.

    Rules, in order: a velocity's vx, vy, vyaw are numbers (PARSE) and finite (NON_FINITE); a trajectory's positions
    are numbers (PARSE), not empty (EMPTY_TRAJECTORY), exactly 25 (BAD_LENGTH) and finite (NON_FINITE), and its kp
    and kd, when given, are numbers (PARSE). DAMP and STAND carry nothing to check. Gains are never a reason to drop
    a setpoint beyond that: the Menlo API page lists only positions (count, finiteness) among a trajectory's drop
    conditions and says Edge replaces gains it cannot use with its own table, which the firmware does
    (``Firmware._trajectory_gains``). Whether the robot may follow the command now (mode, arming, a latched fault,
    the arbiter) is the firmware's and arbiter's business, not a rule of the command. Never raises.
    """
    if isinstance(cmd, DampCommand | StandCommand):
        return None
    if isinstance(cmd, VelocityCommand):
        v = _numbers((cmd.vx, cmd.vy, cmd.vyaw))
        if v is None:
            return _refuse(Reason.PARSE, "command_unparsable", "velocity fields vx, vy, vyaw must be numbers")
        if not all(math.isfinite(x) for x in v):
            return _refuse(Reason.NON_FINITE, "velocity_non_finite", f"velocity {v} is not finite")
        return None
    if isinstance(cmd, TrajectoryCommand):
        pos = _numbers(cmd.positions)
        if pos is None:
            return _refuse(Reason.PARSE, "command_unparsable", "positions must be numbers", field="positions")
        if not pos:
            return _refuse(Reason.EMPTY_TRAJECTORY, "trajectory_empty", f"no positions; send {NUM_JOINTS}")
        if len(pos) != NUM_JOINTS:
            return _refuse(Reason.BAD_LENGTH, "trajectory_bad_length",
                           f"{len(pos)} positions; exactly {NUM_JOINTS} are valid", field="positions")
        bad = next((i for i, x in enumerate(pos) if not math.isfinite(x)), None)
        if bad is not None:
            return _refuse(Reason.NON_FINITE, "trajectory_non_finite", f"positions[{bad}] is {pos[bad]}",
                           field="positions", index=bad)
        for name in ("kp", "kd"):
            gains = getattr(cmd, name)
            if gains is not None and _numbers(gains) is None:
                return _refuse(Reason.PARSE, "command_unparsable", f"{name} must be numbers", field=name)
        return None
    return _refuse(Reason.UNKNOWN_COMMAND, "command_unknown", f"not a robot command: {type(cmd).__name__}")


def validated(cmd: RobotCommand) -> RobotCommand | Rejection:
    """``cmd`` itself if :func:`validate` accepts it, else the rejection: what a decoder returns."""
    rejection = validate(cmd)
    return cmd if rejection is None else rejection
