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

    ``absorb_after_stop``: for a process's main. If a stop was requested, the signals are ignored after the block, so
    the rest of the exit cannot be interrupted: under ``ros2 launch`` a node gets the terminal's SIGINT, then
    launch's own, then perhaps a second Ctrl-C, in any order relative to its cleanup; a KeyboardInterrupt in
    ``thread.join()`` or ``destroy_node()`` would print a traceback, and a signal during interpreter finalization
    (which puts Python-level handlers back to the default, but leaves "ignore" alone) would kill the process, exit
    code -2: launch reports either as "process has died".

    The handler does not call ``event.set()`` itself: Python runs handlers in the main thread between bytecodes,
    and when that thread is inside ``event.wait()`` holding the event's (non-reentrant) lock, ``set()`` waits for
    that lock forever. That froze ``vasimov up`` once in CI (a Ctrl-C never acted on; reproduced with a tight
    ``wait(0)`` loop). A short-lived thread sets the event instead, once the main thread lets go of the lock."""
    event = stop if stop is not None else threading.Event()
    requested = False  # a plain flag (no lock): the handler may run again, nested, while it starts the thread

    def handler(_signum: int, _frame: object) -> None:
        nonlocal requested
        if not requested:
            requested = True
            threading.Thread(target=event.set, name="stop-signal", daemon=True).start()

    old = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    try:
        yield event
    finally:
        stopping = requested or event.is_set()
        for s, h in old.items():
            signal.signal(s, signal.SIG_IGN if absorb_after_stop and stopping else h)
