"""Timed command scripts: the deterministic command source for lockstep runs, benches and tests.

A script is a YAML list of entries `{t: SECONDS, cmd: damp|stand|velocity|trajectory|push|force, ...}` on firmware
time. At each control tick the edge submits every entry whose time has come, before the firmware decides that tick, so
the same script always acts on the same tick.

`push` and `force` entries are disturbances, not robot commands: `{t, cmd: push, body, force: [x, y, z], duration}`
and `{t, cmd: force, body, force: [x, y, z]}` (a sustained force until the next `force` entry on that body; `[0, 0,
0]` clears it). They are checked at load by the simulator's one rule set (``vasimov.sim_control``, the HTTP API's)
and the robot's body list, and go to the plant (``SimControl``), which applies them from the control period that
answers the entry's tick -- sent one tick ahead, so they act on the same physics step in every run. A disturbance due
at t = 0 acts from tick 1 (20 ms), the first the edge can announce ahead.

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
from vasimov.model.urdf import link_names
from vasimov.sim_control import PushError, parse_force, parse_push


class ScriptError(ValueError):
    pass


@dataclass(frozen=True)
class Disturbance:
    """A push (``duration`` > 0) or a sustained force (``duration`` None) for the plant, already validated."""

    body: str
    force: tuple[float, float, float]
    duration: float | None = None


@dataclass(frozen=True)
class ScriptEntry:
    t: float
    command: RobotCommand | Disturbance


def _disturbance(i: int, e: dict) -> Disturbance:
    fields = {k: v for k, v in e.items() if k not in ("t", "cmd")}
    try:
        if e["cmd"] == "push":
            p = parse_push(fields)
            d = Disturbance(p.body, p.force, p.duration)
        else:
            f = parse_force(fields)
            d = Disturbance(f.body, f.force)
    except PushError as exc:
        raise ScriptError(f"entry {i}: {e['cmd']}: {exc}") from None
    if d.body not in link_names():
        raise ScriptError(f"entry {i}: {e['cmd']}: unknown body {d.body!r}; valid: {', '.join(link_names())}")
    return d


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
        if kind in ("push", "force"):
            cmd: RobotCommand | Disturbance = _disturbance(i, e)
        elif kind == "damp":
            cmd = DampCommand(source=src, sequence=i)
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
            raise ScriptError(f"entry {i}: unknown cmd {kind!r}; expected damp, stand, velocity, trajectory, push "
                              "or force")
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
        self.entries = [e for e in entries if not isinstance(e.command, Disturbance)]
        self.disturbances = [e for e in entries if isinstance(e.command, Disturbance)]
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

    def disturbances_due(self, t: float) -> list[Disturbance]:
        """The disturbances due by ``t`` (each once): the edge asks one control period ahead."""
        out: list[Disturbance] = []
        while self.next_disturbance < len(self.disturbances) and self.disturbances[self.next_disturbance].t <= t + _EPS:
            out.append(self.disturbances[self.next_disturbance].command)
            self.next_disturbance += 1
        return out

    def rewind(self) -> None:
        self.next = 0
        self.next_disturbance = 0
        self.held: RobotCommand | None = None
        self.resend_at = math.inf
