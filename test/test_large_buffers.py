"""The recorder's allocator setting: glibc takes a fixed mmap threshold, so freed ~1 MiB buffers leave the process."""

from __future__ import annotations

import ctypes.util
import gc
import platform

import psutil
import pytest

from vasimov.large_buffers import unmap_large_buffers

pytestmark = pytest.mark.core


def test_glibc_accepts_the_fixed_threshold_and_freed_large_buffers_leave_the_process():
    if not ctypes.util.find_library("c") or platform.libc_ver()[0] != "glibc":
        pytest.skip("not glibc")
    assert unmap_large_buffers() is True
    proc = psutil.Process()
    gc.collect()
    before = proc.memory_info().rss
    pinned = []
    for size in range(63, 0, -1):  # freed buffers of 2 -> 1 MiB, each followed by a small allocation that stays
        buf = bytearray(2**20 + size * 16384)
        buf[::4096] = b"x" * len(buf[::4096])  # touch every page
        pinned.append(bytearray(100))  # on top of the heap: a heap-allocated buffer below it could not be trimmed
        del buf
    gc.collect()
    # with glibc's dynamic threshold (a fresh process without the call) about 2 MiB stay: measured 1.97 MiB
    assert proc.memory_info().rss - before < 2**19


def test_anything_but_a_c_library_is_a_no_op(monkeypatch):
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    assert unmap_large_buffers() is False
