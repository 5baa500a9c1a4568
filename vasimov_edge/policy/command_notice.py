"""The notice that a locomotion backend walks less than it was commanded.

Why: the firmware accepts the SDK's envelope (0.4 / 0.4 m/s, 0.8 rad/s), but a backend may walk a smaller one (the
built-in walker scales larger or combined commands down, and stands still below its dead band). Without a word, an
SDK program that asks for 0.4 m/s and gets 0.3 sees a different robot and cannot tell why; this turns the change
into one logged line per limited command, as the brief asks of every input that is not taken as given.

Pure: no ROS. The policy runner feeds it each tick's commanded and used velocity and logs what it returns.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

#: a part of the command counts as limited when the backend walks it this much differently (m/s, rad/s)
TOLERANCE = 1e-3
#: simulated seconds between two notices while a limited command keeps changing (a joystick beyond the envelope)
REPEAT_S = 5.0


def walks_less(commanded: ArrayLike, used: ArrayLike | None) -> bool:
    """Whether a backend that reports ``used`` walks a command other than ``commanded`` (the one rule the notice
    and the bench's scores use); False for a backend that reports nothing or a broken report."""
    if used is None:
        return False
    cmd = np.asarray(commanded, dtype=np.float64)
    walked = np.asarray(used, dtype=np.float64)
    if cmd.shape != (3,) or walked.shape != (3,) or not np.all(np.isfinite(walked)):
        return False
    return bool(np.any(np.abs(cmd - walked) > TOLERANCE))


def _fmt(v: np.ndarray) -> str:
    return f"vx {v[0]:+.2f} m/s, vy {v[1]:+.2f} m/s, vyaw {v[2]:+.2f} rad/s"


class CommandLimitNotice:
    """Says when a backend starts walking a command other than the one given, and again when that command changes
    (at most every ``REPEAT_S`` simulated seconds); silent while the command is walked as given."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.reset()

    def reset(self) -> None:
        """Forget what was said (a new firmware epoch: the robot restarted)."""
        self._said: np.ndarray | None = None  # the commanded velocity last announced as limited
        self._said_t = -np.inf

    def update(self, t: float, commanded: ArrayLike, used: ArrayLike | None) -> str | None:
        """The line to log for this tick at simulated time ``t``, or None."""
        if not walks_less(commanded, used):
            self._said = None
            return None
        cmd = np.asarray(commanded, dtype=np.float64)
        walked = np.asarray(used, dtype=np.float64)
        if self._said is not None and (np.all(np.abs(cmd - self._said) <= TOLERANCE) or t - self._said_t < REPEAT_S):
            return None
        self._said, self._said_t = cmd.copy(), t
        return (f"{self.backend} walks {_fmt(walked)} of the commanded {_fmt(cmd)}: the command is beyond the envelope "
                f"this walker walks (docs/walker.md; the firmware's caps are the SDK's)")
