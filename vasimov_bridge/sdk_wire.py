"""The bytes of the SDK's UDP lane: ``asimov.io.RobotCommand`` in, ``asimov.io.RobotState`` out.

Pure codecs (no sockets, no rclpy) so that every malformed-input rule is testable as a table and the ROS node only
moves typed values around. The schema is the installed ``asimov_protocol`` package, the same generated bindings the
SDK imports, so the twin cannot drift from the wire the SDK speaks.

Command rules (see ``decode_command``) follow ``docs/menlo_sdk_contract.md`` section 2 and the firmware/Edge drop
conditions of section 5.11: a malformed datagram is dropped with a named reason and never reaches the firmware
core. The decoder only parses the framing; what a command may carry (finite velocities, 25 finite positions) is
the one validator every inlet shares (``vasimov.command_rules``), under its one reason vocabulary. Sequence numbers
and timestamps are carried but never checked: every SDK process restarts its sequence at 1 and its timestamp is the
sender's wall clock, which nothing on the robot reads.

Why one file past 400 lines: the SDK protocol's whole codec, both directions, so every field rule of the contract is
in one file.
"""

from __future__ import annotations

import math
import operator
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from asimov_protocol.v1 import asimov_command_pb2, asimov_common_pb2, asimov_state_pb2

from vasimov.command_rules import Reason, validate
from vasimov.commands import (
    CommandSource,
    DampCommand,
    Rejection,
    RobotCommand,
    StandCommand,
    TrajectoryCommand,
    VelocityCommand,
)
from vasimov.joints import NUM_JOINTS
from vasimov_bridge import state_encoder

#: The one protocol version the firmware speaks; commands carrying any other are refused and every state frame
#: carries it (the SDK's handshake compares the two).
PROTOCOL_VERSION = 1

#: Largest command datagram the decoder will parse. The largest *valid* v1 command is a 25-joint trajectory with
#: kp and kd and every scalar field at its maximum: 343 bytes packed (the SDK's encoding), about 412 bytes if a
#: sender uses the legal unpacked encoding of repeated floats. 2048 leaves room for fields a newer minor protocol
#: might add while refusing anything that can only be junk before protobuf spends time on it.
MAX_COMMAND_BYTES = 2048

#: The firmware's nanopb limit on ``RobotState.active_alerts`` (``max_count: 48``, one per catalog id).
MAX_ALERTS = 48

_UINT32 = 1 << 32
_UINT64 = 1 << 64

_MODE_DAMP = asimov_common_pb2.CONTROL_MODE_DAMP
_MODE_STAND = asimov_common_pb2.CONTROL_MODE_STAND
_MODE_MOVE = asimov_common_pb2.CONTROL_MODE_MOVE
_CONTROL_POLICY = asimov_common_pb2.COMMAND_CONTROL_POLICY
_CONTROL_TRAJECTORY = asimov_common_pb2.COMMAND_CONTROL_TRAJECTORY


def _reject(reason: Reason, detail: str, **extra: object) -> Rejection:
    return Rejection(reason=str(reason), detail=detail, extra=dict(extra))


def decode_command(data: bytes, source: CommandSource = CommandSource.UDP) -> RobotCommand | Rejection:
    """One UDP datagram -> a typed command, or a ``Rejection`` naming the first rule it broke.

    Never raises: the lane counts the rejection and moves on, as Edge drops malformed commands silently.

    Routing follows Edge's arbiter, which routes on the ``command_data`` oneof:

    * ``policy`` -> ``VelocityCommand``; ``all_trajectory`` -> ``TrajectoryCommand``; ``eol`` -> UNSUPPORTED;
    * no oneof -> a posture change by ``mode``: 0 DAMP, 1 STAND, anything else UNKNOWN_MODE.

    ``mode`` and ``command_control`` are proto3 enums, so a zero cannot be told from "not sent". Decisions:

    * without a payload ``command_control`` is ignored: the SDK's DAMP/STAND never set it, and a DAMP must never be
      refused over a field that cannot change what it means;
    * with a payload, ``mode`` must be MOVE or zero (unset) and ``command_control`` must be zero (unset) or match
      the payload (POLICY for ``policy``, TRAJECTORY for ``all_trajectory``). Anything else (STAND + velocity,
      ``command_control=TRAJECTORY`` on a velocity, an out-of-range enum) is a self-contradicting packet; the twin
      refuses it as UNKNOWN_COMMAND rather than guess which half the sender meant. The SDK always sends
      ``mode=MOVE`` with the matching ``command_control``, so it is never affected.

    Unknown fields are ignored (forward compatibility, as protobuf intends); random bytes that happen to parse
    still fail the ``protocol_version == 1`` rule.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        return _reject(Reason.PARSE, f"expected bytes, got {type(data).__name__}")
    size = len(data)
    if size == 0:
        return _reject(Reason.EMPTY_DATAGRAM, "zero-length datagram")
    if size > MAX_COMMAND_BYTES:
        return _reject(Reason.OVERSIZED, f"{size} bytes > {MAX_COMMAND_BYTES}", size=size)
    msg = asimov_command_pb2.RobotCommand()
    try:
        msg.ParseFromString(bytes(data))
    except Exception as exc:  # DecodeError on upb; anything else a backend raises on junk is the same verdict
        return _reject(Reason.PARSE, f"not an asimov.io.RobotCommand: {exc}", size=size)

    seq = int(msg.sequence)
    if msg.protocol_version != PROTOCOL_VERSION:
        return _reject(
            Reason.PROTOCOL_VERSION,
            f"protocol_version {msg.protocol_version}; this robot speaks {PROTOCOL_VERSION}",
            protocol_version=int(msg.protocol_version),
            sequence=seq,
        )

    payload = msg.WhichOneof("command_data")
    mode = int(msg.mode)
    control = int(msg.command_control)

    if payload is None:
        if mode == _MODE_DAMP:
            return DampCommand(source=source, sequence=seq)
        if mode == _MODE_STAND:
            return StandCommand(source=source, sequence=seq)
        return _reject(
            Reason.UNKNOWN_MODE,
            f"mode {mode} without a payload; valid: 0 (DAMP) or 1 (STAND), or MOVE with policy/all_trajectory",
            mode=mode,
            sequence=seq,
        )
    if payload == "eol":
        return _reject(Reason.UNSUPPORTED, "eol (end-of-line test) commands are not simulated", sequence=seq)

    expected_control = _CONTROL_POLICY if payload == "policy" else _CONTROL_TRAJECTORY
    if mode not in (_MODE_DAMP, _MODE_MOVE) or control not in (_CONTROL_POLICY, expected_control):
        return _reject(
            Reason.UNKNOWN_COMMAND,
            f"{payload} payload with mode {mode} and command_control {control}; "
            f"valid: mode 2 (MOVE) or unset, command_control {expected_control} or unset",
            mode=mode,
            command_control=control,
            sequence=seq,
        )

    if payload == "policy":
        p = msg.policy
        return _validated(VelocityCommand(vx=float(p.vx), vy=float(p.vy), vyaw=float(p.vyaw), source=source,
                                          sequence=seq))

    return _decode_trajectory(msg.all_trajectory, source, seq)


def _decode_trajectory(traj: Any, source: CommandSource, seq: int) -> TrajectoryCommand | Rejection:
    """``AllTrajectory`` -> ``TrajectoryCommand`` (positions stay in the wire frame: ankle slots carry pitch/roll;
    ``vasimov.motor_space`` maps them). Gains travel on as sent, non-finite ones included: the firmware core decides
    each array, substitutes and counts (``Firmware._trajectory_gains``)."""
    cmd = TrajectoryCommand(
        positions=tuple(float(x) for x in traj.positions),
        kp=tuple(float(x) for x in traj.kp) or None,
        kd=tuple(float(x) for x in traj.kd) or None,
        source=source,
        sequence=seq,
    )
    return _validated(cmd)


def _validated(cmd: RobotCommand) -> RobotCommand | Rejection:
    """The one command validator's verdict, with the datagram's sequence number added to a rejection."""
    rejection = validate(cmd)
    if rejection is None:
        return cmd
    rejection.extra["sequence"] = cmd.sequence
    return rejection


# ── state ────────────────────────────────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class AlertEntry:
    """One ``asimov.io.Alert``. ``value``/``threshold`` are uint32 on the wire (the firmware's own units per
    alert), so they are integers here; ``severity`` 0 is CRITICAL and is what makes the SDK call a robot faulted."""

    id: int
    severity: int
    value: int = 0
    threshold: int = 0
    first_set_us: int = 0
    source_id: int = 0

    def __post_init__(self) -> None:
        for name in ("id", "severity", "value", "threshold", "source_id"):
            object.__setattr__(self, name, _check_uint(f"alert.{name}", getattr(self, name), _UINT32))
        object.__setattr__(self, "first_set_us", _check_uint("alert.first_set_us", self.first_set_us, _UINT64))

    @classmethod
    def coerce(cls, item: AlertEntry | Mapping[str, Any] | Any) -> AlertEntry:
        """Accept an ``AlertEntry``, a mapping, or any object with the same attribute names (the firmware core's
        own alert dataclass), so the node needs no adapter."""
        if isinstance(item, AlertEntry):
            return item
        names = ("id", "severity", "value", "threshold", "first_set_us", "source_id")
        if isinstance(item, Mapping):
            unknown = set(item) - set(names)
            if unknown:
                raise ValueError(f"unknown alert keys {sorted(unknown)}; valid: {', '.join(names)}")
            return cls(**{k: item[k] for k in names if k in item})
        return cls(**{k: getattr(item, k) for k in names if hasattr(item, k)})


@dataclass(frozen=True)
class BatteryReading:
    """``asimov.io.BatteryState``. The SDK treats an absent or all-zero block as "no BMS", so omit it
    (``StateFrame.battery=None``) rather than send zeros."""

    voltage_v: float
    current_a: float  # + = charging
    soc_percent: float  # 0..100
    max_cell_temp_c: float
    protection_flags: int = 0  # bits 0..12, see contract section 3

    def __post_init__(self) -> None:
        for name in ("voltage_v", "current_a", "soc_percent", "max_cell_temp_c"):
            value = float(getattr(self, name))
            _check_finite(f"battery.{name}", (value,))
            object.__setattr__(self, name, value)
        object.__setattr__(
            self, "protection_flags", _check_uint("battery.protection_flags", self.protection_flags, _UINT32)
        )


@dataclass(frozen=True)
class StateFrame:
    """Everything the bridge puts in one ``RobotState``: a firmware-side sample, in motor space, firmware order.

    Sequences are stored as tuples; lengths, finiteness and integer ranges are checked here so a bad frame fails in
    the node that built it (a ``ValueError`` naming the field) instead of reaching the SDK as a silently dropped or
    nonsensical sample.
    """

    timestamp_us: int  # firmware clock, us since the (simulated) firmware started; restarts with it
    sequence: int  # uint32, +1 per frame, restarts with the firmware
    current_mode: int  # ControlMode: 0 DAMP, 1 STAND, 2 MOVE, 5 FAULT_DAMP
    joint_pos: Sequence[float]  # 25, rad, motor space (ankles = motors A/B)
    joint_vel: Sequence[float]  # 25, rad/s
    base_ang_vel: Sequence[float]  # 3, rad/s, body frame
    projected_gravity: Sequence[float]  # 3, body-frame unit vector, z ~ -1 upright
    base_quat: Sequence[float]  # 4, (w, x, y, z)
    joint_current: Sequence[float] | None = None  # 25 A, or None: omitted (SDK reports None)
    joint_temp: Sequence[float] | None = None  # 25 degC, or None: omitted
    error_flags: int = 0  # bit 0 DAMP latched, bit 1+n critical alert n
    active_alerts: Sequence[AlertEntry] = field(default_factory=tuple)
    battery: BatteryReading | None = None
    protocol_version: int = PROTOCOL_VERSION

    def __post_init__(self) -> None:
        def put(name: str, value: object) -> None:
            object.__setattr__(self, name, value)

        for name, count in (
            ("joint_pos", NUM_JOINTS),
            ("joint_vel", NUM_JOINTS),
            ("joint_current", NUM_JOINTS),
            ("joint_temp", NUM_JOINTS),
            ("base_ang_vel", 3),
            ("projected_gravity", 3),
            ("base_quat", 4),
        ):
            raw = getattr(self, name)
            if raw is None:
                if name in ("joint_current", "joint_temp"):
                    continue
                raise ValueError(f"StateFrame.{name} is required ({count} values)")
            # map/tolist/all iterate in C: the SDK bridge builds 200 of these per simulated second
            tolist = getattr(raw, "tolist", None)  # numpy arrays (rclpy's message arrays): their items as floats
            values = tuple(map(float, raw if tolist is None else tolist()))
            if len(values) != count:
                raise ValueError(f"StateFrame.{name} has {len(values)} values; expected {count}")
            if not all(map(math.isfinite, values)):
                _check_finite(f"StateFrame.{name}", values)
            put(name, values)
        alerts = tuple(AlertEntry.coerce(a) for a in self.active_alerts)
        if len(alerts) > MAX_ALERTS:
            raise ValueError(f"StateFrame.active_alerts has {len(alerts)} entries; the firmware sends at most 48")
        put("active_alerts", alerts)
        put("timestamp_us", _check_uint("StateFrame.timestamp_us", self.timestamp_us, _UINT64))
        put("sequence", _check_uint("StateFrame.sequence", self.sequence, _UINT32))
        put("error_flags", _check_uint("StateFrame.error_flags", self.error_flags, _UINT32))
        put("protocol_version", _check_uint("StateFrame.protocol_version", self.protocol_version, _UINT32))
        # Any int32 is a legal open-enum value on the wire (the SDK maps unknown ones to Mode.UNKNOWN).
        mode = _as_int("StateFrame.current_mode", self.current_mode)
        if not -(1 << 31) <= mode < (1 << 31):
            raise ValueError(f"StateFrame.current_mode {mode} does not fit an enum (int32)")
        put("current_mode", mode)


def _check_finite(name: str, values: Sequence[float]) -> None:
    """The firmware never reports NaN/inf; a non-finite value means the simulation diverged upstream. Refusing
    the frame (the node logs and skips it) keeps a diverged plant from reaching the SDK as plausible-looking state."""
    for i, v in enumerate(values):
        if not math.isfinite(v):
            raise ValueError(f"{name}[{i}] is {v}: not finite")


def _as_int(name: str, value: object) -> int:
    """Any integer-like (``int``, numpy integers, an ``IntEnum`` mode) as a plain ``int``; floats and bools are
    refused because silently truncating them would hide a caller's unit or type mistake."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None


def _check_uint(name: str, value: object, bound: int) -> int:
    number = _as_int(name, value)
    if not 0 <= number < bound:
        raise ValueError(f"{name} must be an integer in [0, {bound}), got {value!r}")
    return number


#: The ``RobotState`` fields the bridge fills (the rest, e.g. ``last_cmd_sequence``, ``can_health``,
#: ``policy_timing``, ``eol_*``, ``firmware_epoch_id``, stay at their defaults because the SDK never reads them).
#: ``joint_current``, ``joint_temp`` and ``battery`` are filled when the frame provides them.
FILLED_STATE_FIELDS: tuple[str, ...] = (
    "timestamp_us",
    "sequence",
    "current_mode",
    "joint_pos",
    "joint_vel",
    "joint_current",
    "joint_temp",
    "base_ang_vel",
    "projected_gravity",
    "base_quat",
    "error_flags",
    "active_alerts",
    "protocol_version",
    "battery",
)


def encode_state(frame: StateFrame) -> bytes:
    """One ``StateFrame`` -> one serialized ``asimov.io.RobotState`` (one UDP datagram, no framing).

    Written directly (``state_encoder``: byte-identical to ``encode_state_protobuf``, proven by
    test/test_state_encoder.py, about 4x faster); a float beyond float32's range takes the generated class.
    """
    try:
        return state_encoder.encode(frame)
    except OverflowError:
        return encode_state_protobuf(frame)


def encode_state_protobuf(frame: StateFrame) -> bytes:
    """``encode_state`` through ``asimov_protocol``'s generated class: the reference the direct encoder matches.

    Alerts go in **every** frame. The firmware sends its alert block only in every 20th frame and the SDK carries
    the last non-empty list forward for 0.3 s, so both schemes look the same to the SDK; a complete block per
    frame is simpler, makes every frame self-contained for recordings and late joiners, and costs ~20 bytes per
    active alert. A cleared alert still lingers up to 0.3 s in the SDK, exactly as on the robot.
    """
    msg = asimov_state_pb2.RobotState(
        timestamp_us=frame.timestamp_us,
        sequence=frame.sequence,
        current_mode=frame.current_mode,
        joint_pos=frame.joint_pos,
        joint_vel=frame.joint_vel,
        base_ang_vel=frame.base_ang_vel,
        projected_gravity=frame.projected_gravity,
        base_quat=frame.base_quat,
        error_flags=frame.error_flags,
        protocol_version=frame.protocol_version,
    )
    if frame.joint_current is not None:
        msg.joint_current.extend(frame.joint_current)
    if frame.joint_temp is not None:
        msg.joint_temp.extend(frame.joint_temp)
    for a in frame.active_alerts:
        msg.active_alerts.add(
            id=a.id,
            severity=a.severity,
            value=a.value,
            threshold=a.threshold,
            first_set_us=a.first_set_us,
            source_id=a.source_id,
        )
    if frame.battery is not None:
        b = frame.battery
        msg.battery.voltage_v = b.voltage_v
        msg.battery.current_a = b.current_a
        msg.battery.soc_percent = b.soc_percent
        msg.battery.max_cell_temp_c = b.max_cell_temp_c
        msg.battery.protection_flags = b.protection_flags
    return msg.SerializeToString()


def decode_state(data: bytes) -> StateFrame | Rejection:
    """A serialized ``RobotState`` -> ``StateFrame`` (floats come back as float32), or a ``Rejection`` when the
    bytes are not a frame this bridge could have sent. For tests and for reading recordings."""
    msg = asimov_state_pb2.RobotState()
    try:
        msg.ParseFromString(bytes(data))
    except Exception as exc:
        return _reject(Reason.PARSE, f"not an asimov.io.RobotState: {exc}")
    try:
        return StateFrame(
            timestamp_us=int(msg.timestamp_us),
            sequence=int(msg.sequence),
            current_mode=int(msg.current_mode),
            joint_pos=tuple(msg.joint_pos),
            joint_vel=tuple(msg.joint_vel),
            base_ang_vel=tuple(msg.base_ang_vel),
            projected_gravity=tuple(msg.projected_gravity),
            base_quat=tuple(msg.base_quat),
            joint_current=tuple(msg.joint_current) or None,
            joint_temp=tuple(msg.joint_temp) or None,
            error_flags=int(msg.error_flags),
            active_alerts=tuple(
                AlertEntry(
                    id=int(a.id),
                    severity=int(a.severity),
                    value=int(a.value),
                    threshold=int(a.threshold),
                    first_set_us=int(a.first_set_us),
                    source_id=int(a.source_id),
                )
                for a in msg.active_alerts
            ),
            battery=(
                BatteryReading(
                    voltage_v=float(msg.battery.voltage_v),
                    current_a=float(msg.battery.current_a),
                    soc_percent=float(msg.battery.soc_percent),
                    max_cell_temp_c=float(msg.battery.max_cell_temp_c),
                    protection_flags=int(msg.battery.protection_flags),
                )
                if msg.HasField("battery")
                else None
            ),
            protocol_version=int(msg.protocol_version),
        )
    except ValueError as exc:
        text = str(exc)
        return _reject(Reason.NON_FINITE if "not finite" in text else Reason.BAD_LENGTH, text)


# ── counters ─────────────────────────────────────────────────────────────────────────────────────────────────────


class RejectionCounter(Mapping[str, int]):
    """Thread-safe ``reason -> count``. Written by a receive thread, read by the HTTP counters endpoint and the
    node's diagnostics, so every access takes one small lock; ``snapshot()`` is a consistent copy."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def add(self, reason: str, n: int = 1) -> int:
        """Count ``n`` more of ``reason``; returns the new count (the lane uses it for rate-limited logging)."""
        key = str(reason)
        with self._lock:
            value = self._counts.get(key, 0) + n
            self._counts[key] = value
            return value

    def __getitem__(self, reason: str) -> int:
        with self._lock:
            return self._counts[str(reason)]

    def __iter__(self) -> Iterator[str]:
        return iter(self.snapshot())

    def __len__(self) -> int:
        with self._lock:
            return len(self._counts)

    @property
    def total(self) -> int:
        with self._lock:
            return sum(self._counts.values())

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()

    def __repr__(self) -> str:
        return f"RejectionCounter({self.snapshot()!r})"
