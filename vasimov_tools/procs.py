"""Process facts read from /proc: descendants of a process, whether one is still alive, the Fast DDS segments it
maps. Used by everything that must prove a graph left nothing behind (the graph bench, the tests)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from vasimov.ros.shm import mapped_segments


def descendants(pid: int) -> list[int]:
    """Every descendant of ``pid`` (children first, then theirs), from /proc."""
    kids: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (a zombie has ended; only its exit status waits to be read)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def mapped_shm_segments(pids: Iterable[int]) -> set[str]:
    """Fast DDS participant segments (``/dev/shm/fastdds_`` + 16 characters) these processes have mapped: what they
    must remove when they end (port segments are shared and never counted; `vasimov.ros.shm`)."""
    out: set[str] = set()
    for pid in pids:
        out |= mapped_segments(pid)
    return out


def segments_in_use() -> set[str]:
    """Fast DDS participant segments some live process maps now. A segment of an ended graph that another live
    process still maps (a ros2 CLI participant's or daemon's, read by the graph while it ran) belongs to that process,
    not to the graph: it removes its own when it ends."""
    pids = [int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit()]
    return mapped_shm_segments(p for p in pids if alive(p))
