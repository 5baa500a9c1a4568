"""The link impairment model alone (vasimov.link_impairment): rules, statistics for a fixed seed, determinism."""

from __future__ import annotations

import math

import pytest

from vasimov.link_impairment import (
    DEFAULT_MAX_QUEUED,
    PERFECT,
    REORDER_MAX_HOLD_S,
    ImpairedLink,
    Impairment,
    LinkSettingError,
    parse_link_request,
)

PERIOD = 0.005  # the SDK state stream: 200 Hz


def _run(imp: Impairment, n: int, seed: int = 7, period: float = PERIOD) -> list[tuple[float, int]]:
    """Send n numbered datagrams every `period` s through a link; return (arrival time, number) in arrival order."""
    link: ImpairedLink[int] = ImpairedLink(seed, "state", max_queued=100_000)
    link.set(imp)
    out: list[tuple[float, int]] = []
    t = 0.0
    def drain(until: float) -> None:  # release at the exact due times, as the lane's timer does
        while (due := link.next_due()) is not None and due <= until:
            out.extend((due, x) for x in link.pop_due(due))

    for i in range(n):
        t = i * period
        drain(t)
        link.offer(i, t)
        drain(t)
    drain(math.inf)
    return out


# -- requests ----------------------------------------------------------------------------------------------------

def test_empty_request_clears_both_directions():
    assert parse_link_request({}) == {"state": PERFECT, "command": PERFECT}
    assert not PERFECT.active


def test_request_replaces_the_named_directions_whole():
    assert parse_link_request({"direction": "state", "loss": 0.5}) == {"state": Impairment(loss=0.5)}
    both = parse_link_request({"direction": "both", "delay_ms": 100, "jitter_ms": 5, "duplicate": 0.1,
                               "reorder": 0.2})
    assert set(both) == {"state", "command"}
    assert both["command"] == Impairment(delay_ms=100.0, jitter_ms=5.0, duplicate=0.1, reorder=0.2)
    assert parse_link_request({"direction": "command"}) == {"command": PERFECT}


@pytest.mark.parametrize("payload,field,words", [
    ([1], None, "JSON object"),
    ({"loss": 0.5}, "direction", "direction must be one of"),
    ({"direction": "up", "loss": 0.5}, "direction", "direction must be one of"),
    ({"direction": "state", "los": 0.5}, "los", "unknown keys ['los']"),
    ({"direction": "state", "loss": 1.5}, "loss", "loss must be in [0, 1]"),
    ({"direction": "state", "loss": -0.1}, "loss", "loss must be in [0, 1]"),
    ({"direction": "state", "loss": math.nan}, "loss", "loss must be finite"),
    ({"direction": "state", "delay_ms": math.inf}, "delay_ms", "delay_ms must be finite"),
    ({"direction": "state", "delay_ms": 10_001}, "delay_ms", "delay_ms must be in [0, 10000]"),
    ({"direction": "state", "jitter_ms": "5"}, "jitter_ms", "jitter_ms must be a number"),
    ({"direction": "state", "duplicate": True}, "duplicate", "duplicate must be a number"),
    ({"direction": "both", "reorder": 2}, "reorder", "reorder must be in [0, 1]"),
])
def test_bad_requests_name_the_field(payload, field, words):
    with pytest.raises(LinkSettingError) as exc:
        parse_link_request(payload)
    assert exc.value.field == field
    assert words in str(exc.value)


def test_settings_are_checked_on_construction_too():
    with pytest.raises(LinkSettingError, match="loss"):
        Impairment(loss=2.0)


# -- behaviour ----------------------------------------------------------------------------------------------------

def test_a_perfect_link_delivers_everything_at_once_in_order():
    out = _run(PERFECT, 1000)
    assert out == [(i * PERIOD, i) for i in range(1000)]


def test_loss_rate_matches_the_setting_for_a_fixed_seed():
    n = 20_000
    for loss in (0.1, 0.5, 0.9):
        got = len(_run(Impairment(loss=loss), n))
        # binomial: 4 standard deviations is ~1 % of n at 0.5
        assert abs(got / n - (1 - loss)) <= 4 * math.sqrt(loss * (1 - loss) / n), (loss, got)
    assert _run(Impairment(loss=1.0), 1000) == []


def test_loss_patterns_nest_across_settings_and_ignore_other_fields():
    kept_30 = {i for _t, i in _run(Impairment(loss=0.3), 5000)}
    kept_50 = {i for _t, i in _run(Impairment(loss=0.5), 5000)}
    assert kept_50 < kept_30  # common random numbers: what 0.5 keeps, 0.3 keeps too
    kept_50_jittered = {i for _t, i in _run(Impairment(loss=0.5, jitter_ms=3.0), 5000)}
    assert kept_50_jittered == kept_50


def test_same_seed_same_run_other_seed_other_run():
    imp = Impairment(loss=0.2, delay_ms=20, jitter_ms=10, duplicate=0.1, reorder=0.1)
    assert _run(imp, 3000, seed=3) == _run(imp, 3000, seed=3)
    assert _run(imp, 3000, seed=3) != _run(imp, 3000, seed=4)


def test_directions_draw_from_separate_streams():
    a: ImpairedLink[int] = ImpairedLink(1, "state")
    b: ImpairedLink[int] = ImpairedLink(1, "command")
    a.set(Impairment(loss=0.5))
    b.set(Impairment(loss=0.5))
    fate_a = [bool(a.offer(i, 0.0).delays_s) for i in range(200)]
    fate_b = [bool(b.offer(i, 0.0).delays_s) for i in range(200)]
    assert fate_a != fate_b


def test_delay_and_jitter_bounds_and_mean():
    n = 10_000
    link: ImpairedLink[int] = ImpairedLink(5, "command", max_queued=n + 1)
    link.set(Impairment(delay_ms=100.0, jitter_ms=20.0))
    delays = [link.offer(i, 0.0).delays_s[0] for i in range(n)]
    assert min(delays) >= 0.080 and max(delays) <= 0.120
    assert abs(sum(delays) / n - 0.100) < 0.001  # uniform +-20 ms: sd 11.5 ms, standard error 0.12 ms
    # jitter larger than the delay never sends a datagram before it was sent
    link.set(Impairment(delay_ms=5.0, jitter_ms=50.0))
    assert min(link.offer(i, 0.0).delays_s[0] for i in range(1000)) == 0.0


def test_a_fixed_delay_shifts_the_stream_and_keeps_its_order():
    out = _run(Impairment(delay_ms=250.0), 400)
    assert [i for _t, i in out] == list(range(400))
    assert all(abs(t - (i * PERIOD + 0.25)) < 1e-9 for t, i in out)


def test_large_jitter_reorders_by_itself():
    order = [i for _t, i in _run(Impairment(delay_ms=50.0, jitter_ms=20.0), 2000)]
    assert sorted(order) == list(range(2000)) and order != list(range(2000))


def test_duplicates_arrive_twice_at_the_rate_asked():
    n = 20_000
    out = [i for _t, i in _run(Impairment(duplicate=0.25), n)]
    assert sorted(set(out)) == list(range(n))
    extra = len(out) - n
    assert abs(extra / n - 0.25) <= 4 * math.sqrt(0.25 * 0.75 / n)


def test_reordered_datagrams_follow_their_successor():
    n = 20_000
    link: ImpairedLink[int] = ImpairedLink(9, "state", max_queued=n)
    link.set(Impairment(reorder=0.2))
    order: list[int] = []
    for i in range(n):
        link.offer(i, i * PERIOD)
        order.extend(link.pop_due(i * PERIOD))
    order.extend(link.pop_due(n * PERIOD + 1.0))
    assert sorted(order) == list(range(n))
    late = sum(1 for k in range(1, n) if order[k] < order[k - 1])  # a datagram arriving after a newer one
    # a datagram is held with p = 0.2 and released behind the next one that is not held: one inversion per run
    assert 0.13 * n <= late <= 0.2 * n, late
    assert link.snapshot()["reordered"] == pytest.approx(0.2 * n, rel=0.05)


def test_a_held_datagram_without_successor_goes_after_the_maximum_hold():
    link: ImpairedLink[str] = ImpairedLink(0, "command")
    link.set(Impairment(reorder=1.0))
    link.offer("only", 10.0)
    assert link.pop_due(10.0) == []
    assert link.next_due() == pytest.approx(10.0 + REORDER_MAX_HOLD_S)
    assert link.pop_due(10.0 + REORDER_MAX_HOLD_S) == ["only"]
    assert link.next_due() is None and link.queued == 0


def test_in_flight_datagrams_keep_their_time_after_a_clear():
    link: ImpairedLink[str] = ImpairedLink(0, "state")
    link.set(Impairment(delay_ms=1000.0))
    link.offer("slow", 0.0)
    link.set(PERFECT)
    assert link.busy  # still one in flight: the lane keeps using the link until it drains
    link.offer("fast", 0.1)
    assert link.pop_due(0.1) == ["fast"]
    assert link.pop_due(1.0) == ["slow"]
    assert not link.busy


def test_memory_is_bounded_and_overflow_counted():
    link: ImpairedLink[int] = ImpairedLink(0, "state", max_queued=100)
    link.set(Impairment(delay_ms=10_000.0, duplicate=0.5))
    for i in range(1000):
        link.offer(i, i * PERIOD)
    snap = link.snapshot()
    assert snap["queued"] == 100
    assert snap["offered"] == 1000 and snap["overflow"] > 0
    assert DEFAULT_MAX_QUEUED >= 2 * 200 * 10  # 200 Hz for the longest delay, with duplicates


def test_every_datagram_is_accounted_for():
    n = 5000
    link: ImpairedLink[int] = ImpairedLink(11, "state", max_queued=n * 2)
    link.set(Impairment(loss=0.2, delay_ms=30, jitter_ms=30, duplicate=0.1, reorder=0.1))
    released = 0
    for i in range(n):
        link.offer(i, i * PERIOD)
        released += len(link.pop_due(i * PERIOD))
    released += len(link.pop_due(1e9))
    snap = link.snapshot()
    assert snap["offered"] == n and snap["queued"] == 0
    assert snap["released"] == released == n - snap["lost"] + snap["duplicated"] - snap["overflow"]
