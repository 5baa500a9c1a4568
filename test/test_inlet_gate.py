"""The inlet gate (per-source budget, newest-wins coalescing, DAMP never shed) and the state pairing rule."""

from __future__ import annotations

import pytest

from vasimov.commands import DampCommand, StandCommand, VelocityCommand
from vasimov_bridge.inlet_gate import CommandGate, GateConfig, SourceBudgets, TokenBucket
from vasimov_bridge.state_pairing import FRESH, STALE, StatePairing, driving_tick


def v(x: float) -> VelocityCommand:
    return VelocityCommand(x, 0.0, 0.0)


def test_token_bucket_refills_at_its_rate_and_caps_at_its_burst():
    b = TokenBucket(10.0, 2.0, now=0.0)
    assert b.take(0.0) and b.take(0.0) and not b.take(0.0)
    assert b.ready_at(0.0) == pytest.approx(0.1)
    assert b.take(0.1) and not b.take(0.1)
    assert b.take(100.0) and b.take(100.0) and not b.take(100.0)  # never more than the burst
    with pytest.raises(ValueError):
        TokenBucket(0.0, 1.0, 0.0)


def test_source_budgets_are_per_source_and_bounded_in_memory():
    s = SourceBudgets(1.0, 1.0, max_sources=2)
    assert s.take("a", 0.0) and not s.take("a", 0.0)
    assert s.take("b", 0.0)  # another source has its own budget
    assert s.take("c", 0.0)  # evicts "a" (least recently seen)
    assert len(s._buckets) == 2 and s.take("a", 0.0)  # an evicted source starts again, memory stays bounded


def test_a_real_client_passes_untouched_and_in_order():
    gate = CommandGate(GateConfig(rate_per_source=200, burst_per_source=40))
    t, out = 0.0, []
    for i in range(600):  # 60 s of the SDK's worst case: 50 Hz trajectory-like + 10 Hz keepalive, as 60/s
        out += gate.offer("sdk", v(i), t)
        t += 1 / 60
    assert [c.vx for c in out] == list(range(600))
    assert gate.counters["coalesced"] == 0 and gate.pending == 0


def test_a_flood_is_coalesced_newest_wins_and_the_last_word_arrives():
    gate = CommandGate(GateConfig(rate_per_source=100, burst_per_source=10, rate_global=1000, burst_global=100))
    out = []
    n = 10_000
    for i in range(n):  # 10,000 commands within one second
        out += gate.offer("flood", v(i), i / n)
    assert gate.pending == 1
    due = gate.next_due(1.0)
    assert due is not None and 1.0 <= due <= 1.02
    out += [c for _, c in gate.due(due)]
    assert len(out) <= 10 + 100 + 2  # burst + one second of budget (+ the last word)
    assert out[-1].vx == n - 1  # the newest command always arrives
    xs = [c.vx for c in out]
    assert xs == sorted(xs)  # never reordered
    assert gate.counters["coalesced"] == n - len(out)


def test_damp_is_never_shed_supersedes_the_waiting_command_and_repeats_are_folded():
    gate = CommandGate(GateConfig(rate_per_source=1, burst_per_source=1, damp_repeat_s=0.02))
    assert gate.offer("c", StandCommand(), 0.0) == [StandCommand()]
    assert gate.offer("c", v(1), 0.0) == []  # over budget: waits
    assert gate.offer("c", DampCommand(), 0.001) == [DampCommand()]  # passes at once, even with no token
    assert gate.pending == 0  # the older velocity must not follow the stop
    assert gate.offer("c", DampCommand(), 0.002) == []  # an identical stop 1 ms later: folded
    assert gate.offer("c", DampCommand(), 0.05) == [DampCommand()]
    assert gate.counters["damp_repeats"] == 1


def test_sources_have_separate_budgets_and_a_global_cap():
    gate = CommandGate(GateConfig(rate_per_source=10, burst_per_source=5, rate_global=10, burst_global=8))
    a = sum(len(gate.offer("a", v(i), 0.0)) for i in range(20))
    b = sum(len(gate.offer("b", v(i), 0.0)) for i in range(20))
    assert a == 5 and b == 3  # b has its own 5 tokens but the global bucket had only 8


def test_driving_tick():
    assert [driving_tick(s, 4) for s in range(10)] == [-1, 0, 0, 0, 0, 1, 1, 1, 1, 2]


def test_pairing_sends_fresh_frames_with_the_firmware_state_that_drove_them():
    p: StatePairing[int, str] = StatePairing(4, max_lag_ticks=5)
    assert p.plant(0, 0) == [] and p.plant(1, 1) == []  # a new life: held for the epoch's first firmware state
    out = p.firmware(0, "fw0")  # ... and released with it (a standing boot is STAND from its first frame)
    assert [(o.step, o.firmware, o.verdict) for o in out] == [(0, "fw0", FRESH), (1, "fw0", FRESH)]
    p.firmware(1, "fw1")
    out = p.plant(5, 5)  # driven by tick 1
    assert [(o.step, o.firmware, o.verdict) for o in out] == [(5, "fw1", FRESH)]
    p.firmware(2, "fw2")
    assert p.plant(4, 4)[0].firmware == "fw0"  # a late sample still gets its own tick's firmware state


def test_a_firmware_still_booting_streams_without_a_firmware_part_after_the_grace():
    p: StatePairing[int, str] = StatePairing(4, max_lag_ticks=5)
    out = []
    for step in range(0, 40):  # no firmware state for 10 ticks, none of them answered: the edge is still starting
        out += p.plant(step, step, command_tick=-1)
    assert [o.step for o in out] == list(range(0, 40)) and {o.firmware for o in out} == {None}
    assert {o.verdict for o in out} == {FRESH} and p.held == 0 and p.stale_frames == 0
    p.firmware(10, "fw10")
    assert p.plant(44, 44)[0].firmware == "fw10"


def test_answered_samples_before_the_first_firmware_state_wait_for_it_bounded():
    p: StatePairing[int, str] = StatePairing(4, max_lag_ticks=5, max_held=64)
    for step in range(0, 41):  # ticks 0..9 answered, their firmware states not here yet
        assert p.plant(step, step, command_tick=driving_tick(step, 4)) == []
    out = p.firmware(0, "fw0") + p.firmware(9, "fw9")
    assert [o.step for o in out] == list(range(0, 41)) and out[0].firmware == "fw0" and out[-1].firmware == "fw9"


def test_pairing_holds_a_sample_until_its_firmware_part_arrives():
    p: StatePairing[int, str] = StatePairing(4, max_lag_ticks=5)
    p.firmware(0, "fw0")
    assert p.plant(5, 5) == [] and p.plant(6, 6) == []  # tick 1's decision not seen yet: held
    out = p.firmware(1, "fw1")
    assert [(o.step, o.firmware, o.verdict) for o in out] == [(5, "fw1", FRESH), (6, "fw1", FRESH)]
    assert p.held == 0


def test_a_stalled_firmware_turns_samples_stale_never_fresh():
    p: StatePairing[int, str] = StatePairing(4, max_lag_ticks=5)
    p.firmware(9, "fw9")  # last answer: tick 9; the plant then steps on without answers
    verdicts = []
    for step in range(41, 80):
        verdicts += [o.verdict for o in p.plant(step, step)]
    assert FRESH not in verdicts  # nothing the stalled firmware did not decide goes out as fresh
    assert verdicts and set(verdicts) == {STALE}
    assert p.held <= 5 * 4
    # the firmware comes back: fresh again from its tick on
    p.firmware(20, "fw20")
    out = p.plant(84, 84)
    assert out[-1].verdict == FRESH and out[-1].firmware == "fw20"


def test_an_answered_sample_is_late_never_stale_however_far_the_firmware_topic_lags():
    """The plant applied the answer to each sample's own tick (the edge is alive); the firmware states are 10 ticks
    behind on the wire, as on a loaded machine: nothing goes out as a firmware fault."""
    p: StatePairing[int, str] = StatePairing(4, max_lag_ticks=5, max_held=100)
    p.firmware(0, "fw0")
    out = []
    for step in range(5, 45):  # ticks 1..10, each stepped with its own answer
        out += p.plant(step, step, command_tick=driving_tick(step, 4))
    assert out == [] and p.held == 40
    out = p.firmware(10, "fw10")
    assert len(out) == 40 and {o.verdict for o in out} == {FRESH} and out[-1].firmware == "fw10"
    assert p.stale_frames == 0


def test_answered_samples_past_the_bound_leave_fresh_with_the_newest_firmware_known():
    p: StatePairing[int, str] = StatePairing(4, max_lag_ticks=5, max_held=8)
    p.firmware(0, "fw0")
    out = []
    for step in range(5, 14):
        out += p.plant(step, step, command_tick=driving_tick(step, 4))
    assert [o.step for o in out] == list(range(5, 14)) and {o.verdict for o in out} == {FRESH}
    assert {o.firmware for o in out} == {"fw0"} and p.late_frames == 9 and p.held == 0


def test_a_sample_stepped_without_its_answer_is_still_judged_by_lag():
    p: StatePairing[int, str] = StatePairing(4, max_lag_ticks=5)
    p.firmware(9, "fw9")
    verdicts = []
    for step in range(41, 80):  # the plant's watchdog reused tick 9's answer: the edge did not decide these
        verdicts += [o.verdict for o in p.plant(step, step, command_tick=9)]
    assert verdicts and set(verdicts) == {STALE}


def test_held_samples_are_bounded():
    p: StatePairing[int, str] = StatePairing(1, max_lag_ticks=1000, max_held=8)
    p.firmware(0, "fw0")
    out = []
    for step in range(2, 12):
        out += p.plant(step, step)
    assert p.held <= 8 and all(o.verdict == STALE for o in out) and out
