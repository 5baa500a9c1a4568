"""Admission control for command inlets (UDP lane, VAC1 binary stream, Foxglove teleop): a flood is shed here, at
the edge of the graph, so it never reaches the firmware's executor or competes with the closed loop.

What a real client needs is small: the SDK sends at most ~60 commands/s (``set_joints`` at 50 Hz plus the 10 Hz
velocity keepalive), a teleop panel ~20/s. Each inlet therefore gets two stages, both pure and clocked by the
caller (``now`` in seconds, any monotonic clock):

* ``TokenBucket`` / ``SourceBudgets``: how many raw messages per second a source may have *decoded*. Over budget, a
  message is dropped before any parsing (the cheapest possible drop; invalid floods cost almost nothing).
* ``CommandGate``: per source, a token bucket on *forwarded* commands with a newest-wins slot. Under the budget
  commands pass in order, untouched; over it the newest non-DAMP command waits in the slot (replacing any older one,
  counted as coalesced) and leaves as soon as a token refills, so the last word of a flood always arrives and stale
  intermediate velocities never do. DAMP is never delayed by the budget (a stop is never shed): it supersedes the
  pending slot and passes at once, except an identical DAMP repeated within ``damp_repeat_s`` (idempotent, counted).
  A global bucket across sources bounds what many sources together may forward.

Order is preserved: a command is forwarded only if nothing older from its source is still waiting.
"""

from __future__ import annotations

import math
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from vasimov.commands import DampCommand, RobotCommand


class TokenBucket:
    """``rate`` tokens per second, at most ``burst`` stored; starts full."""

    __slots__ = ("at", "burst", "rate", "tokens")

    def __init__(self, rate: float, burst: float, now: float) -> None:
        if not (math.isfinite(rate) and rate > 0 and math.isfinite(burst) and burst >= 1):
            raise ValueError(f"TokenBucket needs rate > 0 and burst >= 1, got {rate}, {burst}")
        self.rate, self.burst, self.tokens, self.at = float(rate), float(burst), float(burst), now

    def _refill(self, now: float) -> None:
        if now > self.at:
            self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
            self.at = now

    def take(self, now: float) -> bool:
        self._refill(now)
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def ready_at(self, now: float) -> float:
        """When the next whole token is available (``now`` if one is)."""
        self._refill(now)
        return now if self.tokens >= 1.0 else now + (1.0 - self.tokens) / self.rate


class SourceBudgets:
    """One ``TokenBucket`` per source key, for at most ``max_sources`` keys (least recently seen evicted), so a
    sender cycling through ports cannot grow memory; an evicted key starts again with a full bucket."""

    def __init__(self, rate: float, burst: float, max_sources: int = 64) -> None:
        TokenBucket(rate, burst, 0.0)  # validates
        if max_sources < 1:
            raise ValueError("max_sources must be >= 1")
        self.rate, self.burst, self.max_sources = rate, burst, max_sources
        self._buckets: OrderedDict[Hashable, TokenBucket] = OrderedDict()

    def take(self, key: Hashable, now: float) -> bool:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = TokenBucket(self.rate, self.burst, now)
            while len(self._buckets) > self.max_sources:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        return bucket.take(now)


@dataclass(frozen=True)
class GateConfig:
    """Per-source forwarding budget, the global one, and the DAMP repeat window (defaults: 3x what the SDK sends)."""

    rate_per_source: float = 200.0
    burst_per_source: float = 40.0
    rate_global: float = 400.0
    burst_global: float = 80.0
    damp_repeat_s: float = 0.02
    max_sources: int = 64

    def __post_init__(self) -> None:
        TokenBucket(self.rate_per_source, self.burst_per_source, 0.0)
        TokenBucket(self.rate_global, self.burst_global, 0.0)
        if not (math.isfinite(self.damp_repeat_s) and self.damp_repeat_s >= 0):
            raise ValueError("damp_repeat_s must be finite and >= 0")
        if self.max_sources < 1:
            raise ValueError("max_sources must be >= 1")


@dataclass
class _Source:
    bucket: TokenBucket
    pending: RobotCommand | None = None
    last_damp_at: float = -math.inf
    last_was_damp: bool = False


@dataclass
class CommandGate:
    """Per-source rate limit with a newest-wins slot. ``offer`` returns the commands to forward now (in order);
    ``due`` returns pending ones whose token has come; ``next_due`` says when to call ``due`` again."""

    config: GateConfig = field(default_factory=GateConfig)
    counters: Counter[str] = field(default_factory=Counter)
    #: what counts as a stop (never shed); callers that route commands wrap them and say how to see a DAMP
    is_stop: Callable[[Any], bool] = field(default=lambda cmd: isinstance(cmd, DampCommand))

    def __post_init__(self) -> None:
        self._sources: OrderedDict[Hashable, _Source] = OrderedDict()
        self._global: TokenBucket | None = None

    def _source(self, key: Hashable, now: float) -> _Source:
        src = self._sources.get(key)
        if src is None:
            src = self._sources[key] = _Source(TokenBucket(self.config.rate_per_source,
                                                           self.config.burst_per_source, now))
            while len(self._sources) > self.config.max_sources:
                _, gone = self._sources.popitem(last=False)
                if gone.pending is not None:
                    self.counters["coalesced"] += 1  # an evicted source's waiting command is superseded by silence
        else:
            self._sources.move_to_end(key)
        return src

    def _take(self, src: _Source, now: float) -> bool:
        if self._global is None:
            self._global = TokenBucket(self.config.rate_global, self.config.burst_global, now)
        if src.bucket.ready_at(now) > now or self._global.ready_at(now) > now:
            return False
        src.bucket.take(now)
        self._global.take(now)
        return True

    def offer(self, key: Hashable, cmd: RobotCommand, now: float) -> list[RobotCommand]:
        src = self._source(key, now)
        if self.is_stop(cmd):
            if src.pending is not None:
                src.pending = None
                self.counters["coalesced"] += 1
            if src.last_was_damp and now - src.last_damp_at < self.config.damp_repeat_s:
                self.counters["damp_repeats"] += 1
                return []
            src.last_damp_at, src.last_was_damp = now, True
            self.counters["forwarded"] += 1
            return [cmd]
        out: list[RobotCommand] = []
        if src.pending is not None:  # older than cmd: it goes first or not at all
            if self._take(src, now):
                out.append(src.pending)
                self.counters["forwarded"] += 1
            else:
                self.counters["coalesced"] += 1  # superseded by cmd (which cannot go now either)
            src.pending = None
        if self._take(src, now):
            out.append(cmd)
            self.counters["forwarded"] += 1
        else:
            src.pending = cmd
        if out:
            src.last_was_damp = False
        return out

    def due(self, now: float) -> list[tuple[Hashable, RobotCommand]]:
        """Pending commands whose source (and the global budget) has a token again, oldest source first."""
        out: list[tuple[Hashable, RobotCommand]] = []
        for key, src in self._sources.items():
            if src.pending is not None and self._take(src, now):
                out.append((key, src.pending))
                src.pending = None
                src.last_was_damp = False
                self.counters["forwarded"] += 1
        return out

    def next_due(self, now: float) -> float | None:
        """The earliest time a pending command can leave, or None when nothing is waiting."""
        times = [src.bucket.ready_at(now) for src in self._sources.values() if src.pending is not None]
        if not times:
            return None
        glob = now if self._global is None else self._global.ready_at(now)
        return max(min(times), glob)

    @property
    def pending(self) -> int:
        return sum(1 for s in self._sources.values() if s.pending is not None)
