"""Frames per wall second of the SDK state stream, per report window and over the run (real-time conformance:
an SDK program timed on the wall clock hears this rate; the robot's own is 200 per simulated second)."""

from __future__ import annotations

import threading


class StreamRate:
    """Counts frames (from the executor thread) and reports rates per window (from a timer); thread-safe."""

    def __init__(self, now: float) -> None:
        self._lock = threading.Lock()
        self._start = now
        self._window_start = now
        self._window = 0
        self._total = 0

    def count(self, n: int = 1) -> None:
        with self._lock:
            self._window += n
            self._total += n

    def take(self, now: float) -> dict[str, float]:
        """The window since the last take (or the start): frames, seconds and frames per second; a new window."""
        with self._lock:
            frames, span = self._window, now - self._window_start
            self._window, self._window_start = 0, now
        return {"frames": frames, "window_s": round(span, 3), "state_hz": round(frames / span, 2) if span > 0 else 0.0}

    def total(self, now: float) -> dict[str, float]:
        with self._lock:
            frames, span = self._total, now - self._start
        return {"frames": frames, "window_s": round(span, 3), "state_hz": round(frames / span, 2) if span > 0 else 0.0}
