"""Push bisection (vasimov_tools.push_limit): the search alone against known thresholds, the probe scenario it runs
through the bench, and the command's usage errors. The physics runs are in the benchmark, not here."""

from __future__ import annotations

import json

import pytest

from vasimov_tools import push_limit as pl


@pytest.mark.parametrize("threshold", [0.0, 137.0, 299.9, 512.5, 999.0])
def test_bisection_brackets_a_monotone_threshold_within_the_tolerance(threshold):
    b = pl.bisect_limit(lambda f: f <= threshold, 0.0, 1000.0, 10.0)
    assert b.survived is not None and b.fell is not None
    assert b.survived <= threshold < b.fell and b.fell - b.survived <= 10.0
    assert b.probes[:2] == [(1000.0, False), (0.0, True)]  # the top, then the bottom, then halving
    assert len(b.probes) <= 2 + 7  # log2(1000 / 10) rounded up


def test_bisection_reports_the_range_ends_when_the_answer_is_outside():
    above = pl.bisect_limit(lambda f: True, 100.0, 600.0, 5.0)
    assert (above.survived, above.fell, above.probes) == (600.0, None, [(600.0, True)])
    below = pl.bisect_limit(lambda f: False, 100.0, 600.0, 5.0)
    assert (below.survived, below.fell, len(below.probes)) == (None, 100.0, 2)


def test_bisection_keeps_every_probe_so_a_non_monotone_outcome_shows():
    outcomes = {1000.0: False, 0.0: True, 500.0: False, 250.0: True, 375.0: True, 437.5: False}
    b = pl.bisect_limit(lambda f: outcomes[f], 0.0, 1000.0, 100.0)
    assert (b.survived, b.fell) == (375.0, 437.5)
    assert [f for f, _ in b.probes] == [1000.0, 0.0, 500.0, 250.0, 375.0, 437.5]


@pytest.mark.parametrize(("lo", "hi", "tol"), [(-1.0, 10.0, 1.0), (10.0, 10.0, 1.0), (0.0, 10.0, 0.0)])
def test_bisection_refuses_a_bad_range(lo, hi, tol):
    with pytest.raises(ValueError):
        pl.bisect_limit(lambda f: True, lo, hi, tol)


def test_the_probe_is_a_pelvis_push_of_015_s_standing_or_walking():
    s = pl.push_scenario("left", 250.0, walking=0.3)
    (p,) = s.pushes
    assert (p.body, p.force, p.duration, p.t) == ("pelvis_link", (0.0, 250.0, 0.0), 0.15, pl.WALKING_PUSH_T)
    late = pl.push_scenario("left", 250.0, walking=0.3, t=3.5)
    assert late.pushes[0].t == 3.5 and late.duration == 3.5 + pl.RECOVER_SECONDS and late.name != s.name
    assert s.commands == ((0.0, 0.3, 0.0, 0.0),) and s.duration == pl.WALKING_PUSH_T + pl.RECOVER_SECONDS
    back = pl.push_scenario("back", 300.0)
    assert back.pushes[0].force == (-300.0, 0.0, 0.0) and back.commands == ((0.0, 0.0, 0.0, 0.0),)
    assert back.criteria.max_compute_p99 is None  # only the fall decides


def test_phases_spread_the_push_over_a_gait_cycle():
    assert pl.push_times(0.0) == [pl.STANDING_PUSH_T]
    assert pl.push_times(0.3, 4) == pytest.approx([3.0, 3.25, 3.5, 3.75])
    with pytest.raises(ValueError):
        pl.push_times(0.3, 0)


@pytest.mark.parametrize("args", [["--phases", "0"], ["--range", "500", "100"], ["--walking", "0.6"],
                                  ["--direction", "up"], ["--policy", "builtin:nonsense"]])
def test_usage_errors_exit_2_before_any_run(args, capsys):
    with pytest.raises(SystemExit) as exc:
        pl.main(args)
    assert exc.value.code == 2


def test_the_command_probes_through_the_bench_and_writes_its_report(tmp_path, capsys):
    """Two real probes of the built-in controller (0 N stands, 1000 N fells it): the range ends, the JSON report
    with each probe's fall time, and the table."""
    out = tmp_path / "limits.json"
    assert pl.main(["--direction", "front", "--range", "0", "1000", "--tolerance", "1000", "--out", str(out)]) == 0
    (report,) = json.loads(out.read_text())
    assert (report["direction"], report["survived"], report["fell"]) == ("front", 0.0, 1000.0)
    assert [(p["force"], p["survived"]) for p in report["probes"]] == [(1000.0, False), (0.0, True)]
    assert report["probes"][0]["fell_at"][0] > pl.STANDING_PUSH_T and report["probes"][1]["fell_at"] == [None]
    assert "front" in capsys.readouterr().out
