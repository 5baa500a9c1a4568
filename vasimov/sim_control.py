"""The rules of the simulator's own controls that every inlet applies the same way: an external push and a
sustained force.

A push or a force can arrive over the HTTP API (``POST /api/sim/push``, ``POST``/``DELETE /api/sim/force``), the ROS
service ``/vasimov/sim/push``, a command script entry, or as a ``SimControl`` message from anyone on the ROS graph;
the plant applies them all, so the bounds live here, below every inlet, and each inlet maps ``PushError`` to its own
answer (HTTP 400, a service reply, a script load error, a logged and counted sim-control rejection).

What the plant did is told on ``/vasimov/sim/events`` (``event_json``), so a recording explains a run.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from vasimov.joints import facts

#: Largest |force| (N) of one push.
MAX_PUSH_FORCE_N = 2000.0
#: Longest push (s).
MAX_PUSH_DURATION_S = 5.0
#: The largest push impulse |force| x duration (N s) the physics survives on every body, in every axis direction,
#: hanging on the gantry or free: measured at the 2000 N force cap, 800 N s never diverged and 1500 N s did once (a
#: forward push on the neck), 10,000 N s (2000 N for 5 s) in 130 of 312 cases. 600 N s leaves a margin and is
#: still 15x the largest push the built-in walker survives. ``test_push_bounds`` checks the bound.
MAX_PUSH_IMPULSE_NS = 600.0


#: Standard gravity (m/s^2), for the robot's weight.
GRAVITY = 9.81
#: The robot's weight (N): the model's mass (fact sheet ``robot.model_mass_kg``, 32.22 kg) x g = 316 N.
ROBOT_WEIGHT_N = float(facts()["robot"]["model_mass_kg"]["value"]) * GRAVITY
#: Largest |force| (N) of a sustained force: the robot's weight. Beyond it no stance can bear the force for long: one
#: pointing up lifts the whole robot off the floor, one pointing sideways exceeds what the soles can hold on any floor
#: of friction coefficient <= 1 (mu x weight), so it tows the robot rather than disturbs it. The physics survives it
#: on every body indefinitely (``test_push_bounds`` holds it for 5 s on each).
MAX_SUSTAINED_FORCE_N = ROBOT_WEIGHT_N


class PushError(ValueError):
    """A push request that breaks a rule; the message names the rule (and what would be valid)."""


@dataclass(frozen=True)
class PushRequest:
    """A validated external push: ``force`` newtons (world frame) on the named ``body`` for ``duration`` seconds."""

    body: str
    force: tuple[float, float, float]
    duration: float


@dataclass(frozen=True)
class ForceRequest:
    """A validated sustained force: ``force`` newtons (world frame) on ``body`` until replaced or cleared
    (a zero force clears it)."""

    body: str
    force: tuple[float, float, float]

    @property
    def clears(self) -> bool:
        return self.force == (0.0, 0.0, 0.0)


def _body(payload: dict[str, Any]) -> str:
    body = payload.get("body")
    if not isinstance(body, str) or not body.strip():
        raise PushError("body must be a non-empty body name")
    return body


def _force(payload: dict[str, Any], max_force_n: float) -> tuple[tuple[float, float, float], float]:
    force = payload.get("force")
    if (
        not isinstance(force, list | tuple)
        or len(force) != 3
        or not all(isinstance(f, int | float) and not isinstance(f, bool) for f in force)
    ):
        raise PushError("force must be a list of 3 numbers [x, y, z] in newtons")
    fx, fy, fz = (float(f) for f in force)
    if not all(math.isfinite(f) for f in (fx, fy, fz)):
        raise PushError("force must be finite")
    magnitude = math.sqrt(fx * fx + fy * fy + fz * fz)
    if magnitude > max_force_n:
        raise PushError(f"|force| {magnitude:.1f} N exceeds {max_force_n:.1f} N")
    return (fx, fy, fz), magnitude


def parse_force(payload: Any, *, max_force_n: float = MAX_SUSTAINED_FORCE_N) -> ForceRequest:
    """``{"body": str, "force": [x, y, z]}`` -> ``ForceRequest`` (a sustained force; ``[0, 0, 0]`` clears it);
    ``PushError`` naming the rule. |force| <= ``max_force_n``, the robot's weight (see ``MAX_SUSTAINED_FORCE_N``).
    Whether ``body`` exists is the simulator's to say."""
    if not isinstance(payload, dict):
        raise PushError('expected a JSON object {"body": str, "force": [x, y, z]}')
    unknown = set(payload) - {"body", "force"}
    if unknown:
        raise PushError(f"unknown keys {sorted(unknown)}; valid: body, force (a sustained force has no duration: it "
                        "holds until cleared)")
    body = _body(payload)
    try:
        force, _ = _force(payload, max_force_n)
    except PushError as exc:
        if "exceeds" in str(exc):
            raise PushError(f"{exc}, the robot's weight: a sustained force beyond it lifts or tows the robot, which no "
                            "stance bears (a short push may be larger: POST /api/sim/push)") from None
        raise
    return ForceRequest(body=body, force=force)


def event_json(kind: str, **fields: Any) -> str:
    """One line of ``/vasimov/sim/events``: ``{"event": kind, ...fields}`` as compact JSON (keys in given order)."""
    return json.dumps({"event": kind, **fields}, separators=(",", ":"), allow_nan=False)


def parse_push(payload: Any, *, max_force_n: float = MAX_PUSH_FORCE_N, max_duration_s: float = MAX_PUSH_DURATION_S,
               max_impulse_ns: float = MAX_PUSH_IMPULSE_NS) -> PushRequest:
    """``{"body": str, "force": [x, y, z], "duration": s}`` -> ``PushRequest``; ``PushError`` naming the rule.

    Bounds keep a typo from launching the robot and the physics from diverging: |force| <= ``max_force_n``,
    0 < duration <= ``max_duration_s`` and |force| x duration <= ``max_impulse_ns`` (what the physics survives).
    Whether ``body`` exists is the simulator's to say.
    """
    if not isinstance(payload, dict):
        raise PushError('expected a JSON object {"body": str, "force": [x, y, z], "duration": seconds}')
    unknown = set(payload) - {"body", "force", "duration"}
    if unknown:
        raise PushError(f"unknown keys {sorted(unknown)}; valid: body, force, duration")
    body = _body(payload)
    (fx, fy, fz), magnitude = _force(payload, max_force_n)
    duration = payload.get("duration")
    if duration is None or duration == "hold":
        raise PushError("a push needs a duration in seconds; a force that holds until cleared is a sustained force "
                        "(POST /api/sim/force, a script entry `cmd: force`, or the service with hold: true)")
    if not isinstance(duration, int | float) or isinstance(duration, bool) or not math.isfinite(duration):
        raise PushError("duration must be a finite number of seconds")
    if not 0 < duration <= max_duration_s:
        raise PushError(f"duration must be in (0, {max_duration_s}] s, got {duration}")
    if magnitude * duration > max_impulse_ns:
        raise PushError(f"impulse |force| x duration = {magnitude * duration:.0f} N s exceeds "
                           f"{max_impulse_ns:g} N s, more than the simulation survives")
    return PushRequest(body=body, force=(fx, fy, fz), duration=float(duration))
