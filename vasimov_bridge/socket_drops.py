"""Datagrams the kernel dropped on one of our UDP sockets (receive buffer full), from ``/proc/net/udp``.

Under a flood the receive buffer is the only queue, and what does not fit is dropped by the kernel before this
process sees it: those drops are real losses and must be counted like any other. Linux keeps a per-socket
counter (``sk_drops``, the last column of ``/proc/net/udp``; the same number ``SO_RXQ_OVFL`` reports as ancillary
data); reading it costs one small file read, off the receive path, whenever the counters are asked for.
"""

from __future__ import annotations

import os
import socket

PROC_FILES = ("/proc/net/udp", "/proc/net/udp6")


def parse_drops(text: str, inode: int) -> int | None:
    """The ``drops`` column of the row whose inode is ``inode`` in a ``/proc/net/udp`` listing, or None."""
    for line in text.splitlines()[1:]:
        cols = line.split()
        # sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
        if len(cols) >= 13 and cols[9].isdigit() and int(cols[9]) == inode:
            try:
                return int(cols[12])
            except ValueError:
                return None
    return None


def socket_inode(sock: socket.socket) -> int:
    return os.fstat(sock.fileno()).st_ino


def kernel_drops(sock: socket.socket, files: tuple[str, ...] = PROC_FILES) -> int | None:
    """Datagrams dropped by the kernel on ``sock`` since it was opened; None where the kernel does not say."""
    try:
        inode = socket_inode(sock)
    except OSError:
        return None
    for path in files:
        try:
            with open(path, encoding="ascii") as f:
                drops = parse_drops(f.read(), inode)
        except OSError:
            continue
        if drops is not None:
            return drops
    return None
