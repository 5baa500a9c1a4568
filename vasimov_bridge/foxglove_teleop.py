"""What a Foxglove client may publish into the graph, and how its messages become robot commands.

Foxglove is a viewer with a teleop panel, not a second control plane: a client may publish on two topics only,

* ``/cmd_vel`` (geometry_msgs/Twist): a velocity for the firmware, vx = linear.x, vy = linear.y, vyaw = angular.z;
* ``/vasimov/teleop/mode`` (std_msgs/String): ``stand``, ``damp`` or ``balance`` (MOVE at zero velocity, what
  ``menlo balance`` sends).

Everything else is refused with a reason. Messages arrive CDR- or JSON-encoded (the app picks from the server's
supported encodings); both are decoded and checked like the SDK lane checks a datagram: parseable, inside the teleop
envelope, no axis the firmware cannot follow, and then the one command validator every inlet shares
(``vasimov.command_rules``), under its one reason vocabulary. An out-of-envelope velocity is refused rather than
clamped, so a mis-configured panel is noticed; the firmware still clamps accepted ones to its own caps.

Pure: bytes and limits in, a typed command or a ``Rejection`` out.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from geometry_msgs.msg import Twist
from rclpy.serialization import deserialize_message
from std_msgs.msg import String

from vasimov.command_rules import Reason, check_finite, validated
from vasimov.commands import (
    CommandSource,
    DampCommand,
    Rejection,
    RobotCommand,
    StandCommand,
    VelocityCommand,
)
from vasimov.ros import topics

# topic -> the one type a client may publish on it
ALLOWED_TOPICS: dict[str, str] = {
    topics.CMD_VEL: "geometry_msgs/msg/Twist",
    topics.TELEOP_MODE: "std_msgs/msg/String",
}
CLIENT_ENCODINGS: tuple[str, ...] = ("cdr", "json")
MODES: tuple[str, ...] = ("stand", "damp", "balance")
MAX_PAYLOAD = 4096  # bytes; a Twist is 52 in CDR, a mode string a few more: anything far larger is not teleop

_TWIST_AXES = ("linear", "angular")
_XYZ = ("x", "y", "z")


@dataclass(frozen=True)
class TeleopLimits:
    """The teleop envelope: largest |vx|, |vy| (m/s) and |vyaw| (rad/s) a client may ask for."""

    max_linear: float
    max_angular: float

    def __post_init__(self) -> None:
        for name in ("max_linear", "max_angular"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0.0):
                raise ValueError(f"TeleopLimits.{name} must be a finite number >= 0, got {v!r}")


def _normalise_schema(name: str) -> str:
    parts = name.strip().split("/")
    return f"{parts[0]}/msg/{parts[1]}" if len(parts) == 2 else name.strip()


def check_advertisement(topic: str, encoding: str, schema_name: str) -> Rejection | None:
    """None if a client may publish ``topic`` with this encoding and schema, else why not (and what would do)."""
    expected = ALLOWED_TOPICS.get(topic)
    if expected is None:
        return Rejection(Reason.NOT_ALLOWED, f"clients may not publish {topic!r}; allowed: {sorted(ALLOWED_TOPICS)}")
    if encoding not in CLIENT_ENCODINGS:
        return Rejection(Reason.UNSUPPORTED_ENCODING,
                         f"{topic}: encoding {encoding!r} is not one of {CLIENT_ENCODINGS}")
    # CDR bytes only mean something for the right type; JSON is checked field by field, so a missing name is fine.
    if (schema_name or encoding == "cdr") and _normalise_schema(schema_name) != expected:
        return Rejection(Reason.WRONG_SCHEMA, f"{topic} carries {expected}, not {schema_name!r}")
    return None


def decode(topic: str, encoding: str, data: bytes, limits: TeleopLimits) -> RobotCommand | Rejection:
    """A client message on an allowed topic -> the command it asks for, or the reason it is refused."""
    if topic not in ALLOWED_TOPICS:
        return Rejection(Reason.NOT_ALLOWED, f"clients may not publish {topic!r}; allowed: {sorted(ALLOWED_TOPICS)}")
    if len(data) > MAX_PAYLOAD:
        return Rejection(Reason.TOO_LARGE, f"{topic}: {len(data)} bytes (limit {MAX_PAYLOAD})")
    if topic == topics.CMD_VEL:
        return _velocity(encoding, data, limits)
    return _mode(encoding, data)


def _velocity(encoding: str, data: bytes, limits: TeleopLimits) -> RobotCommand | Rejection:
    values = _twist_values(encoding, data)
    if isinstance(values, Rejection):
        return values
    non_finite = check_finite(values.values(), "cmd_vel")  # all six: a NaN on an unused axis is refused too
    if non_finite is not None:
        return non_finite
    unsupported = {k: v for k, v in values.items() if k in ("linear.z", "angular.x", "angular.y") and v != 0.0}
    if unsupported:
        return Rejection(Reason.UNSUPPORTED_AXIS,
                         f"the robot follows linear.x, linear.y and angular.z only; got {unsupported}")
    vx, vy, vyaw = values["linear.x"], values["linear.y"], values["angular.z"]
    if abs(vx) > limits.max_linear or abs(vy) > limits.max_linear or abs(vyaw) > limits.max_angular:
        return Rejection(Reason.OUT_OF_ENVELOPE,
                         f"cmd_vel ({vx:g}, {vy:g}, {vyaw:g}) is outside the teleop envelope |vx|,|vy| <= "
                         f"{limits.max_linear:g} m/s, |vyaw| <= {limits.max_angular:g} rad/s")
    return validated(VelocityCommand(vx, vy, vyaw, source=CommandSource.FOXGLOVE))


def _twist_values(encoding: str, data: bytes) -> dict[str, float] | Rejection:
    if encoding == "cdr":
        try:
            msg = deserialize_message(data, Twist)
        except Exception as exc:  # rclpy raises its own RMWError for malformed CDR
            return Rejection(Reason.PARSE, f"cmd_vel is not a CDR geometry_msgs/Twist: {exc}")
        return {f"{axis}.{c}": float(getattr(getattr(msg, axis), c)) for axis in _TWIST_AXES for c in _XYZ}
    if encoding != "json":
        return Rejection(Reason.UNSUPPORTED_ENCODING, f"encoding {encoding!r} is not one of {CLIENT_ENCODINGS}")
    doc = _json_object(data, "cmd_vel")
    if isinstance(doc, Rejection):
        return doc
    extra = set(doc) - set(_TWIST_AXES)
    if extra:
        return Rejection(Reason.PARSE, f"cmd_vel has unknown fields {sorted(extra)}; a Twist has linear and angular")
    out: dict[str, float] = {}
    for axis in _TWIST_AXES:
        vec = doc.get(axis, {})
        if not isinstance(vec, dict) or set(vec) - set(_XYZ):
            return Rejection(Reason.PARSE, f"cmd_vel.{axis} must be an object with x, y, z, got {vec!r}")
        for c in _XYZ:
            v = vec.get(c, 0.0)
            if isinstance(v, bool) or not isinstance(v, int | float):
                return Rejection(Reason.PARSE, f"cmd_vel.{axis}.{c} must be a number, got {v!r}")
            out[f"{axis}.{c}"] = float(v)
    return out


def _mode(encoding: str, data: bytes) -> RobotCommand | Rejection:
    if encoding == "cdr":
        try:
            text = deserialize_message(data, String).data
        except Exception as exc:
            return Rejection(Reason.PARSE, f"mode is not a CDR std_msgs/String: {exc}")
    elif encoding == "json":
        doc = _json_object(data, "mode")
        if isinstance(doc, Rejection):
            return doc
        if set(doc) != {"data"} or not isinstance(doc["data"], str):
            return Rejection(Reason.PARSE, f'mode must be {{"data": "<{"|".join(MODES)}>"}}, got {doc!r}')
        text = doc["data"]
    else:
        return Rejection(Reason.UNSUPPORTED_ENCODING, f"encoding {encoding!r} is not one of {CLIENT_ENCODINGS}")
    mode = text.strip().lower()
    if mode == "stand":
        return StandCommand(source=CommandSource.FOXGLOVE)
    if mode == "damp":
        return DampCommand(source=CommandSource.FOXGLOVE)
    if mode == "balance":
        return VelocityCommand(0.0, 0.0, 0.0, source=CommandSource.FOXGLOVE)
    return Rejection(Reason.UNKNOWN_MODE, f"mode {text[:40]!r} is not one of {MODES}")


MAX_JSON_DEPTH = 4  # a Twist is {"linear": {...}}: depth 2; deeper documents are refused before parsing


def json_depth(text: str) -> int:
    """Deepest nesting of objects/arrays in a JSON text (brackets inside strings do not count).

    Checked before ``json.loads``, whose recursive parser raises RecursionError (not ValueError) on a few
    thousand nested brackets: one small message must not be able to reach that."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _json_object(data: bytes, what: str) -> dict[str, Any] | Rejection:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Rejection(Reason.PARSE, f"{what} is not JSON: {exc}")
    depth = json_depth(text)
    if depth > MAX_JSON_DEPTH:
        return Rejection(Reason.PARSE, f"{what} is nested {depth} levels deep (limit {MAX_JSON_DEPTH})")
    try:
        doc = json.loads(text)
    except ValueError as exc:
        return Rejection(Reason.PARSE, f"{what} is not JSON: {exc}")
    if not isinstance(doc, dict):
        return Rejection(Reason.PARSE, f"{what} must be a JSON object, got {type(doc).__name__}")
    return doc
