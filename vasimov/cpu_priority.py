"""Lower the scheduling priority of a whole process, every thread included.

Why: on Linux ``os.nice`` changes only the calling thread. By the time a node reads its ``cpu_nice`` parameter,
rclpy has started the DDS threads that receive every message (and the Foxglove SDK its server threads); left at
normal priority they compete with the closed loop's processes exactly when those wake for a lockstep tick.
"""

from __future__ import annotations

import os
from pathlib import Path


def renice_all_threads(increment: int) -> int:
    """Add ``increment`` to the niceness of every thread of this process (threads started later inherit it from
    their creator); returns how many threads were changed. Threads that exit meanwhile are skipped."""
    if increment <= 0:
        return 0
    changed = 0
    for task in Path("/proc/self/task").iterdir():
        tid = int(task.name)
        try:
            current = os.getpriority(os.PRIO_PROCESS, tid)
            os.setpriority(os.PRIO_PROCESS, tid, min(19, current + increment))
            changed += 1
        except (ProcessLookupError, PermissionError):
            continue
    return changed
