"""The one tick synchroniser (``vasimov.tick_sync``), as the edge and the policy runner use it."""

from __future__ import annotations

import pytest

from vasimov.tick_sync import TickSync


def test_a_tick_is_ready_once_every_input_arrived_in_any_order() -> None:
    sync = TickSync(("state", "firmware"))
    sync.put("firmware", 0, 3, "fw2")  # the firmware's state after tick 2 is an input of tick 3
    assert sync.ready(3) is None and sync.take(3) is None
    sync.put("state", 0, 3, "s3")
    assert sync.take(3) == {"firmware": "fw2", "state": "s3"}
    assert sync.take(3) is None  # taken once


def test_forget_through_drops_a_tick_and_every_older_one_only() -> None:
    sync = TickSync(("state", "firmware"))
    for k in range(4):
        sync.put("state", 0, k, f"s{k}")
    sync.forget_through(2)  # answered without all inputs (real time)
    assert [sync.get("state", k) for k in range(4)] == [None, None, None, "s3"]


def test_a_new_epoch_forgets_the_old_one_and_stale_inputs_are_counted() -> None:
    sync = TickSync(("state",))
    sync.put("state", 0, 5, "old")
    sync.put("state", 1, 0, "new")
    assert sync.get("state", 5) is None and sync.take(0) == {"state": "new"}
    sync.put("state", 0, 6, "late")
    assert sync.dropped_stale == 1 and sync.get("state", 6) is None
    with pytest.raises(KeyError):
        sync.put("nope", 1, 0, None)
