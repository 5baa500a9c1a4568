"""How well the body follows the velocity command: pure functions of per-tick series, for the bench's scores.

Inputs are two ``(N, 3)`` arrays sampled every ``dt`` seconds: the commanded ``(vx, vy, vyaw)`` (what the scenario
asked, body frame) and the measured ground-truth pelvis velocity in the same frame (world velocity rotated into the
pelvis' current heading, yaw rate about world z). The walk sways sideways once per gait cycle and surges twice, so
per-tick velocities are never compared directly; each metric averages over about a gait cycle (``window``, 1 s by
default: two steps of the built-in gait) in the way that does not shift the time it measures:

* :func:`rms_block_error`: the RMS over consecutive 1 s blocks of the difference between block-mean measured and
  block-mean commanded velocity (planar: the norm over vx, vy);
* :func:`step_half_times`: after each change of command, the time until the body's velocity, averaged over a window
  *centred* on each instant, has covered half of the change (planar changes and yaw-rate changes judged separately).
  A centred average of a step or a linear ramp crosses the midpoint when the response does; of a concave rise (a
  first-order lag) it crosses later (Jensen), so the figure errs on the slow side, never in the walker's favour for
  such responses (a 0.4 s lag, true half time 0.28 s, reads 0.36 s);
* :func:`stop_times`: after each change to a zero command, the first instant from which the body's mean velocity over
  the *next* window stays below ``STOP_SPEED`` and ``STOP_YAW_RATE``: from then on there is less than 5 cm (0.1 rad)
  of net motion left in any following second. The net motion over a gait cycle, so sway while stepping in place does
  not count as motion.

A response that never reaches its mark before the command changes again (or the series ends) is given the whole
segment's length: a lower bound, so a criterion "at most X s" still fails it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

WINDOW = 1.0  # s: about one gait cycle (two steps) of the built-in walker
MIN_PLANAR_STEP = 0.1  # m/s: a smaller change of planar command is not scored as a step
MIN_YAW_STEP = 0.2  # rad/s: likewise for the yaw rate
STOP_SPEED = 0.05  # m/s: planar speed below which the body counts as stopped
STOP_YAW_RATE = 0.1  # rad/s: yaw rate below which the body counts as stopped


@dataclass(frozen=True)
class Change:
    """A change of command at sample ``index`` from ``before`` to ``after``; its segment ends at ``end`` (exclusive:
    the next change or the end of the series)."""

    index: int
    end: int
    before: NDArray[np.float64]
    after: NDArray[np.float64]


def _as_series(x: ArrayLike) -> NDArray[np.float64]:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] != 3:
        raise ValueError(f"expected an (N, 3) series of (vx, vy, vyaw), got shape {a.shape}")
    return a


def rms_block_error(measured: ArrayLike, commanded: ArrayLike, dt: float, dims: slice = slice(0, 2),
                    block: float = WINDOW) -> float:
    """RMS over whole ``block``-long blocks of the norm (over ``dims``) of block-mean measured minus block-mean
    commanded velocity; 0.0 for a series shorter than one block."""
    m, c = _as_series(measured), _as_series(commanded)
    n = round(block / dt)
    errs = [float(np.sum((m[k:k + n, dims].mean(axis=0) - c[k:k + n, dims].mean(axis=0)) ** 2))
            for k in range(0, len(m) - n + 1, n)]
    return float(math.sqrt(np.mean(errs))) if errs else 0.0


def command_changes(commanded: ArrayLike, initial: ArrayLike | None = None) -> list[Change]:
    """Every sample where the command differs from the previous one; the first sample is a change when it differs
    from ``initial`` (the command in force before the series: the bench's zero while settling), else it is not."""
    c = _as_series(commanded)
    prev = [None if initial is None else np.asarray(initial, dtype=np.float64), *c[:-1]]
    idx = [k for k in range(len(c)) if prev[k] is not None and not np.array_equal(c[k], prev[k])]
    ends = [*idx[1:], len(c)] if idx else []
    return [Change(k, e, np.array(prev[k], dtype=np.float64), c[k].copy()) for k, e in zip(idx, ends, strict=True)]


def centred_mean(series: ArrayLike, dt: float, window: float = WINDOW) -> NDArray[np.float64]:
    """Each sample replaced by the mean of the samples within ``window``/2 either side (fewer at the ends)."""
    s = _as_series(series)
    half = max(0, round(window / dt / 2.0))
    csum = np.vstack([np.zeros((1, 3)), np.cumsum(s, axis=0)])
    lo = np.clip(np.arange(len(s)) - half, 0, len(s))
    hi = np.clip(np.arange(len(s)) + half + 1, 0, len(s))
    return (csum[hi] - csum[lo]) / (hi - lo)[:, None]


def step_half_times(measured: ArrayLike, commanded: ArrayLike, dt: float, window: float = WINDOW,
                    initial: ArrayLike | None = None) -> list[float]:
    """For each change of planar command of at least ``MIN_PLANAR_STEP`` and each change of yaw rate of at least
    ``MIN_YAW_STEP``: seconds from the change until the centred-mean measured velocity, projected on the change,
    has covered half of it (the segment's length if it never does)."""
    m = centred_mean(measured, dt, window)
    out: list[float] = []
    for ch in command_changes(commanded, initial):
        for dims, least in ((slice(0, 2), MIN_PLANAR_STEP), (slice(2, 3), MIN_YAW_STEP)):
            delta = ch.after[dims] - ch.before[dims]
            size2 = float(delta @ delta)
            if size2 < least * least:
                continue
            progress = (m[ch.index:ch.end, dims] - ch.before[dims]) @ delta / size2
            hit = np.flatnonzero(progress >= 0.5)
            out.append(float((hit[0] if hit.size else ch.end - ch.index) * dt))
    return out


def stop_times(measured: ArrayLike, commanded: ArrayLike, dt: float, window: float = WINDOW,
               speed: float = STOP_SPEED, yaw_rate: float = STOP_YAW_RATE,
               initial: ArrayLike | None = None) -> list[float]:
    """For each change to an all-zero command: seconds from it until the first instant from which, for the rest of
    the zero segment, the mean measured velocity over the next ``window`` is below ``speed`` (planar) and
    ``yaw_rate`` (the segment's length if that never holds). A zero segment shorter than ``window`` is not scored:
    its stop cannot be seen."""
    m = _as_series(measured)
    n = max(1, round(window / dt))
    csum = np.vstack([np.zeros((1, 3)), np.cumsum(m, axis=0)])
    out: list[float] = []
    for ch in command_changes(commanded, initial):
        if np.any(ch.after != 0.0) or ch.end - ch.index < n:
            continue
        starts = np.arange(ch.index, ch.end - n + 1)
        fwd = (csum[starts + n] - csum[starts]) / n
        moving = (np.hypot(fwd[:, 0], fwd[:, 1]) >= speed) | (np.abs(fwd[:, 2]) >= yaw_rate)
        last_moving = np.flatnonzero(moving)
        if not last_moving.size:
            out.append(0.0)
        elif last_moving[-1] == len(starts) - 1:
            out.append(float((ch.end - ch.index) * dt))  # still moving at the last judgeable instant
        else:
            out.append(float((last_moving[-1] + 1) * dt))
    return out
