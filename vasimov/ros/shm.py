"""Fast DDS shared-memory segments of a process: which ones it owns, so a process that must end abruptly can still
remove them (`fastdds shm clean` does the same, later, for processes that died).

A participant maps its own segment ``/dev/shm/fastdds_<16 characters>`` (plus the semaphore
``sem.fastdds_<same>_mutex``); the ``fastdds_port<N>`` segments are shared by every participant on a port and outlive
them by design, so they are never anyone's to remove.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

SEGMENT = re.compile(r"/dev/shm/(fastdds_[0-9a-z]{16})$")


def mapped_segments(pid: int | str = "self") -> set[str]:
    """The participant segments (names under /dev/shm) process ``pid`` has mapped."""
    out: set[str] = set()
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
            m = SEGMENT.search(line)
            if m:
                out.add(m.group(1))
    return out


def remove_own_segments() -> list[str]:
    """Unlink this process's participant segments and their semaphores (for an exit that skips DDS's teardown);
    other processes that still map them keep their mappings. Returns the names removed."""
    removed = []
    for name in sorted(mapped_segments()):
        for path in (Path("/dev/shm") / name, Path("/dev/shm") / f"sem.{name}_mutex"):
            with contextlib.suppress(OSError):
                path.unlink()
                removed.append(path.name)
    return removed
