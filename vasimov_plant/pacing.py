"""Real-time pacing of the plant: lockstep, held back to the wall clock (pure: no threads, no clock of its own).

Real time is the lockstep protocol with one more condition. Control tick k's physics starts when

* the motor command answering tick k has arrived (as in lockstep), and
* the wall clock has reached tick k's slot on the schedule (never ahead of real time).

When the machine cannot keep up (answers arrive after their slot), simulated time slows down instead of a control
tick going without its answer: the schedule may fall behind by at most ``max_backlog_s`` of wall time, which it
catches up (ticks run back to back, still each with its answer), so a short stall of a busy machine costs no
simulated time; beyond that the schedule restarts from now and the lost wall time is simply not simulated (the
real-time factor drops below 1). The default, 0.25 s, is the longest gap the SDK's arming hold tolerates
(`ARM_MAX_GAP_S`): stalls up to it are absorbed, longer ones are not replayed as a burst.

Only a participant that is really gone lets a tick go without its answer: when no answer at all (to any tick) has
arrived for ``answer_timeout`` wall seconds, the plant stops waiting and steps on at wall pace, under the
command-age watchdog (its last command while that is fresh, then damping), until answers come again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

MAX_BACKLOG_S = 0.25


class LatenessHistogram:
    """Lateness percentiles over a whole run in constant memory: log-spaced bins, 1 % wide, from 1 us to 100 s.

    Why not a list of samples: a real-time run lasts hours at 200 ticks/s, and a list that grows with the run is the
    memory growth a soak must not show (a 30-min run grew the plant 4 MB that way). Zero lateness (on time) has a bin
    of its own, so an on-time run reports exactly 0; the maximum is kept exactly; a percentile is its bin's upper
    edge (at most 1 % above the true value; ``PERCENTILE_REL_ERROR``).
    """

    LOW_S = 1e-6
    HIGH_S = 100.0
    RATIO = 1.01
    _LOG_RATIO = math.log(RATIO)
    BINS = math.ceil(math.log(HIGH_S / LOW_S) / _LOG_RATIO) + 2  # [0] on time, [1] <= LOW_S, ..., [-1] > HIGH_S

    def __init__(self) -> None:
        self.counts = np.zeros(self.BINS, dtype=np.int64)
        self.count = 0
        self.max_s = 0.0

    def add(self, lateness_s: float) -> None:
        self.count += 1
        if lateness_s > self.max_s:
            self.max_s = lateness_s
        if lateness_s <= 0.0:
            self.counts[0] += 1
            return
        i = 1 + max(0, math.ceil(math.log(lateness_s / self.LOW_S) / self._LOG_RATIO))
        self.counts[min(i, self.BINS - 1)] += 1

    def percentile(self, q: float) -> float:
        """The ``q``-th percentile (0-100) in seconds: the upper edge of the bin holding it, capped at the max."""
        if self.count == 0:
            return 0.0
        rank = max(1, math.ceil(q / 100.0 * self.count))
        i = int(np.searchsorted(np.cumsum(self.counts), rank))
        if i == 0:
            return 0.0
        return min(self.LOW_S * self.RATIO ** (i - 1), self.max_s)


#: how far above the true value a reported percentile may be (the bins' width)
PERCENTILE_REL_ERROR = LatenessHistogram.RATIO - 1.0


@dataclass(frozen=True)
class WindowStats:
    """What the pacer saw over a window of wall time (a periodic log line, the run's summary)."""

    wall_s: float
    sim_s: float
    ticks: int
    late_ticks: int  # ticks that started more than one control period behind their slot
    unanswered: int  # ticks stepped without their answer (a participant silent for answer_timeout)
    lateness_ms: tuple[float, float, float]  # p50, p99, max of (start - slot)
    period_ms: tuple[float, float, float] = (0.0, 0.0, 0.0)  # p50, p99, max of the wall time between tick starts

    @property
    def rtf(self) -> float:
        return self.sim_s / self.wall_s if self.wall_s > 0 else 0.0

    def describe(self) -> str:
        p50, p99, mx = self.lateness_ms
        return (f"real-time factor {self.rtf:.3f} ({self.sim_s:.2f} s simulated in {self.wall_s:.2f} s), "
                f"{self.ticks} ticks, lateness p50 {p50:.2f} ms p99 {p99:.2f} ms max {mx:.2f} ms, "
                f"{self.late_ticks} late > 1 period, {self.unanswered} without answer")

    def as_dict(self, period_target_ms: float) -> dict[str, object]:
        """The window as the JSON of ``/vasimov/realtime`` and the exit summary (real-time conformance)."""
        p50, p99, mx = self.lateness_ms
        q50, q99, qmx = self.period_ms
        return {"window_s": round(self.wall_s, 3), "sim_s": round(self.sim_s, 3), "rtf": round(self.rtf, 4),
                "ticks": self.ticks, "late_ticks": self.late_ticks, "unanswered": self.unanswered,
                "control_period_ms": {"target": round(period_target_ms, 3), "p50": round(q50, 3), "p99": round(q99, 3),
                                      "max": round(qmx, 3)},
                "lateness_ms": {"p50": round(p50, 3), "p99": round(p99, 3), "max": round(mx, 3)}}


@dataclass
class _Window:
    start_wall: float
    ticks: int = 0
    late: int = 0
    unanswered: int = 0
    lateness: LatenessHistogram = field(default_factory=LatenessHistogram)
    period: LatenessHistogram = field(default_factory=LatenessHistogram)  # wall s between successive tick starts
    last_start: float | None = None


class Pacer:
    """The schedule and the waiting rule of one real-time run. Times are wall seconds (``time.monotonic()``).

    Per tick the caller asks ``release_at(answered)`` for the wall time until which to wait (re-asking when an
    answer arrives), then reports with ``started(now, answered)`` once it steps.
    """

    def __init__(self, *, period_wall: float, period_sim: float, answer_timeout: float,
                 max_backlog_s: float = MAX_BACKLOG_S, now: float) -> None:
        if not (period_wall > 0 and period_sim > 0 and answer_timeout > 0 and max_backlog_s >= 0):
            raise ValueError("period_wall, period_sim and answer_timeout must be > 0, max_backlog_s >= 0")
        self.period_wall = period_wall
        self.period_sim = period_sim
        self.answer_timeout = answer_timeout
        self.max_backlog_s = max_backlog_s
        self.slot = now + period_wall  # the first tick (0 -> 1) starts one period after the start
        self.last_answer = now  # a participant that never answers is waited for once, from the start
        self.slipped_s = 0.0  # wall time the schedule gave up on (not simulated)
        self.total = _Window(now)
        self.window = _Window(now)
        self.report = _Window(now)  # the published conformance window (/vasimov/realtime), beside the log's
        self.closed = False  # has the loop closed (a first answer arrived)?

    def answer_arrived(self, now: float) -> None:
        """Any valid answer of the current life (even to an older tick) shows the participants are alive. The
        run's totals start at the first one: the wait for nodes that are still starting is not lateness."""
        self.last_answer = now
        if not self.closed:
            self.closed = True
            self.total = _Window(now)

    def reset_silence(self, now: float) -> None:
        """A virtual restart: the participants get a fresh ``answer_timeout`` to answer the new life's tick 0."""
        self.last_answer = now

    def release_at(self, answered: bool) -> float:
        """Wall time at which the waiting ends: the tick's slot once answered; otherwise the later of the slot and
        ``answer_timeout`` after the last answer (a silent graph is stepped at wall pace, not waited for)."""
        if answered:
            return self.slot
        return max(self.slot, self.last_answer + self.answer_timeout)

    def started(self, now: float, answered: bool) -> float:
        """Record that the tick's physics starts at ``now``; advance the schedule; return the lateness (s)."""
        lateness = max(0.0, now - self.slot)
        late = lateness > self.period_wall
        for w in (self.total, self.window, self.report):
            w.ticks += 1
            w.late += int(late)
            w.unanswered += int(not answered)
            w.lateness.add(lateness)
            if w.last_start is not None:
                w.period.add(now - w.last_start)
            w.last_start = now
        self.slot += self.period_wall
        behind = now - self.slot
        if behind > self.max_backlog_s:
            self.slipped_s += behind
            self.slot = now  # too far behind to catch up: simulated time slows down instead
        return lateness

    def take_window(self, now: float) -> WindowStats:
        """Stats since the previous call (or the start), and start a new window."""
        stats = self._stats(self.window, now)
        self.window = _Window(now, last_start=self.window.last_start)
        return stats

    def take_report(self, now: float) -> WindowStats:
        """Like ``take_window``, for the published conformance window (its own period)."""
        stats = self._stats(self.report, now)
        self.report = _Window(now, last_start=self.report.last_start)
        return stats

    def summary(self, now: float) -> WindowStats:
        return self._stats(self.total, now)

    def _stats(self, w: _Window, now: float) -> WindowStats:
        h, q = w.lateness, w.period
        return WindowStats(wall_s=now - w.start_wall, sim_s=w.ticks * self.period_sim, ticks=w.ticks,
                           late_ticks=w.late, unanswered=w.unanswered,
                           lateness_ms=(h.percentile(50) * 1e3, h.percentile(99) * 1e3, h.max_s * 1e3),
                           period_ms=(q.percentile(50) * 1e3, q.percentile(99) * 1e3, q.max_s * 1e3))
