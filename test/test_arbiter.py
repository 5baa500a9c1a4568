"""The command arbiter: documented priority, hold time, DAMP always admitted, refusals counted."""

from __future__ import annotations

import math

import pytest

from vasimov.commands import (
    CommandSource,
    DampCommand,
    Rejection,
    StandCommand,
    TrajectoryCommand,
    VelocityCommand,
)
from vasimov_edge.arbiter import COUNTERS, PRIORITY, Arbiter

S, F, U, B = CommandSource.SCRIPT, CommandSource.FOXGLOVE, CommandSource.UDP, CommandSource.BINARY


def vel(source: CommandSource) -> VelocityCommand:
    return VelocityCommand(0.1, 0.0, 0.0, source=source)


def test_documented_priority_order() -> None:
    assert PRIORITY == (S, F, U, B)


def test_nobody_holds_control_at_boot() -> None:
    arb = Arbiter()
    assert arb.holder(0.0) is None and arb.holder_name() == ""
    assert set(arb.counters) == set(COUNTERS) and not any(arb.counters.values())


@pytest.mark.parametrize(
    ("holder", "challenger", "dt", "admitted", "holder_after"),
    [
        # a higher-priority source takes over at once
        (U, F, 0.0, True, F),
        (B, S, 0.5, True, S),
        (U, S, 0.99, True, S),
        # the same source is never refused
        (U, U, 0.0, True, U),
        (F, F, 0.3, True, F),
        # a lower-priority source is refused while the holder is within its hold...
        (F, U, 0.0, False, F),
        (S, B, 0.999, False, S),
        (U, B, 0.5, False, U),
        # ...and takes control once the holder has been silent for hold_s
        (F, U, 1.0, True, U),
        (S, B, 5.0, True, B),
    ],
)
def test_priority_table(holder, challenger, dt: float, admitted: bool, holder_after) -> None:
    arb = Arbiter(hold_s=1.0)
    assert arb.admit(vel(holder), 10.0) is None
    res = arb.admit(vel(challenger), 10.0 + dt)
    if admitted:
        assert res is None
    else:
        assert isinstance(res, Rejection) and res.reason == "NOT_ACTIVE"
        assert holder.name in res.detail and res.extra["counter"] == "arbiter_not_active"
        assert arb.counters["not_active"] == 1
    assert arb.holder(10.0 + dt) is holder_after


def test_holder_keeps_control_while_it_keeps_sending() -> None:
    arb = Arbiter(hold_s=1.0)
    for k in range(50):  # FOXGLOVE teleop at 10 Hz for 5 s
        assert arb.admit(vel(F), k * 0.1) is None
        assert arb.admit(vel(U), k * 0.1 + 0.05) is not None
    assert arb.holder_name(4.95) == "FOXGLOVE"
    assert arb.holder(4.9 + 1.0) is None  # silent for hold_s: nobody holds control
    assert arb.admit(vel(U), 5.95) is None and arb.holder_name() == "UDP"
    assert arb.counters["not_active"] == 50


@pytest.mark.parametrize("lower", [F, U, B])
def test_damp_is_always_admitted_and_takes_no_control(lower: CommandSource) -> None:
    arb = Arbiter(hold_s=1.0)
    assert arb.admit(StandCommand(source=S), 0.0) is None
    assert arb.admit(DampCommand(source=lower), 0.2) is None
    assert arb.holder(0.2) is S
    assert arb.counters["damp_from_inactive"] == 1
    # the DAMP did not refresh or take the hold: S's hold still ends 1 s after S's own command
    assert arb.admit(StandCommand(source=lower), 0.99) is not None
    assert arb.admit(StandCommand(source=lower), 1.0) is None


@pytest.mark.parametrize("cmd", [StandCommand(), TrajectoryCommand((0.0,) * 25), vel(U)])
def test_every_command_kind_is_arbitrated(cmd) -> None:
    arb = Arbiter()
    arb.admit(DampCommand(source=F), 0.0)
    assert arb.admit(cmd, 0.5).reason == "NOT_ACTIVE"  # type: ignore[union-attr]


def test_zero_hold_means_last_sender_wins() -> None:
    arb = Arbiter(hold_s=0.0)
    assert arb.admit(vel(S), 0.0) is None
    assert arb.admit(vel(B), 0.0) is None
    assert arb.holder_name() == "" and arb.counters["takeovers"] == 2


def test_bad_commands_are_refused_and_counted() -> None:
    arb = Arbiter()
    res = arb.admit("stand", 0.0)  # type: ignore[arg-type]
    assert res is not None and res.reason == "UNKNOWN_COMMAND"
    res = arb.admit(StandCommand(source=7), 0.0)  # type: ignore[arg-type]
    assert res is not None and res.reason == "UNSUPPORTED_SOURCE" and "UDP" in res.detail
    assert arb.counters["unknown_command"] == 1 and arb.counters["unsupported_source"] == 1
    assert arb.holder() is None
    assert arb.admit(StandCommand(), math.nan) is None  # a bad time is treated as "now"


def test_reset_forgets_the_holder_for_a_restarted_clock() -> None:
    arb = Arbiter()
    arb.admit(vel(S), 100.0)
    arb.reset()
    assert arb.holder() is None
    assert arb.admit(vel(U), 0.0) is None and arb.holder_name(0.0) == "UDP"
    assert arb.counters["takeovers"] == 1


def test_time_going_back_does_not_move_the_clock_back() -> None:
    arb = Arbiter()
    arb.admit(vel(F), 5.0)
    assert arb.admit(vel(U), 1.0) is not None  # treated as t = 5.0
    assert arb.holder() is F


@pytest.mark.parametrize("bad", [-1.0, math.inf, math.nan, "1"])
def test_bad_hold_is_refused_at_construction(bad) -> None:
    with pytest.raises(ValueError):
        Arbiter(hold_s=bad)
