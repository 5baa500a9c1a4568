"""Fast DDS shared-memory segments of a process: which ones it owns, so a process that must end abruptly can still
remove them (`fastdds shm clean` does the same, later, for processes that died).

A participant maps its own segment ``/dev/shm/fastdds_<16 characters>`` (plus the semaphore
``sem.fastdds_<same>_mutex``); the ``fastdds_port<N>`` segments are shared by every participant on a port and outlive
them by design, so they are never anyone's to remove.
"""

from __future__ import annotations

import contextlib
import os
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


PORT = re.compile(r"^fastdds_port(\d{1,5})$")


def remove_orphan_ports(shm_dir: Path = Path("/dev/shm"), min_age_s: float = 2.0) -> list[str]:
    """Unlink port segments that no listener owns any more: ``fastdds_port<N>`` (and its ``sem.…_mutex``) with no
    ``_el``/``_sl`` lock file beside it, untouched for ``min_age_s``.

    Why: a port's listener holds its lock file while alive, and the last participant to close the port removes the
    segment -- unless a participant that had opened it as a sender died without closing (SIGKILL), which leaves the
    segment referenced for ever: the listener, exiting cleanly, removes only its lock file. ``fastdds shm clean``
    looks only at lock files, so it never sees these. A port segment with no lock file has no listener; one being
    created has its lock file within microseconds, hence the age margin. Returns the names removed."""
    import time

    removed: list[str] = []
    try:
        names = set(os.listdir(shm_dir))
    except OSError:
        return removed
    now = time.time()
    for name in sorted(names):
        if not PORT.match(name) or f"{name}_el" in names or f"{name}_sl" in names:
            continue
        path = shm_dir / name
        with contextlib.suppress(OSError):
            if now - path.stat().st_mtime < min_age_s:
                continue
            path.unlink()
            removed.append(name)
            mutex = shm_dir / f"sem.{name}_mutex"
            with contextlib.suppress(OSError):
                mutex.unlink()
                removed.append(mutex.name)
    return removed
