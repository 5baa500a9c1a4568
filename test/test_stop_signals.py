"""stop_on_signals: SIGINT/SIGTERM inside the block set the event instead of raising; old handlers come back."""

from __future__ import annotations

import os
import signal
import threading

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
