"""Fast DDS shared-memory segments of a process: which ones it owns, so a process that must end abruptly can still
remove them (`fastdds shm clean` does the same, later, for processes that died).

A participant creates its own segment ``/dev/shm/fastdds_<16 characters>`` (plus the semaphore
``sem.fastdds_<same>_mutex`` and the lock file ``fastdds_<same>_el``, which it holds open while alive); it also maps
the segment of every peer whose data it reads, so "mapped" is not "own": the lock file held open is what tells them
apart. The ``fastdds_port<N>`` segments are shared by every participant on a port and outlive them by design, so they
are never anyone's to remove.
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


def own_segments(pid: int | str = "self") -> set[str]:
    """The participant segments process ``pid`` created: mapped, with their ``<name>_el`` lock file open."""
    locks: set[str] = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("/dev/shm/fastdds_") and target.endswith("_el"):
                    locks.add(target[len("/dev/shm/"):-len("_el")])
    return mapped_segments(pid) & locks


def segment_files(name: str) -> tuple[str, ...]:
    """The names under /dev/shm that one participant segment consists of: segment, semaphore, lock file."""
    return (name, f"sem.{name}_mutex", f"{name}_el")


def remove_own_segments() -> list[str]:
    """Unlink this process's participant segments with their semaphores and lock files (for an exit that skips
    DDS's teardown); peers' segments it merely maps are left alone. Returns the names removed."""
    removed = []
    for name in sorted(own_segments()):
        for file in segment_files(name):
            with contextlib.suppress(OSError):
                (Path("/dev/shm") / file).unlink()
                removed.append(file)
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
