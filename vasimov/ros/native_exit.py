"""A process exit that runs without Python: the last bound on a node's teardown.

Why: a node's teardown ends in the DDS library (``destroy_node`` deletes the last node's participant; the context is
finalised during interpreter shutdown). Twice in CI an observer process (the Foxglove bridge, later the binary
stream) logged its clean stop and then never ended, not even when ``ros2 launch`` escalated to SIGTERM, and the
exit guard of ``vasimov.ros.spin`` -- a Python timer thread -- never fired. A Python thread can only run when it
gets the GIL, and it cannot get it while the main thread is blocked inside a C++ call that holds it, nor once the
interpreter is finalising. So the backstop here asks the C library, not Python: POSIX timers with ``SIGEV_THREAD``
notification, whose expiry makes glibc start a native thread that calls a C function with one argument. At
expiry they call ``shm_unlink`` on the files of this process's Fast DDS segments (so even this exit leaves nothing
in /dev/shm) and then ``_exit(code)``. ``faulthandler``'s watchdog, also a native thread, prints every Python
thread's stack just before, so the log says where the teardown hung.

Linux with glibc only (``timer_create`` is in libc since glibc 2.34); elsewhere ``arm`` returns False and the
Python guard alone bounds the teardown.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import faulthandler
import sys
from collections.abc import Iterable

from vasimov.ros.shm import segment_files

_CLOCK_MONOTONIC = 1
_SIGEV_THREAD = 2


class _Sigevent(ctypes.Structure):
    """``struct sigevent`` of 64-bit Linux (64 bytes): the value is passed to the notify function by value."""

    _fields_ = [
        ("value", ctypes.c_void_p),  # union sigval: sival_int / sival_ptr
        ("signo", ctypes.c_int),
        ("notify", ctypes.c_int),
        ("function", ctypes.c_void_p),  # void (*)(union sigval)
        ("attributes", ctypes.c_void_p),  # pthread_attr_t *
        ("_pad", ctypes.c_int * 8),
    ]


class _Timespec(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("interval", _Timespec), ("value", _Timespec)]


# Everything a timer's native thread will read (names passed by pointer) stays referenced here until the process
# ends: a freed buffer would be read after Python let go of it.
_keep: list[object] = []


def _after(libc: ctypes.CDLL, delay_s: float, function: object, value: int) -> bool:
    """One one-shot timer: after ``delay_s`` a native thread calls ``function(value)``."""
    event = _Sigevent(value=value or None, signo=0, notify=_SIGEV_THREAD,
                      function=ctypes.cast(function, ctypes.c_void_p).value, attributes=None)
    timer = ctypes.c_void_p()
    if libc.timer_create(_CLOCK_MONOTONIC, ctypes.byref(event), ctypes.byref(timer)) != 0:
        return False
    whole = int(delay_s)
    spec = _Itimerspec(value=_Timespec(whole, max(1, int((delay_s - whole) * 1e9))))
    if libc.timer_settime(timer, 0, ctypes.byref(spec), None) != 0:
        return False
    _keep.append(timer)
    return True


def arm(delay_s: float, code: int, shm_names: Iterable[str] = ()) -> bool:
    """After ``delay_s`` seconds the process ends with ``code``, whatever Python is doing.

    Just before (100 ms and 50 ms before) the Python stacks are printed to stderr and each of ``shm_names``
    (participant segments, e.g. ``fastdds_0123456789abcdef``) is unlinked with its semaphore and lock file
    (``vasimov.ros.shm.segment_files``). Returns whether it is armed; once armed it cannot be cancelled, so call it
    only when the process is ending anyway."""
    if not sys.platform.startswith("linux") or delay_s <= 0.1:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        timer_create, exit_now = libc.timer_create, libc._exit
        shm_unlink = libc.shm_unlink
    except (OSError, AttributeError):
        return False
    timer_create.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    libc.timer_settime.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    for name in shm_names:
        for file in segment_files(name):
            buf = ctypes.create_string_buffer(f"/{file}".encode())
            _keep.append(buf)
            if not _after(libc, delay_s - 0.05, shm_unlink, ctypes.addressof(buf)):
                return False
    faulthandler.dump_traceback_later(delay_s - 0.1, repeat=False, file=sys.stderr, exit=False)
    # code 0 travels as a null sigval: _exit reads the argument register as an int either way
    return _after(libc, delay_s, exit_now, int(code) & 0xFF)
