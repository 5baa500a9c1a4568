"""The graph's ROS parameters as Foxglove parameters: naming, value conversion, validation of a set request.

Foxglove's parameters panel shows one flat list, so a parameter is named ``<node fully qualified name>.<param>``
(``/plant.seed``), as ROS tooling prints them. Node names cannot contain a dot, so the first dot splits the name
back. A set request is checked here before anything is sent to a node: the parameter must exist, must not be
read-only (those shape processes and sockets and need a restart) nor an rclpy built-in (``use_sim_time``,
``qos_overrides.*``: not tuning knobs), must keep its declared type and stay inside its declared range; the
message says what would have been valid. A request naming more than ``MAX_NAMES_PER_REQUEST`` parameters is
refused whole.

Pure apart from the message types: no node, no server; ``ParameterCache`` is the thread-safe store the node's
executor writes and the SDK's threads read.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from foxglove import Parameter as FoxgloveParameter
from foxglove import ParameterType as FoxgloveParameterType
from rcl_interfaces.msg import ParameterDescriptor, ParameterType, ParameterValue

TYPE_NAMES = {
    ParameterType.PARAMETER_NOT_SET: "not set",
    ParameterType.PARAMETER_BOOL: "bool",
    ParameterType.PARAMETER_INTEGER: "integer",
    ParameterType.PARAMETER_DOUBLE: "double",
    ParameterType.PARAMETER_STRING: "string",
    ParameterType.PARAMETER_BYTE_ARRAY: "byte array",
    ParameterType.PARAMETER_BOOL_ARRAY: "bool array",
    ParameterType.PARAMETER_INTEGER_ARRAY: "integer array",
    ParameterType.PARAMETER_DOUBLE_ARRAY: "double array",
    ParameterType.PARAMETER_STRING_ARRAY: "string array",
}
_FIELD = {
    ParameterType.PARAMETER_BOOL: "bool_value",
    ParameterType.PARAMETER_INTEGER: "integer_value",
    ParameterType.PARAMETER_DOUBLE: "double_value",
    ParameterType.PARAMETER_STRING: "string_value",
    ParameterType.PARAMETER_BYTE_ARRAY: "byte_array_value",
    ParameterType.PARAMETER_BOOL_ARRAY: "bool_array_value",
    ParameterType.PARAMETER_INTEGER_ARRAY: "integer_array_value",
    ParameterType.PARAMETER_DOUBLE_ARRAY: "double_array_value",
    ParameterType.PARAMETER_STRING_ARRAY: "string_array_value",
}


#: Parameters rclpy declares on every node, writable by default. They change how a node keeps time or what it
#: serves, not how the robot is tuned, so a Foxglove client may read them but never set them.
RCLPY_BUILTINS: tuple[str, ...] = ("use_sim_time", "start_type_description_service")
RCLPY_BUILTIN_PREFIXES: tuple[str, ...] = ("qos_overrides.",)
#: Most parameter names one get/set request may carry. The whole graph has a few hundred; a request naming
#: thousands is refused as a whole (one log line) rather than checked name by name.
MAX_NAMES_PER_REQUEST = 1000


def is_rclpy_builtin(name: str) -> bool:
    return name in RCLPY_BUILTINS or name.startswith(RCLPY_BUILTIN_PREFIXES)


def request_too_large(n_names: int) -> str | None:
    """None if a request naming ``n_names`` parameters is served, else why it is refused."""
    if n_names > MAX_NAMES_PER_REQUEST:
        return f"a parameter request may name at most {MAX_NAMES_PER_REQUEST} parameters, this one names {n_names}"
    return None


def qualified(node: str, name: str) -> str:
    return f"{node}.{name}"


def split_qualified(qname: str) -> tuple[str, str]:
    """``/ns/node.param.sub`` -> (``/ns/node``, ``param.sub``)."""
    node, sep, name = qname.partition(".")
    if not sep or not node.startswith("/") or not name:
        raise ValueError(f"{qname!r} is not a graph parameter name (expected /node.parameter)")
    return node, name


def from_ros(value: ParameterValue) -> Any:
    """rcl_interfaces/ParameterValue -> a plain Python value (None when not set)."""
    field = _FIELD.get(value.type)
    if field is None:
        return None
    v = getattr(value, field)
    if value.type == ParameterType.PARAMETER_BYTE_ARRAY:
        return b"".join(bytes(x) if isinstance(x, bytes) else bytes([int(x)]) for x in v)
    if value.type in (ParameterType.PARAMETER_BOOL_ARRAY, ParameterType.PARAMETER_INTEGER_ARRAY,
                      ParameterType.PARAMETER_DOUBLE_ARRAY, ParameterType.PARAMETER_STRING_ARRAY):
        return list(v)
    return v


def to_ros(value: Any, ros_type: int) -> ParameterValue:
    """A value already checked by ``coerce`` -> rcl_interfaces/ParameterValue of ``ros_type``."""
    out = ParameterValue(type=ros_type)
    field = _FIELD.get(ros_type)
    if field is not None:
        setattr(out, field, list(value) if ros_type == ParameterType.PARAMETER_BYTE_ARRAY else value)
    return out


def to_foxglove(qname: str, value: Any, ros_type: int) -> FoxgloveParameter:
    """Typed for the wire: doubles keep a Float64 hint so 1.0 does not come back as the integer 1."""
    if value is None:
        return FoxgloveParameter(qname)
    if ros_type == ParameterType.PARAMETER_DOUBLE:
        return FoxgloveParameter(qname, value=float(value), type=FoxgloveParameterType.Float64)
    if ros_type == ParameterType.PARAMETER_DOUBLE_ARRAY:
        return FoxgloveParameter(qname, value=[float(v) for v in value], type=FoxgloveParameterType.Float64Array)
    if ros_type == ParameterType.PARAMETER_BYTE_ARRAY:
        return FoxgloveParameter(qname, value=bytes(value), type=FoxgloveParameterType.ByteArray)
    return FoxgloveParameter(qname, value=value)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(float(v)):
        raise ValueError(f"{v!r} is not a finite number")
    return float(v)


def coerce(value: Any, ros_type: int) -> Any:
    """A client's value as the parameter's declared type, or ValueError naming the expected type.

    JSON does not keep 1.0 apart from 1, so an integral number is accepted for a double and a whole-valued float
    for an integer; nothing else changes type.
    """
    expected = TYPE_NAMES.get(ros_type, str(ros_type))
    try:
        if ros_type == ParameterType.PARAMETER_BOOL and isinstance(value, bool):
            return value
        if ros_type == ParameterType.PARAMETER_INTEGER:
            if _is_int(value):
                return int(value)
            f = _number(value)
            if f.is_integer():
                return int(f)
        if ros_type == ParameterType.PARAMETER_DOUBLE:
            return _number(value)
        if ros_type == ParameterType.PARAMETER_STRING and isinstance(value, str):
            return value
        if ros_type == ParameterType.PARAMETER_BYTE_ARRAY and isinstance(value, bytes | bytearray):
            return bytes(value)
        if isinstance(value, list):
            if ros_type == ParameterType.PARAMETER_BOOL_ARRAY and all(isinstance(v, bool) for v in value):
                return list(value)
            if ros_type == ParameterType.PARAMETER_INTEGER_ARRAY:
                return [coerce(v, ParameterType.PARAMETER_INTEGER) for v in value]
            if ros_type == ParameterType.PARAMETER_DOUBLE_ARRAY:
                return [_number(v) for v in value]
            if ros_type == ParameterType.PARAMETER_STRING_ARRAY and all(isinstance(v, str) for v in value):
                return list(value)
    except ValueError:
        pass
    raise ValueError(f"{value!r} is not a valid {expected}")


def check_range(value: Any, descriptor: ParameterDescriptor) -> str | None:
    """None if ``value`` is inside the descriptor's declared range, else the range it should be in."""
    for r in descriptor.integer_range:
        if _is_int(value) and not (r.from_value <= value <= r.to_value):
            return f"{value} is outside [{r.from_value}, {r.to_value}]"
    for r in descriptor.floating_point_range:
        if isinstance(value, float) and not (r.from_value <= value <= r.to_value):
            return f"{value:g} is outside [{r.from_value:g}, {r.to_value:g}]"
    return None


@dataclass(frozen=True)
class Entry:
    """One parameter of one node, as last read from it."""

    node: str
    name: str
    value: Any
    descriptor: ParameterDescriptor

    @property
    def qname(self) -> str:
        return qualified(self.node, self.name)

    @property
    def ros_type(self) -> int:
        return int(self.descriptor.type)

    def to_foxglove(self) -> FoxgloveParameter:
        return to_foxglove(self.qname, self.value, self.ros_type)


def validate_set(entry: Entry | None, qname: str, value: Any) -> tuple[Any, str | None]:
    """(coerced value, None) if setting ``qname`` to ``value`` may go to the node, else (None, the reason)."""
    if entry is None:
        return None, f"{qname}: no such parameter in the graph"
    if entry.descriptor.read_only:
        return None, f"{qname} is read-only (it needs a restart of {entry.node}); not changed"
    if is_rclpy_builtin(entry.name):
        return None, f"{qname} is an rclpy built-in, read-only from Foxglove; not changed"
    if entry.ros_type == ParameterType.PARAMETER_NOT_SET:
        return None, f"{qname} has no declared type; not changed"
    try:
        coerced = coerce(value, entry.ros_type)
    except ValueError as exc:
        return None, f"{qname}: {exc}; not changed"
    problem = check_range(coerced, entry.descriptor)
    if problem:
        return None, f"{qname}: {problem}; not changed"
    return coerced, None


class ParameterCache:
    """Every known parameter by qualified name; written by the executor, read by the SDK's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, Entry] = {}

    def replace_node(self, node: str, entries: Iterable[Entry]) -> list[Entry]:
        """Set a node's full parameter list; return the entries that are new or changed value."""
        fresh = {e.qname: e for e in entries}
        with self._lock:
            changed = [e for q, e in fresh.items() if q not in self._entries or self._entries[q].value != e.value]
            for q in [q for q, e in self._entries.items() if e.node == node and q not in fresh]:
                del self._entries[q]
            self._entries.update(fresh)
        return changed

    def update_value(self, node: str, name: str, value: Any) -> Entry | None:
        """A new value for a known parameter (from /parameter_events); the updated entry, or None if unknown."""
        q = qualified(node, name)
        with self._lock:
            old = self._entries.get(q)
            if old is None:
                return None
            new = Entry(old.node, old.name, value, old.descriptor)
            self._entries[q] = new
            return new

    def drop_node(self, node: str) -> None:
        with self._lock:
            for q in [q for q, e in self._entries.items() if e.node == node]:
                del self._entries[q]

    def nodes(self) -> set[str]:
        with self._lock:
            return {e.node for e in self._entries.values()}

    def get(self, qname: str) -> Entry | None:
        with self._lock:
            return self._entries.get(qname)

    def select(self, names: Iterable[str]) -> list[Entry]:
        """The named entries (unknown names skipped); all of them, sorted, when ``names`` is empty."""
        names = list(names)
        with self._lock:
            if not names:
                return [self._entries[q] for q in sorted(self._entries)]
            return [self._entries[q] for q in names if q in self._entries]
