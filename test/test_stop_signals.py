"""stop_on_signals: SIGINT/SIGTERM inside the block set the event instead of raising; old handlers come back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from vasimov.stop_signals import stop_on_signals


def test_signals_set_the_event_and_the_old_handlers_return() -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with stop_on_signals() as stop:
        assert not stop.is_set()
        os.kill(os.getpid(), signal.SIGTERM)  # delivered to the main thread before the next bytecode
        assert stop.wait(1.0)
    assert {s: signal.getsignal(s) for s in before} == before


def test_a_given_event_is_the_one_set() -> None:
    mine = threading.Event()
    with stop_on_signals(mine) as stop:
        assert stop is mine
        os.kill(os.getpid(), signal.SIGINT)
        assert mine.wait(1.0)


def test_absorb_after_stop_ignores_later_signals_once_stopped() -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with stop_on_signals(absorb_after_stop=True) as stop:
            os.kill(os.getpid(), signal.SIGINT)
            assert stop.wait(1.0)
        # ignored, not a Python handler: interpreter finalization resets those to the default (death by SIGINT)
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGINT)  # a second Ctrl-C during the exit does nothing
    finally:
        for s, h in before.items():
            signal.signal(s, h)
    with stop_on_signals(absorb_after_stop=True):
        pass  # no stop requested: the old handlers come back
    assert {s: signal.getsignal(s) for s in before} == before


_WAIT_LOOP = """
import os, signal, sys, threading
from vasimov.stop_signals import stop_on_signals
for i in range(300):
    with stop_on_signals() as stop:
        kill = threading.Timer(0.0003 * (i % 5), os.kill, (os.getpid(), signal.SIGINT))
        kill.start()
        while not stop.wait(0):  # the main thread holds the event's lock for a few bytecodes each round
            pass
        kill.join()
print("done")
"""


def test_a_signal_during_the_main_threads_own_wait_still_stops_it() -> None:
    """The main thread spins in ``stop.wait(0)`` while signals arrive from another thread: a handler that set the
    event itself deadlocked within the first few of these rounds (the handler runs in the main thread, which holds
    the event's lock inside ``wait``); every round must end."""
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-c", _WAIT_LOOP], cwd=root, capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "done", proc.stderr[-2000:]
