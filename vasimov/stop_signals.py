"""Ctrl-C and SIGTERM as a request to finish, for code that must end cleanly (close a bag, stop its children,
end a table) rather than be interrupted wherever it happens to be."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stop_on_signals(stop: threading.Event | None = None, *,
                    absorb_after_stop: bool = False) -> Iterator[threading.Event]:
    """Within the block, SIGINT/SIGTERM set ``stop`` (a new event if none is given) instead of raising; the previous
    handlers come back on exit. Main thread only (Python's rule for signal handlers).

    ``absorb_after_stop``: for a process's main. If a stop was requested, the handlers stay after the block, so the
    rest of the exit cannot be interrupted: under ``ros2 launch`` a node gets the terminal's SIGINT, then launch's
    own, then perhaps a second Ctrl-C, in any order relative to its cleanup; a KeyboardInterrupt raised in
    ``thread.join()`` or ``destroy_node()`` would print a traceback and make launch report the node as died."""
    event = stop if stop is not None else threading.Event()
    old = {s: signal.signal(s, lambda *_: event.set()) for s in STOP_SIGNALS}
    try:
        yield event
    finally:
        if not (absorb_after_stop and event.is_set()):
            for s, h in old.items():
                signal.signal(s, h)
