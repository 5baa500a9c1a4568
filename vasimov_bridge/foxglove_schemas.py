"""ROS 2 message definitions as Foxglove `ros2msg` schemas, in the MCAP convention rosbag2 writes.

Foxglove decodes a CDR channel only if the channel carries the full definition of its type: the type's own `.msg`
text followed by every type it uses, each introduced by a line of 80 ``=`` and ``MSG: pkg/Type``. The bridge reads
those texts from the installed interface packages (``share/<pkg>/msg/<Type>.msg``, the files rosidl generated the
Python classes from), so the schema is the definition the publisher was built with, not a re-typed copy.

Pure: the file lookup is a function passed in, so tests can feed definitions from a dict.
"""

from __future__ import annotations

import os
import re
import struct
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

SCHEMA_ENCODING = "ros2msg"
MESSAGE_ENCODING = "cdr"
SEPARATOR = "=" * 80

# rosidl's built-in field types: nothing to append for them.
PRIMITIVES = frozenset({
    "bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
    "uint64", "string", "wstring",
})

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_BOUNDED_STRING = re.compile(r"^(w?string)<=\d+$")
_CONSTANT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*\s*=")

MsgLoader = Callable[[str, str], str]  # (package, type name) -> .msg text


class SchemaError(ValueError):
    """A type whose definition cannot be assembled (malformed name, missing or unreadable .msg file)."""


def split_type(type_name: str) -> tuple[str, str]:
    """``pkg/msg/Type`` or ``pkg/Type`` -> ``(pkg, Type)``; anything else (services, actions, junk) is refused."""
    parts = type_name.strip().split("/")
    if len(parts) == 3 and parts[1] == "msg":
        pkg, name = parts[0], parts[2]
    elif len(parts) == 2:
        pkg, name = parts
    else:
        raise SchemaError(f"{type_name!r} is not a message type name (expected pkg/msg/Type or pkg/Type)")
    if not (_NAME.match(pkg) and _NAME.match(name)):
        raise SchemaError(f"{type_name!r} is not a message type name (expected pkg/msg/Type or pkg/Type)")
    return pkg, name


def schema_name(type_name: str) -> str:
    """The channel's schema name: the ROS 2 spelling ``pkg/msg/Type`` Foxglove shows and matches on."""
    pkg, name = split_type(type_name)
    return f"{pkg}/msg/{name}"


def field_dependencies(text: str, package: str) -> list[str]:
    """The complex types (``pkg/Type``) a .msg text uses, in order of first use.

    Each non-comment line starts with the field or constant type; array suffixes (``[]``, ``[3]``, ``[<=5]``) and
    string bounds do not change the type. A bare name means a type of the same package, as rosidl resolves it.
    """
    out: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        base = line.split()[0].split("[", 1)[0]
        bounded = _BOUNDED_STRING.match(base)
        if bounded:
            base = bounded.group(1)
        if base in PRIMITIVES:
            continue
        dep = "/".join(split_type(base)) if "/" in base else f"{package}/{base}"
        if not _NAME.match(dep.split("/")[1]):
            raise SchemaError(f"cannot read the field type of line {raw!r} in a {package} message")
        if dep not in out:
            out.append(dep)
    return out


def first_field_type(text: str, package: str) -> str | None:
    """The type of the first field (constants skipped), as ``pkg/Type`` for complex types; None if none."""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        base = line.split()[0]
        if _CONSTANT.match(line[len(base):].strip()):
            continue  # TYPE NAME=VALUE
        if base in PRIMITIVES or "[" in base or _BOUNDED_STRING.match(base):
            return base
        return "/".join(split_type(base)) if "/" in base else f"{package}/{base}"
    return None


def leads_with_stamp(type_name: str, load: MsgLoader, depth: int = 4) -> bool:
    """True if a message of this type starts with a builtin_interfaces/Time (directly, or as the first field of
    its first field, like std_msgs/Header): its CDR then carries that stamp in bytes 4..12."""
    pkg, name = split_type(type_name)
    for _ in range(depth):
        first = first_field_type(_load(load, pkg, name), pkg)
        if first is None or "/" not in first:
            return False
        if first == "builtin_interfaces/Time":
            return True
        pkg, name = first.split("/")
    return False


def cdr_leading_stamp_ns(data: bytes) -> int | None:
    """The leading builtin_interfaces/Time of a CDR message in nanoseconds (None if too short or unset).

    Layout: a 4-byte encapsulation header (byte 1 = 1 for little endian), then int32 sec and uint32 nanosec,
    aligned at the start of the body.
    """
    if len(data) < 12 or data[0] != 0 or data[1] not in (0, 1):
        return None
    sec, nsec = struct.unpack_from("<iI" if data[1] == 1 else ">iI", data, 4)
    if sec < 0 or nsec >= 1_000_000_000 or (sec == 0 and nsec == 0):
        return None
    return sec * 1_000_000_000 + nsec


def ros2msg_schema(type_name: str, load: MsgLoader) -> str:
    """The full ``ros2msg`` schema text of ``type_name``: its definition, then each dependency once (depth first)."""
    pkg, name = split_type(type_name)
    root = _load(load, pkg, name)
    seen: set[str] = {f"{pkg}/{name}"}
    order: list[tuple[str, str]] = []

    def visit(text: str, package: str) -> None:
        for dep in field_dependencies(text, package):
            if dep in seen:
                continue
            seen.add(dep)
            dep_pkg, dep_name = dep.split("/")
            dep_text = _load(load, dep_pkg, dep_name)
            order.append((dep, dep_text))
            visit(dep_text, dep_pkg)

    visit(root, pkg)
    parts = [root.rstrip()]
    for dep, text in order:
        parts.append(f"{SEPARATOR}\nMSG: {dep}\n{text.rstrip()}")
    return "\n".join(parts) + "\n"


def _load(load: MsgLoader, pkg: str, name: str) -> str:
    try:
        return load(pkg, name)
    except SchemaError:
        raise
    except (OSError, KeyError, LookupError) as exc:
        raise SchemaError(f"no definition for {pkg}/msg/{name}: {exc}") from exc


def share_roots() -> list[Path]:
    """Where interface packages install their definitions: every ament prefix, then this interpreter's prefix
    (the pip-only wheels put ``share/<pkg>`` under the venv, which is not always on AMENT_PREFIX_PATH)."""
    roots = [Path(p) for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    for prefix in (sys.prefix, sys.base_prefix):
        if Path(prefix) not in roots:
            roots.append(Path(prefix))
    return roots


class MsgFileLoader:
    """Loads ``<root>/share/<pkg>/msg/<Type>.msg`` from the first root that has it, caching the text."""

    def __init__(self, roots: Iterable[Path] | None = None) -> None:
        self.roots = list(roots) if roots is not None else share_roots()
        self._cache: dict[tuple[str, str], str] = {}

    def __call__(self, pkg: str, name: str) -> str:
        key = (pkg, name)
        if key not in self._cache:
            for root in self.roots:
                path = root / "share" / pkg / "msg" / f"{name}.msg"
                if path.is_file():
                    self._cache[key] = path.read_text(encoding="utf-8")
                    break
            else:
                looked = ", ".join(str(r / "share" / pkg / "msg") for r in self.roots)
                raise SchemaError(f"no {name}.msg for {pkg}/msg/{name} (looked in {looked})")
        return self._cache[key]
