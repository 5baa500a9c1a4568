"""Give large buffers back to the operating system when they are freed (glibc's fixed mmap threshold).

Why: a process that allocates and frees buffers of about a megabyte over and over (the recorder: each MCAP chunk is
built in a growing 1 MiB buffer, then compressed into another) meets glibc's *dynamic* mmap threshold. The first
such buffer is mmapped; freeing it raises the threshold above its size, so every later one comes from the heap,
where freed space is kept and fragments: the process's RSS creeps up in steps for minutes and never comes down, which
a long run reads as a leak. Setting the threshold explicitly turns the dynamic adjustment off: buffers at or above
it are always mmapped and unmapped on free, so RSS follows what is really in use.

The setting is process-wide: in a composed process (``vasimov up --compose --record``) it holds for every node
there; the control path's per-tick messages are a few KB, far below the threshold.
Linux/glibc only; elsewhere (musl, macOS) this is a no-op that says so.
"""

from __future__ import annotations

import ctypes
import ctypes.util

#: glibc's ``M_MMAP_THRESHOLD`` (malloc.h) and the value used: glibc's own starting threshold, held fixed
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 128 * 1024


def unmap_large_buffers(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes for this process; True when glibc accepted it."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt(M_MMAP_THRESHOLD, int(threshold)) == 1
