"""The rules of the simulator's own controls that every inlet applies the same way: an external push.

A push can arrive over the HTTP API (``POST /api/sim/push``) or as a ``SimControl`` message from anyone on the ROS
graph; the plant applies both, so the bounds live here, below both, and each inlet maps ``PushError`` to its own
answer (HTTP 400, a logged and counted sim-control rejection).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

#: Largest |force| (N) of one push.
MAX_PUSH_FORCE_N = 2000.0
#: Longest push (s).
MAX_PUSH_DURATION_S = 5.0
#: The largest push impulse |force| x duration (N s) the physics survives on every body, in every axis direction,
#: hanging on the gantry or free: measured at the 2000 N force cap, 800 N s never diverged and 1500 N s did once (a
#: forward push on the neck), 10,000 N s (2000 N for 5 s) in 130 of 312 cases. 600 N s leaves a margin and is
#: still 15x the largest push the built-in walker survives. ``test_push_bounds`` checks the bound.
MAX_PUSH_IMPULSE_NS = 600.0


class PushError(ValueError):
    """A push request that breaks a rule; the message names the rule (and what would be valid)."""


@dataclass(frozen=True)
class PushRequest:
    """A validated external push: ``force`` newtons (world frame) on the named ``body`` for ``duration`` seconds."""

    body: str
    force: tuple[float, float, float]
    duration: float


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
    body = payload.get("body")
    if not isinstance(body, str) or not body.strip():
        raise PushError("body must be a non-empty body name")
    force = payload.get("force")
    if (
        not isinstance(force, list)
        or len(force) != 3
        or not all(isinstance(f, int | float) and not isinstance(f, bool) for f in force)
    ):
        raise PushError("force must be a list of 3 numbers [x, y, z] in newtons")
    fx, fy, fz = (float(f) for f in force)
    if not all(math.isfinite(f) for f in (fx, fy, fz)):
        raise PushError("force must be finite")
    magnitude = math.sqrt(fx * fx + fy * fy + fz * fz)
    if magnitude > max_force_n:
        raise PushError(f"|force| {magnitude:.1f} N exceeds {max_force_n} N")
    duration = payload.get("duration")
    if not isinstance(duration, int | float) or isinstance(duration, bool) or not math.isfinite(duration):
        raise PushError("duration must be a finite number of seconds")
    if not 0 < duration <= max_duration_s:
        raise PushError(f"duration must be in (0, {max_duration_s}] s, got {duration}")
    if magnitude * duration > max_impulse_ns:
        raise PushError(f"impulse |force| x duration = {magnitude * duration:.0f} N s exceeds "
                           f"{max_impulse_ns:g} N s, more than the simulation survives")
    return PushRequest(body=body, force=(fx, fy, fz), duration=float(duration))
