"""Walker v2 in the single-process lockstep loop through the firmware core (vasimov_tools.walk_bench): it stands,
walks forward at the SDK's 0.4 m/s without falling (with its heel-off; flat-footed it falls), backward at -0.4 m/s
(landing on its toes; landing flat it falls), and two runs are bit-identical."""

from __future__ import annotations

from dataclasses import replace

import pytest

pytest.importorskip("placo")

from vasimov_edge.policy.registry import make_backend
from vasimov_edge.policy.walker import WalkerV2
from vasimov_edge.policy.walker.config import WalkerConfig
from vasimov_tools import walk_bench as wb

NO_COMPUTE = wb.Criteria(max_compute_p99=None)  # timing belongs to the benchmarks, not to unit tests


def _v2(**_options: object):
    return make_backend("builtin-v2")


def test_walker_v2_stands():
    r = wb.run_scenario(wb.Scenario("stand", 4.0, criteria=NO_COMPUTE), _v2)
    assert r.fell_at is None
    assert r.drift < 0.05
    assert abs(r.heading) < 0.05


def test_walker_v2_walks_forward_at_the_sdk_limit():
    trace: list[dict[str, float]] = []
    r = wb.run_scenario(wb.Scenario("fwd", 3.0, commands=((0.0, 0.4, 0.0, 0.0),), criteria=NO_COMPUTE), _v2,
                        trace=trace)
    assert r.fell_at is None
    # measured 0.35 m of the 1.2 m commanded, heading 0.00 rad: the first 0.6-0.8 s shift the load and take a
    # zero-velocity first step, then the steps' velocity ramps by 0.05 m/s per step (docs/walker.md: v2 does not yet
    # track 0.4 m/s)
    assert r.along > 0.25
    assert abs(r.heading) < 0.2
    assert min(s["z"] for s in trace) > 0.55


def test_walker_v2_keeps_walking_forward_by_rolling_the_stance_sole_onto_its_toe():
    """10 s at vx 0.3 m/s: with the stance sole rolling onto its toe line (heel-off) the walk stays up; the same
    walker with its soles kept flat falls (the trailing ankle at its 0.35 rad dorsiflexion stop; measured at 7.5 s).
    (At the SDK's 0.4 m/s both fall: 8.0 s rolled, 5.7 s flat; docs/walker.md, "Trunk weight".)"""
    sc = wb.Scenario("fwd10", 10.0, commands=((0.0, 0.3, 0.0, 0.0),), criteria=NO_COMPUTE)
    pitches: list[float] = []
    r = wb.run_scenario(sc, _v2, on_tick=lambda t, be, plant: pitches.append(max(f.pitch for f in be.feet.values())))
    assert r.fell_at is None
    assert r.along > 2.0  # measured 2.63 m: the steps' velocity ramps by 0.05 m/s per step
    assert max(pitches) > 0.05, "the stance heels lifted"
    flat = wb.run_scenario(sc, lambda **_: WalkerV2(replace(WalkerConfig(), heel_off_gain=0.0)))
    assert flat.fell_at is not None


def test_walker_v2_walks_backward_at_the_sdk_limit_by_landing_on_its_toes():
    """8 s at vx -0.4 m/s: with the new sole landing on its toe (toe landing) the walk stays up (measured 3.18 m);
    the same walker landing flat falls (the heel takes the load, the ZMP on the heel line; measured at 4.4 s)."""
    sc = wb.Scenario("back8", 8.0, commands=((0.0, -0.4, 0.0, 0.0),), criteria=NO_COMPUTE)
    pitches: list[float] = []
    r = wb.run_scenario(sc, _v2, on_tick=lambda t, be, plant: pitches.append(max(f.pitch for f in be.feet.values())))
    assert r.fell_at is None
    assert r.along < -2.5
    assert max(pitches) > 0.05, "the landing soles were rolled onto their toes"
    flat = wb.run_scenario(sc, lambda **_: WalkerV2(replace(WalkerConfig(), toe_landing=False)))
    assert flat.fell_at is not None


def test_walker_v2_lockstep_runs_are_bit_identical():
    sc = wb.Scenario("det", 2.0, commands=((0.0, 0.2, 0.1, 0.3),), criteria=NO_COMPUTE)
    a: list[dict[str, float]] = []
    b: list[dict[str, float]] = []
    ra = wb.run_scenario(sc, _v2, trace=a, trace_every=1)
    rb = wb.run_scenario(sc, _v2, trace=b, trace_every=1)
    assert a == b
    assert (ra.along, ra.lateral, ra.heading, ra.fell_at) == (rb.along, rb.lateral, rb.heading, rb.fell_at)
