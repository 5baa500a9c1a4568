"""The real-time pacer (vasimov_plant.pacing): wall-clock schedule plus lockstep answers, on a simulated clock."""

from __future__ import annotations

import numpy as np
import pytest

from vasimov_plant.pacing import PERCENTILE_REL_ERROR, LatenessHistogram, Pacer

P = 0.02  # control period, wall = sim (real-time factor 1)


def _pacer(now: float = 0.0, **kw) -> Pacer:
    return Pacer(period_wall=P, period_sim=P, answer_timeout=kw.pop("answer_timeout", 0.5), now=now, **kw)


def _run(pacer: Pacer, answer_delays: list[float], t: float = 0.0) -> float:
    """Drive the pacer as the physics thread does: tick k is published at t, its answer arrives `delay` later;
    the tick starts at max(answer, slot). Returns the wall time after the last tick."""
    for delay in answer_delays:
        answer_at = t + delay
        t = max(answer_at, pacer.release_at(answered=True))
        pacer.answer_arrived(answer_at)
        pacer.started(t, answered=True)
    return t


def test_never_runs_ahead_of_the_wall_clock():
    p = _pacer()
    assert p.release_at(answered=True) == pytest.approx(P)
    p.answer_arrived(0.001)
    p.started(P, answered=True)
    assert p.release_at(answered=True) == pytest.approx(2 * P)  # an instant answer still waits for the slot


def test_fast_answers_give_real_time_factor_one_and_zero_lateness():
    p = _pacer()
    t = _run(p, [0.002] * 500)
    s = p.summary(t)
    assert s.ticks == 500 and s.unanswered == 0 and s.late_ticks == 0
    assert s.rtf == pytest.approx(1.0, rel=1e-3)  # the totals start at the first answer, 2 ms into the first period
    assert s.lateness_ms == (0.0, 0.0, 0.0)


def test_a_short_hiccup_is_caught_up_with_every_tick_answered():
    p = _pacer()
    t = _run(p, [0.002] * 100 + [0.2] + [0.002] * 100)  # one answer 200 ms late: 10 periods behind
    s = p.summary(t)
    assert s.unanswered == 0 and p.slipped_s == 0.0
    assert s.late_ticks >= 1
    assert s.rtf == pytest.approx(1.0, rel=1e-3)  # back on schedule: no simulated time lost


def test_a_machine_that_cannot_keep_up_slows_simulated_time_instead_of_missing_answers():
    p = _pacer()
    t = _run(p, [0.03] * 1000)  # every answer takes 1.5 control periods
    s = p.summary(t)
    assert s.unanswered == 0
    assert s.rtf == pytest.approx(P / 0.03, rel=0.02)  # ~0.67
    assert p.slipped_s > 0
    # the schedule is reset rather than letting the backlog grow: lateness stays bounded by the backlog
    assert s.lateness_ms[2] <= (p.max_backlog_s + 2 * P) * 1e3


def test_a_silent_participant_is_waited_for_answer_timeout_then_stepped_at_wall_pace():
    p = _pacer(answer_timeout=0.5)
    p.answer_arrived(0.0)
    assert p.release_at(answered=False) == pytest.approx(0.5)  # waits, bounded
    t = 0.5
    p.started(t, answered=False)
    # still silent: no more waiting beyond the slot (the watchdog damps; the stream keeps flowing)
    for _ in range(10):
        t = p.release_at(answered=False)
        p.started(t, answered=False)
    assert p.summary(t).unanswered == 11
    assert p.release_at(answered=False) == pytest.approx(p.slot)
    # answers resume: waiting resumes
    p.answer_arrived(t)
    assert p.release_at(answered=False) == pytest.approx(t + 0.5)


def test_windows_report_their_own_ticks_and_rate():
    p = _pacer()
    t = _run(p, [0.002] * 50)
    w1 = p.take_window(t)
    t = _run(p, [0.002] * 25, t)
    w2 = p.take_window(t)
    assert (w1.ticks, w2.ticks) == (50, 25)
    assert w2.rtf == pytest.approx(1.0, rel=0.05)
    assert "real-time factor" in w2.describe()


def test_restart_gives_a_fresh_answer_timeout():
    p = _pacer(answer_timeout=0.5)
    p.reset_silence(3.0)
    assert p.release_at(answered=False) == pytest.approx(3.5)


def test_rejects_nonsense_configuration():
    with pytest.raises(ValueError):
        Pacer(period_wall=0.0, period_sim=P, answer_timeout=0.5, now=0.0)


def test_the_run_totals_start_when_the_loop_closes():
    p = _pacer(answer_timeout=0.5)
    t = p.release_at(answered=False)  # nobody answers tick 0 (nodes still starting): a bounded wait
    p.started(t, answered=False)
    _run(p, [0.002] * 10, t)
    s = p.summary(t + 10 * P)
    assert s.ticks == 10 and s.unanswered == 0 and s.late_ticks == 0


def test_lateness_percentiles_are_within_one_percent_in_constant_memory():
    rng = np.random.default_rng(3)
    samples = np.concatenate([np.zeros(3000), rng.exponential(0.002, 20000), [0.3]])
    h = LatenessHistogram()
    for x in samples:
        h.add(float(x))
    for q in (10, 50, 90, 99, 99.9):
        true = float(np.percentile(samples, q, method="inverted_cdf"))
        assert true <= h.percentile(q) <= true * (1 + PERCENTILE_REL_ERROR) + 1e-12, q
    assert h.max_s == 0.3 and h.percentile(100) == 0.3 and h.percentile(5) == 0.0
    size = h.counts.nbytes
    for _ in range(10000):
        h.add(0.001)
    assert h.counts.nbytes == size  # a longer run costs no memory


def test_the_control_period_is_measured_between_tick_starts_and_reported():
    """On time, every period is the target; one answer 60 ms late shows as one long period (p99/max) and the
    published conformance window (``take_report``, ``as_dict``) carries both period and lateness."""
    p = _pacer()
    t = _run(p, [0.002] * 99 + [0.060])
    w = p.take_report(t)
    assert w.ticks == 100
    assert w.period_ms[0] == pytest.approx(P * 1e3, rel=0.02)
    assert w.period_ms[2] > 2 * P * 1e3  # the late tick started more than a period after its predecessor
    d = w.as_dict(P * 1e3)
    assert d["control_period_ms"]["target"] == pytest.approx(20.0)
    assert d["control_period_ms"]["max"] > 40.0 and d["lateness_ms"]["max"] > 30.0
    assert d["ticks"] == 100 and 0.0 < d["rtf"] <= 1.0
    assert p.take_report(t).ticks == 0  # a new window each take; the log's window is independent
    assert p.take_window(t).ticks == 100


def test_stream_rate_windows_and_total():
    from vasimov_bridge.stream_rate import StreamRate

    r = StreamRate(0.0)
    r.count(200)
    assert r.take(1.0) == {"frames": 200, "window_s": 1.0, "state_hz": 200.0}
    r.count(90)
    assert r.take(1.5)["state_hz"] == pytest.approx(180.0)
    assert r.total(1.5)["frames"] == 290
