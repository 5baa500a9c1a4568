"""Rate-limited logging for conditions that can repeat at packet rate (rejections, stale commands)."""

from __future__ import annotations

import time
from collections.abc import Callable


class RateLimitedLog:
    """Emit at most one message per key every `period_s` (wall clock), with a count of what was suppressed."""

    def __init__(self, emit: Callable[[str], None], period_s: float = 1.0) -> None:
        self._emit = emit
        self._period = period_s
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def __call__(self, key: str, message: str) -> None:
        now = time.monotonic()
        last = self._last.get(key)
        if last is not None and now - last < self._period:
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return
        n = self._suppressed.pop(key, 0)
        self._last[key] = now
        self._emit(message + (f" ({n} similar suppressed)" if n else ""))
