"""Reads ROS 2 YAML launch files (the subset VASIMOV uses) so pip-only users get the same graph as `ros2 launch`.

launch/launch_ros are not installable from PyPI, so `vasimov up` interprets `launch/bringup.launch.yaml` itself:
`arg` (name, default), `set_remap` (from, to: launch_ros's rule for every node after it), `node` (pkg, exec, name,
namespace, param, remap, output, args, if, unless, on_exit, respawn, respawn_delay, respawn_max_retries) and the
substitutions `$(var NAME)`, `$(env NAME [default])` and `$(find-pkg-share PKG)`. Anything else is refused with a
clear error rather than silently ignored, so the file never means one thing to `ros2 launch` and another here.

What happens when a node exits is launch's own vocabulary, and `vasimov_tools.supervisor` gives it the same meaning:
`on_exit: shutdown` stops the whole graph (the control nodes), `respawn: "true"` starts the node again after
`respawn_delay` seconds, at most `respawn_max_retries` times (-1: no limit, launch's default; the observers), and a
node with neither just ends (reported, the graph keeps running).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_SUBST = re.compile(r"\$\(([a-z-]+)\s*([^)]*)\)")
_NODE_KEYS = {"pkg", "exec", "name", "namespace", "param", "remap", "output", "args", "ros_args", "if", "unless",
              "on_exit", "respawn", "respawn_delay", "respawn_max_retries"}
_ARG_KEYS = {"name", "default", "description"}
_REMAP_KEYS = {"from", "to"}


class LaunchFileError(ValueError):
    pass


@dataclass(frozen=True)
class NodeSpec:
    """One process to start: what `ros2 launch` would run for a `node` entry."""

    name: str
    package: str
    executable: str
    namespace: str = ""
    param_files: tuple[Path, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)
    remaps: tuple[tuple[str, str], ...] = ()
    extra_args: tuple[str, ...] = ()
    # What to do when the process exits (launch's attributes of the same names; see the module docstring).
    shutdown_on_exit: bool = False
    respawn: bool = False
    respawn_delay: float = 0.0
    respawn_max_retries: int = -1
    # s the supervisor waits after SIGINT before SIGKILL (None: its default). Not a launch-file attribute: set for
    # nodes whose stop writes something out (the recorder closing its bag), where a kill loses data.
    stop_grace_s: float | None = None
    # a kill during the stop loses data this node holds: the run then does not exit 0
    kill_loses_data: bool = False

    def ros_args(self) -> list[str]:
        """The `--ros-args ...` tail for the node's command line, in the order launch_ros uses."""
        out = ["--ros-args", "-r", f"__node:={self.name}"]
        if self.namespace.strip("/"):
            out += ["-r", f"__ns:=/{self.namespace.strip('/')}"]  # launch_ros makes it absolute too
        for path in self.param_files:
            out += ["--params-file", str(path)]
        for key, value in self.params.items():
            out += ["-p", f"{key}:={_param_literal(value)}"]
        for src, dst in self.remaps:
            out += ["-r", f"{src}:={dst}"]
        return out


@dataclass(frozen=True)
class LaunchDescription:
    args: dict[str, str]  # name -> resolved value
    arg_descriptions: dict[str, str]
    nodes: tuple[NodeSpec, ...]


def _param_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        # yaml-quote strings that would otherwise parse as another type (e.g. "" or "true")
        parsed = yaml.safe_load(value) if value else None
        return value if isinstance(parsed, str) else yaml.safe_dump(value, default_style="'").strip()
    return str(value)


def share_directory(package: str) -> Path:
    """Where `$(find-pkg-share vasimov)` points: the installed share dir if ament indexed it, else this checkout."""
    if package != "vasimov":
        raise LaunchFileError(f"$(find-pkg-share {package}): only the vasimov package is known here")
    prefix = os.environ.get("AMENT_PREFIX_PATH", "")
    for p in prefix.split(os.pathsep):
        candidate = Path(p) / "share" / package
        if p and (candidate / "launch" / "bringup.launch.yaml").is_file():
            return candidate
    return Path(__file__).resolve().parent.parent


def _substitute(text: str, args: dict[str, str]) -> str:
    def repl(m: re.Match[str]) -> str:
        kind, rest = m.group(1), m.group(2).split()
        if kind == "var":
            if len(rest) != 1 or rest[0] not in args:
                raise LaunchFileError(f"$(var {' '.join(rest)}): unknown launch argument; known: {sorted(args)}")
            return args[rest[0]]
        if kind == "env":
            if not rest:
                raise LaunchFileError("$(env) needs a variable name")
            default = " ".join(rest[1:]) if len(rest) > 1 else None
            value = os.environ.get(rest[0], default)
            if value is None:
                raise LaunchFileError(f"$(env {rest[0]}): not set and no default")
            return value
        if kind == "find-pkg-share":
            return str(share_directory(rest[0]))
        raise LaunchFileError(f"unsupported substitution $({kind} ...); supported: var, env, find-pkg-share")

    return _SUBST.sub(repl, text)


def _value(raw: Any, args: dict[str, str]) -> Any:
    """Substitute, then type the result like launch_ros does (YAML rules: 'true' -> bool, '1.5' -> float)."""
    if isinstance(raw, str):
        text = _substitute(raw, args)
        if _SUBST.search(raw):
            return yaml.safe_load(text) if text != "" else ""
        return text
    return raw


def load(path: Path | str, overrides: dict[str, str] | None = None) -> LaunchDescription:
    """Parse a launch file; `overrides` are `name:=value` launch arguments. Unknown overrides are an error."""
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise LaunchFileError(f"cannot read launch file {path}: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("launch"), list):
        raise LaunchFileError(f"{path}: top level must be a mapping with a 'launch' list")
    overrides = dict(overrides or {})
    args: dict[str, str] = {}
    descriptions: dict[str, str] = {}
    nodes: list[NodeSpec] = []
    global_remaps: list[tuple[str, str]] = []  # set_remap rules so far; launch_ros puts them before a node's own
    for entry in doc["launch"]:
        if not isinstance(entry, dict) or len(entry) != 1:
            raise LaunchFileError(f"{path}: each launch entry must be a single-key mapping, got {entry!r}")
        (kind, body), = entry.items()
        if kind == "arg":
            unknown = set(body) - _ARG_KEYS
            if unknown:
                raise LaunchFileError(f"{path}: arg {body.get('name')}: unsupported keys {sorted(unknown)}")
            name = str(body["name"])
            args[name] = overrides.pop(name) if name in overrides else str(body.get("default", ""))
            descriptions[name] = str(body.get("description", ""))
        elif kind == "set_remap":
            if not isinstance(body, dict) or set(body) != _REMAP_KEYS:
                raise LaunchFileError(f"{path}: set_remap needs exactly 'from' and 'to', got {body!r}")
            global_remaps.append((str(_value(body["from"], args)), str(_value(body["to"], args))))
        elif kind == "node":
            if _condition(body, args, path):
                nodes.append(_node(body, args, path, tuple(global_remaps)))
        else:
            raise LaunchFileError(f"{path}: unsupported launch action {kind!r}; supported: arg, set_remap, node")
    if overrides:
        raise LaunchFileError(f"unknown launch arguments {sorted(overrides)}; known: {sorted(args)}")
    return LaunchDescription(args=args, arg_descriptions=descriptions, nodes=tuple(nodes))


def _condition(body: dict[str, Any], args: dict[str, str], path: Path) -> bool:
    """launch's `if`/`unless`: the substituted value must read as a boolean (true/false/1/0), as in ROS 2 launch."""
    keep = True
    for key, want in (("if", True), ("unless", False)):
        if key not in body:
            continue
        text = _substitute(str(body[key]), args).strip().lower()
        if text not in ("true", "false", "1", "0"):
            raise LaunchFileError(f"{path}: node {body.get('name')}: {key}: {text!r} is not a boolean")
        keep = keep and ((text in ("true", "1")) == want)
    return keep


def _node(body: dict[str, Any], args: dict[str, str], path: Path,
          global_remaps: tuple[tuple[str, str], ...] = ()) -> NodeSpec:
    unknown = set(body) - _NODE_KEYS
    if unknown:
        raise LaunchFileError(f"{path}: node {body.get('name')}: unsupported keys {sorted(unknown)}")
    files: list[Path] = []
    params: dict[str, Any] = {}
    for p in body.get("param", []) or []:
        if "from" in p:
            files.append(Path(_value(p["from"], args)))
        elif "name" in p:
            params[str(p["name"])] = _value(p.get("value"), args)
        else:
            raise LaunchFileError(f"{path}: param entry needs 'from' or 'name': {p!r}")
    remaps = global_remaps + tuple((str(_value(r["from"], args)), str(_value(r["to"], args)))
                                   for r in body.get("remap", []) or [])
    extra = tuple(str(_value(a, args)) for a in str(body.get("args", "")).split() if a)
    name = str(_value(body.get("name", body["exec"]), args))
    on_exit = body.get("on_exit")
    if on_exit is not None and on_exit != "shutdown":
        raise LaunchFileError(f"{path}: node {name}: on_exit: only 'shutdown' is supported (as in ros2 launch), "
                              f"got {on_exit!r}")
    respawn = _substitute(str(body.get("respawn", "false")), args).strip().lower()
    if respawn not in ("true", "false", "1", "0"):
        raise LaunchFileError(f"{path}: node {name}: respawn: {respawn!r} is not a boolean")
    try:
        delay = float(body.get("respawn_delay", 0.0))
        retries = body.get("respawn_max_retries", -1)
        if isinstance(retries, bool) or not isinstance(retries, int):
            raise ValueError(f"respawn_max_retries must be an integer, got {retries!r}")
    except (TypeError, ValueError) as exc:
        raise LaunchFileError(f"{path}: node {name}: {exc}") from exc
    if not delay >= 0.0:
        raise LaunchFileError(f"{path}: node {name}: respawn_delay must be >= 0, got {delay}")
    return NodeSpec(
        name=name,
        package=str(body["pkg"]),
        executable=str(body["exec"]),
        namespace=str(_value(body.get("namespace", ""), args)),
        param_files=tuple(files),
        params=params,
        remaps=remaps,
        extra_args=extra,
        shutdown_on_exit=on_exit == "shutdown",
        respawn=respawn in ("true", "1"),
        respawn_delay=delay,
        respawn_max_retries=retries,
    )
