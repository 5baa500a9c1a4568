"""Timed command scripts: the deterministic command source for lockstep runs, benches and tests.

A script is a YAML list of entries `{t: SECONDS, cmd: damp|stand|velocity|trajectory, ...}` on firmware time.
At each control tick the edge submits every entry whose time has come, before the firmware decides that tick, so
the same script always acts on the same tick.

A nonzero `velocity` entry *holds* until the next entry, as a client holding a velocity does: the firmware zeroes a
velocity after 2 s without a new one (the API page's staleness watchdog), so the player re-sends the held command
every ``KEEPALIVE_S`` (the SDK's keepalive, ``KEEPALIVE_HZ = 10``) until the next entry's time. Without that,
`[{t: 4.0, cmd: velocity, vx: 0.2}, {t: 9.0, cmd: damp}]` would walk 2 s, not 5. A zero velocity is not re-sent:
the watchdog's answer to silence is the same zero (and the script would otherwise keep the arbiter's top priority
for ever). A held velocity after the last entry holds to the end of the run.
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


#: Re-send period of a held velocity (s): the SDK's keepalive (``menlo.asimov.robot.KEEPALIVE_HZ`` = 10), well
#: inside the firmware's 2 s velocity staleness watchdog.
KEEPALIVE_S = 0.1
_EPS = 1e-9


def _holds(cmd: RobotCommand) -> bool:
    return isinstance(cmd, VelocityCommand) and (cmd.vx, cmd.vy, cmd.vyaw) != (0.0, 0.0, 0.0)


class ScriptPlayer:
    """Hands out the entries due by a given time, each exactly once, plus the keepalive re-sends of a held velocity
    (see the module docstring). Pure: the caller passes firmware time, one call per control tick."""

    def __init__(self, entries: list[ScriptEntry], keepalive_s: float = KEEPALIVE_S) -> None:
        if not (math.isfinite(keepalive_s) and keepalive_s > 0.0):
            raise ScriptError(f"keepalive_s must be a finite time > 0, got {keepalive_s!r}")
        self.entries = entries
        self.keepalive_s = keepalive_s
        self.rewind()

    def due(self, t: float) -> list[RobotCommand]:
        out: list[RobotCommand] = []
        while self.next < len(self.entries) and self.entries[self.next].t <= t + _EPS:
            entry = self.entries[self.next]
            out.append(entry.command)
            self.next += 1
            # any entry ends the previous hold; a nonzero velocity starts a new one
            self.held = entry.command if _holds(entry.command) else None
            self.resend_at = entry.t + self.keepalive_s
        if not out and self.held is not None and t >= self.resend_at - _EPS:
            out.append(self.held)
            while self.resend_at <= t + _EPS:  # next re-send on the entry's keepalive grid, after t
                self.resend_at += self.keepalive_s
        return out

    def rewind(self) -> None:
        self.next = 0
        self.held: RobotCommand | None = None
        self.resend_at = math.inf
