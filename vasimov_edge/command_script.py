"""Timed command scripts: the deterministic command source for lockstep runs, benches and tests.

A script is a YAML list of entries `{t: SECONDS, cmd: damp|stand|velocity|trajectory, ...}` on firmware time.
At each control tick the edge submits every entry whose time has come, before the firmware decides that tick, so
the same script always acts on the same tick.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import yaml

from vasimov.commands import (
    CommandSource,
    DampCommand,
    RobotCommand,
    StandCommand,
    TrajectoryCommand,
    VelocityCommand,
)


class ScriptError(ValueError):
    pass


@dataclass(frozen=True)
class ScriptEntry:
    t: float
    command: RobotCommand


def parse(entries: list[dict]) -> list[ScriptEntry]:
    out: list[ScriptEntry] = []
    if not isinstance(entries, list):
        raise ScriptError("a command script is a YAML list of {t, cmd, ...} entries")
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or "t" not in e or "cmd" not in e:
            raise ScriptError(f"entry {i}: needs 't' and 'cmd', got {e!r}")
        t = float(e["t"])
        if not math.isfinite(t) or t < 0:
            raise ScriptError(f"entry {i}: t must be a finite time >= 0, got {e['t']!r}")
        kind = e["cmd"]
        src = CommandSource.SCRIPT
        if kind == "damp":
            cmd: RobotCommand = DampCommand(source=src, sequence=i)
        elif kind == "stand":
            cmd = StandCommand(source=src, sequence=i)
        elif kind == "velocity":
            cmd = VelocityCommand(float(e.get("vx", 0.0)), float(e.get("vy", 0.0)), float(e.get("vyaw", 0.0)),
                                  source=src, sequence=i)
        elif kind == "trajectory":
            pos = tuple(float(v) for v in e["positions"])
            kp = tuple(float(v) for v in e["kp"]) if "kp" in e else None
            kd = tuple(float(v) for v in e["kd"]) if "kd" in e else None
            cmd = TrajectoryCommand(pos, kp, kd, source=src, sequence=i)
        else:
            raise ScriptError(f"entry {i}: unknown cmd {kind!r}; expected damp, stand, velocity or trajectory")
        out.append(ScriptEntry(t, cmd))
    out.sort(key=lambda s: s.t)
    return out


def load(path: str | Path) -> list[ScriptEntry]:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ScriptError(f"cannot read command script {path}: {exc}") from exc
    return parse(data)


class ScriptPlayer:
    """Hands out the entries due by a given time, each exactly once."""

    def __init__(self, entries: list[ScriptEntry]) -> None:
        self.entries = entries
        self.next = 0

    def due(self, t: float) -> list[RobotCommand]:
        out = []
        while self.next < len(self.entries) and self.entries[self.next].t <= t + 1e-9:
            out.append(self.entries[self.next].command)
            self.next += 1
        return out

    def rewind(self) -> None:
        self.next = 0
