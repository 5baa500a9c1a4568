"""A flaky link between the SDK and the robot, as a seeded model: loss, delay, jitter, duplication, reordering.

The SDK's own safety rests on the link (contract section 3, "Rate and freshness"): a sample older than 0.5 s blocks a
motion command, 2 s without one is ``LinkLostError``, and the firmware zeroes a velocity (or DAMPs a trajectory) 2 s
after the last command. To show those reactions the twin impairs its UDP lane on purpose, per direction
(``state``: robot -> SDK, ``command``: SDK -> robot). This module is the rule and the queue, with no sockets and no
clock of its own: the lane hands in each datagram with the time it was sent and asks what is due (``udp_lane``).

The model, per datagram, in this order (each decision independent, like Linux netem's defaults):

* **loss**: dropped with probability ``loss`` (Bernoulli; ``loss = 1`` is a blackout);
* **duplicate**: a second copy with probability ``duplicate``;
* **delay and jitter**: each copy leaves ``delay_ms + U(-jitter_ms, +jitter_ms)`` after it was sent, never before it
  was sent (a negative draw is clipped to zero). Jitter larger than the datagram period reorders datagrams by
  itself, as on a real network;
* **reorder**: with probability ``reorder`` a datagram is held back until the next datagram of its direction has
  been released, and goes right after it (its successor overtakes it), or at the latest ``REORDER_MAX_HOLD_S``
  after its own release time when no successor comes (commands can be sparse).

Every datagram draws the same five uniforms whatever the settings (common random numbers): for one seed, the
datagrams lost at ``loss = 0.3`` are among those lost at ``0.5``, and a change of ``jitter_ms`` does not move the
loss pattern. Each direction has its own stream, so command traffic does not change which state frames are lost.
Memory is bounded: at most ``max_queued`` datagrams wait in one direction; a datagram past that is dropped and
counted (``overflow``).
"""

from __future__ import annotations

import heapq
import math
import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

DIRECTIONS = ("state", "command")
#: What ``direction`` may name in a request: one direction or both.
DIRECTION_CHOICES = (*DIRECTIONS, "both")
#: A delay past 10 s only models a dead link, which ``loss = 1`` says better (and with less memory).
MAX_DELAY_MS = 10_000.0
MAX_JITTER_MS = 5_000.0
#: Longest a reordered datagram waits for a successor past its own release time (the SDK's keepalive is 10 Hz).
REORDER_MAX_HOLD_S = 0.5
#: Datagrams one direction may hold in flight: 200 Hz state x 10 s of delay = 2,000, twice that for duplicates.
DEFAULT_MAX_QUEUED = 4096
#: Field -> (lowest, highest); the unit is in the name.
BOUNDS: Mapping[str, tuple[float, float]] = {
    "loss": (0.0, 1.0),
    "delay_ms": (0.0, MAX_DELAY_MS),
    "jitter_ms": (0.0, MAX_JITTER_MS),
    "duplicate": (0.0, 1.0),
    "reorder": (0.0, 1.0),
}

class LinkSettingError(ValueError):
    """A link setting that breaks a rule; ``field`` names the offending key (``None`` for the whole request)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def check_field(name: str, value: Any) -> float:
    """``value`` as a float if it is a finite number inside ``BOUNDS[name]``; else ``LinkSettingError`` naming it."""
    if name not in BOUNDS:
        raise LinkSettingError(f"unknown link setting {name!r}; valid: {', '.join(BOUNDS)}", name)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise LinkSettingError(f"{name} must be a number, got {value!r}", name)
    number = float(value)
    if not math.isfinite(number):
        raise LinkSettingError(f"{name} must be finite, got {value!r}", name)
    lo, hi = BOUNDS[name]
    if not lo <= number <= hi:
        raise LinkSettingError(f"{name} must be in [{lo:g}, {hi:g}], got {value!r}", name)
    return number


@dataclass(frozen=True)
class Impairment:
    """One direction's settings; all zero (the default) is a perfect link."""

    loss: float = 0.0
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, check_field(f.name, getattr(self, f.name)))
        # computed once: the lane asks for every datagram
        object.__setattr__(self, "_active", any(getattr(self, f.name) != 0.0 for f in fields(self)))

    @property
    def active(self) -> bool:
        """Whether this impairs anything (a perfect link takes the lane's direct path)."""
        return self._active  # type: ignore[attr-defined]

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


PERFECT = Impairment()


def parse_link_request(payload: Any) -> dict[str, Impairment]:
    """``POST /api/sim/link``'s body -> the new settings of the directions it names; ``LinkSettingError`` otherwise.

    ``{}`` clears the link: a perfect link in both directions. Otherwise ``direction`` ("state", "command" or
    "both") is required, and the request replaces that direction's settings whole (a field left out is 0), so what
    was sent is what holds, whatever was set before.
    """
    if not isinstance(payload, dict):
        raise LinkSettingError('expected a JSON object {"direction": "state"|"command"|"both", "loss": 0..1, '
                               '"delay_ms": ms, "jitter_ms": ms, "duplicate": 0..1, "reorder": 0..1} ({} clears)')
    if not payload:
        return dict.fromkeys(DIRECTIONS, PERFECT)
    unknown = sorted(set(payload) - {"direction", *BOUNDS})
    if unknown:
        raise LinkSettingError(f"unknown keys {unknown}; valid: direction, {', '.join(BOUNDS)}", unknown[0])
    direction = payload.get("direction")
    if direction not in DIRECTION_CHOICES:
        raise LinkSettingError(f"direction must be one of {', '.join(DIRECTION_CHOICES)}, got {direction!r}",
                               "direction")
    values = {name: check_field(name, value) for name, value in payload.items() if name != "direction"}
    impairment = Impairment(**values)
    targets = DIRECTIONS if direction == "both" else (direction,)
    return dict.fromkeys(targets, impairment)


@dataclass(frozen=True)
class Decision:
    """What happens to one datagram: ``delays_s`` holds one delay (seconds after sending) per copy that will
    arrive (empty: lost; two: duplicated); ``reordered``: held back until its successor has gone."""

    delays_s: tuple[float, ...]
    reordered: bool = False


class ImpairmentModel:
    """The per-datagram draws of one direction: a seeded stream of five uniforms per datagram."""

    def __init__(self, seed: int, direction: str) -> None:
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
        # str seeds are hashed with SHA-512 by random.seed: the same on every run and machine
        self._rng = random.Random(f"vasimov-link:{int(seed)}:{direction}")

    def decide(self, impairment: Impairment) -> Decision:
        u_loss, u_dup, u_reorder, u_jit1, u_jit2 = (self._rng.random() for _ in range(5))
        if u_loss < impairment.loss:
            return Decision(())
        jitters = (u_jit1, u_jit2) if u_dup < impairment.duplicate else (u_jit1,)
        delays = tuple(max(0.0, impairment.delay_ms + impairment.jitter_ms * (2.0 * u - 1.0)) / 1000.0
                       for u in jitters)
        return Decision(delays, reordered=u_reorder < impairment.reorder)


class ImpairedLink[T]:
    """One direction of the link: the model plus the datagrams in flight, released in time order.

    ``offer(item, now)`` when a datagram is sent; ``pop_due(now)`` returns what has arrived by ``now``, in arrival
    order; ``next_due()`` says when to ask next. Not thread-safe (the lane holds a lock). Times are seconds on any
    monotonic clock the caller uses consistently.
    """

    def __init__(self, seed: int, direction: str, max_queued: int = DEFAULT_MAX_QUEUED) -> None:
        if max_queued < 1:
            raise ValueError("max_queued must be >= 1")
        self.direction = direction
        self.max_queued = max_queued
        self.impairment = PERFECT
        self._model = ImpairmentModel(seed, direction)
        self._heap: list[tuple[float, int, T]] = []  # (release time, order, item)
        self._held: list[tuple[float, float, T]] = []  # reordered: (own release time, latest release time, item)
        self._order = 0
        self.counters: Counter[str] = Counter()

    @property
    def queued(self) -> int:
        return len(self._heap) + len(self._held)

    @property
    def busy(self) -> bool:
        """Whether a datagram must go through this link (impaired, or others still in flight)."""
        return self.impairment.active or bool(self._heap) or bool(self._held)

    def set(self, impairment: Impairment) -> None:
        """New settings for datagrams sent from now on; those in flight keep their release times."""
        self.impairment = impairment

    def offer(self, item: T, now: float) -> Decision:
        """A datagram sent at ``now``: decide its fate and queue what will arrive."""
        self.counters["offered"] += 1
        decision = self._model.decide(self.impairment)
        if not decision.delays_s:
            self.counters["lost"] += 1
            return decision
        if len(decision.delays_s) > 1:
            self.counters["duplicated"] += 1
        if any(d > 0.0 for d in decision.delays_s):
            self.counters["delayed"] += 1
        if decision.reordered:
            self.counters["reordered"] += 1
        for delay in decision.delays_s:
            if self.queued >= self.max_queued:
                self.counters["overflow"] += 1
            elif decision.reordered:
                self._held.append((now + delay, now + delay + REORDER_MAX_HOLD_S, item))
            else:
                self._push(now + delay, item)
        if decision.reordered:
            return decision
        release = now + decision.delays_s[0]
        # the held-back datagrams go right after this one (their successor), never before their own release time
        held, self._held = self._held, []
        for own, _latest, held_item in held:
            self._push(max(own, release), held_item)
        return decision

    def pop_due(self, now: float) -> list[T]:
        """The datagrams that have arrived by ``now``, in arrival order (held ones past their wait included)."""
        if self._held and any(latest <= now for _own, latest, _item in self._held):
            keep = []
            for entry in self._held:
                if entry[1] <= now:
                    self._push(entry[1], entry[2])
                else:
                    keep.append(entry)
            self._held = keep
        out: list[T] = []
        while self._heap and self._heap[0][0] <= now:
            out.append(heapq.heappop(self._heap)[2])
        self.counters["released"] += len(out)
        return out

    def next_due(self) -> float | None:
        """The earliest time ``pop_due`` will return something (``None``: nothing in flight)."""
        times = [self._heap[0][0]] if self._heap else []
        times.extend(latest for _own, latest, _item in self._held)
        return min(times) if times else None

    def snapshot(self) -> dict[str, int]:
        """Counters for ``/api/sim/counters``: every impaired datagram is counted by what happened to it."""
        out = {name: int(self.counters.get(name, 0)) for name in
               ("offered", "lost", "duplicated", "delayed", "reordered", "overflow", "released")}
        out["queued"] = self.queued
        return out

    def _push(self, release: float, item: T) -> None:
        self._order += 1
        heapq.heappush(self._heap, (release, self._order, item))
