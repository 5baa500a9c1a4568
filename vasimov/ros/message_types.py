"""ROS message type names -> the generated Python classes, for nodes that subscribe to types they learn at run time
(the Foxglove bridge, the recorder, the introspection tools). rosidl_runtime_py is not on PyPI, so the generated
``<pkg>.msg`` module is imported directly."""

from __future__ import annotations

import importlib


class MessageTypeError(ValueError):
    """A type name that is not a message type, or one whose package is not importable here; the message says why."""


def message_class(type_name: str) -> type:
    """``pkg/msg/Name`` -> the generated Python class; ``MessageTypeError`` for anything else."""
    parts = type_name.strip().split("/")
    if len(parts) != 3 or parts[1] != "msg" or not parts[0] or not parts[2]:
        raise MessageTypeError(f"type {type_name!r} is not a message type (pkg/msg/Name)")
    pkg, _, name = parts
    try:
        return getattr(importlib.import_module(f"{pkg}.msg"), name)
    except (ImportError, AttributeError) as exc:
        raise MessageTypeError(f"message type {type_name} is not importable here ({exc}); is {pkg} installed in "
                               f"this environment?") from exc
