"""Rate-limited logging for conditions that can repeat at packet rate (rejections, stale commands, socket errors).

Plain Python (no rclpy): ROS nodes hand it their logger's ``warning``; the UDP lane's receive thread uses the gate
alone with the standard ``logging`` module. Thread-safe, because a lane logs from its receive thread while the node
logs from the executor.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class RateLimitedLog:
    """Emit at most one message per key every `period_s` (wall clock), with a count of what was suppressed, so a
    flood of junk cannot flood the log while the first occurrence is still reported at once."""

    def __init__(self, emit: Callable[[str], None], period_s: float = 1.0) -> None:
        self._emit = emit
        self._period = period_s
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}
        self._lock = threading.Lock()

    def allow(self, key: str) -> int | None:
        """None if a message for ``key`` is due to be suppressed (counted); else how many were suppressed since the
        last one emitted (the caller emits this one)."""
        now = time.monotonic()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self._period:
                self._suppressed[key] = self._suppressed.get(key, 0) + 1
                return None
            self._last[key] = now
            return self._suppressed.pop(key, 0)

    @staticmethod
    def with_count(message: str, suppressed: int) -> str:
        return message + (f" ({suppressed} similar suppressed)" if suppressed else "")

    def __call__(self, key: str, message: str) -> None:
        n = self.allow(key)
        if n is not None:
            self._emit(self.with_count(message, n))
