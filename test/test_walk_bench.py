"""The walking bench itself: scenario tables, scoring rules and the lockstep runner (with a trivial backend).

The runner is exercised with the hold-pose backend so these tests pin the bench's own behaviour (settling, scoring,
determinism) independently of how well any controller walks.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, replace

import numpy as np
import pytest

from vasimov_edge.policy.registry import HoldPoseBackend
from vasimov_tools import walk_bench as wb


def _result(**kw: object) -> wb.Result:
    base = dict(
        name="x",
        passed=False,
        fell_at=None,
        along=0.0,
        lateral=0.0,
        drift=0.0,
        heading=0.0,
        min_pelvis_height=0.6,
        max_gravity_z=-0.99,
        compute_p50_ms=0.1,
        compute_p99_ms=0.2,
        cpu_p50_ms=0.1,
        cpu_p99_ms=0.2,
        failures=[],
        sim_seconds=1.0,
        wall_seconds=1.0,
    )
    base.update(kw)
    return wb.Result(**base)  # type: ignore[arg-type]


def test_standard_scenarios_cover_the_issue_requirements():
    sc = wb.standard_scenarios()
    required = {
        "balance_60s", "forward_0.1", "forward_0.2", "forward_0.3", "backward_0.2", "strafe_left_0.2",
        "strafe_right_0.2", "turn_0.3", "step_in_place_60s", "random_20x3s", "push_front_80N", "push_back_100N",
        "push_side_100N",
    }
    assert required <= set(sc)
    assert sc["forward_0.3"].criteria.min_along == pytest.approx(2.4)
    assert sc["forward_0.1"].criteria.min_along == pytest.approx(0.8)
    assert sc["backward_0.2"].criteria.min_along == pytest.approx(-1.6)
    assert sc["balance_60s"].criteria.max_drift == pytest.approx(0.10)
    assert sc["push_front_80N"].pushes[0].force == (80.0, 0.0, 0.0)
    assert all(s.criteria.max_compute_p99 == pytest.approx(2e-3) for s in sc.values())


@pytest.mark.parametrize(
    ("t", "expected"),
    [(0.0, (0.0, 0.0, 0.0)), (0.99, (0.0, 0.0, 0.0)), (1.0, (0.3, 0.0, 0.0)), (5.0, (0.0, 0.1, -0.2))],
)
def test_command_is_piecewise_constant(t, expected):
    s = wb.Scenario("c", 6.0, ((0.0, 0.0, 0.0, 0.0), (1.0, 0.3, 0.0, 0.0), (4.0, 0.0, 0.1, -0.2)))
    np.testing.assert_allclose(s.command_at(t), expected)


def test_random_commands_are_seeded_and_inside_the_envelope():
    a = wb.random_commands(seed=3)
    assert a == wb.random_commands(seed=3)
    assert a != wb.random_commands(seed=4)
    assert len(a) == 20 and a[0][0] == 0.0 and a[-1][0] == pytest.approx(57.0)
    cmds = np.array([c[1:] for c in a])
    assert np.all(np.abs(cmds) <= np.array(wb.ENVELOPE) + 1e-12)


@pytest.mark.parametrize(
    ("criteria", "result", "n_fail"),
    [
        (wb.Criteria(min_along=2.4), _result(along=2.5), 0),
        (wb.Criteria(min_along=2.4), _result(along=2.3), 1),
        (wb.Criteria(min_along=-1.6), _result(along=-1.7), 0),
        (wb.Criteria(min_along=-1.6), _result(along=-1.5), 1),
        (wb.Criteria(max_abs_lateral=0.3), _result(lateral=-0.31), 1),
        (wb.Criteria(min_abs_lateral=1.5, lateral_sign=-1.0), _result(lateral=-1.6), 0),
        (wb.Criteria(min_abs_lateral=1.5, lateral_sign=-1.0), _result(lateral=1.6), 1),
        (wb.Criteria(min_heading=2.4), _result(heading=2.5), 0),
        (wb.Criteria(max_drift=0.1), _result(drift=0.11), 1),
        (wb.Criteria(), _result(fell_at=3.2), 1),
        (wb.Criteria(), _result(cpu_p99_ms=2.5), 1),
        (wb.Criteria(), _result(compute_p99_ms=40.0), 0),  # wall-clock tail = preemption, reported only
        (wb.Criteria(max_compute_p99=None), _result(cpu_p99_ms=2.5), 0),
    ],
)
def test_check_names_each_missed_criterion(criteria, result, n_fail):
    assert len(wb.check(criteria, result)) == n_fail


def _hold_pose(**_: object) -> HoldPoseBackend:
    return HoldPoseBackend()


def test_runner_settles_the_robot_and_scores_a_hold_pose_backend():
    s = wb.Scenario("hold", 1.0, criteria=wb.Criteria(max_drift=0.05, max_compute_p99=None))
    r = wb.run_scenario(s, _hold_pose)
    assert r.fell_at is None and r.passed, r.failures
    assert r.sim_seconds == pytest.approx(1.0)
    assert 0.58 < r.min_pelvis_height < 0.63
    assert r.max_gravity_z < -0.99
    json.dumps(asdict(r))  # the JSON line the CLI prints must serialise


def test_a_command_beyond_the_walkers_envelope_is_named_in_the_tracking_failure():
    """vx 0.4 (the SDK's limit) for 1.5 of 2 s: the built-in walker walks 0.3, so the tracking failure says the
    command was limited on ~3/4 of its ticks; a backend that reports nothing (hold) gets no such figure."""
    s = wb.Scenario("fast", 2.0, ((0.0, 0.0, 0.0, 0.0), (0.5, 0.4, 0.0, 0.0)),
                    criteria=wb.Criteria(max_tracking_error=0.01, max_compute_p99=None))
    r = wb.run_scenario(s, wb.default_backend_factory)
    assert r.command_limited_share == pytest.approx(0.75, abs=0.02)  # the command reaches it a tick late
    said = f"(the walker walked a smaller command on {100 * r.command_limited_share:.0f} % of its ticks)"
    assert any(f.startswith("tracking error") and f.endswith(said) for f in r.failures), r.failures
    assert wb.run_scenario(s, _hold_pose).command_limited_share is None


def test_runner_is_deterministic():
    s = wb.Scenario("det", 0.6, pushes=(wb.Push(0.2, (40.0, 0.0, 0.0)),), criteria=wb.Criteria(max_compute_p99=None))
    a = wb.run_scenario(s, _hold_pose)
    b = wb.run_scenario(s, _hold_pose)
    assert (a.along, a.lateral, a.heading, a.min_pelvis_height) == (b.along, b.lateral, b.heading, b.min_pelvis_height)


def test_a_push_moves_the_robot_and_a_fall_is_detected():
    quiet = wb.run_scenario(wb.Scenario("q", 1.0, criteria=wb.Criteria(max_compute_p99=None)), _hold_pose)
    shove = replace(wb.standard_scenarios()["push_front_80N"], duration=1.0, pushes=(wb.Push(0.1, (500.0, 0.0, 0.0)),))
    r = wb.run_scenario(shove, _hold_pose)
    assert r.fell_at is not None and not r.passed
    assert r.along > quiet.along + 0.05
    assert any("fell" in f for f in r.failures)
    assert math.isfinite(r.heading)


def test_table_lists_every_result():
    text = wb.format_table([_result(name="one", passed=True), _result(name="two", fell_at=1.0, failures=["fell"])])
    assert "one" in text and "two" in text and "NO" in text


def test_cli_rejects_unknown_scenarios(capsys):
    with pytest.raises(SystemExit):
        wb.main(["no_such_scenario"])
    assert "valid" in capsys.readouterr().err


# -- Menlo's viewer bench as goal scenarios ---------------------------------------------------------------------------
def test_viewer_scenarios_follow_the_fact_sheet():
    from vasimov import joints

    sheet = joints.facts()["benchmarks_in_viewer"]
    vs = wb.viewer_scenarios()
    expected = sum(len(sheet["scenarios"][g]) for g in wb.VIEWER_SETS)
    assert len(vs) == expected and all(n.startswith("viewer_") for n in vs)
    assert not set(vs) & set(wb.standard_scenarios())
    s = vs["viewer_locomotion_circle"]
    assert s.min_pelvis_height == 0.35
    assert s.max_gravity_z == pytest.approx(-math.cos(math.radians(78.5)))
    assert s.pushes == (wb.Push(6.5, (0.0, 200.0, 0.0), 0.15),)
    slow, medium = vs["viewer_locomotion_square_slow"], vs["viewer_locomotion_square_medium"]
    assert [c[0] for c in medium.commands] == [c[0] for c in slow.commands]  # same timing
    assert max(c[1] for c in medium.commands) == 0.6 and max(c[1] for c in slow.commands) == 0.3
    push = vs["viewer_push_walking_shoulder_r_lateral"]
    assert push.commands == ((0.0, 0.6, 0.0, 0.0),)
    assert [(p.t, p.force, p.body) for p in push.pushes] == [
        (2.0, (0.0, -150.0, 0.0), "right_shoulder_pitch_link"), (8.0, (0.0, -225.0, 0.0), "right_shoulder_pitch_link")]


def test_a_scenarios_own_fall_criterion_is_applied():
    """A pelvis floor above the standing height must count as a fall at the first tick."""
    s = wb.Scenario("floor_too_high", 1.0, min_pelvis_height=0.7, criteria=wb.Criteria(max_compute_p99=None))
    r = wb.run_scenario(s)
    assert r.fell_at == pytest.approx(wb.CONTROL_DT) and not r.passed


def test_cli_passes_options_to_the_bench(capsys):
    """`vasimov bench walk --policy hold NAME` reaches the bench's own parser (options first included)."""
    from vasimov_tools import cli

    code = cli.main(["bench", "walk", "--policy", "hold", "push_side_100N"])
    out = capsys.readouterr().out
    assert code in (0, 1)
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [r["name"] for r in rows] == ["push_side_100N"]
    with pytest.raises(SystemExit) as exc:
        cli.main(["bench", "walk", "--set", "nonsense"])
    assert exc.value.code == 2


@pytest.mark.parametrize(("times", "fell_at", "n"), [
    ((2.0, 8.0), None, 2),  # stood through both tiers
    ((2.0, 8.0), 9.1, 1),  # fell after the second push started: the first was survived
    ((2.0, 8.0), 2.4, 0),  # fell from the first push
    ((8.0, 2.0), 8.0, 0),  # order does not matter; falling as the second starts is not past it
    ((), 3.0, 0),
    ((), None, 0),
    ((2.0, 10.0, 18.0, 26.0), 19.0, 2),  # the sustained files' four pushes
])
def test_pushes_survived_counts_the_pushes_stood_through(times, fell_at, n):
    assert wb.pushes_survived(times, fell_at) == n


def test_without_scene_each_scenario_keeps_its_own_scene():
    """`vasimov bench walk --set viewer` ran the viewer's friction files on the default floor (the flat scene was
    always passed); without --scene the file's own scene and friction apply, as in `vasimov bench run`."""
    from vasimov.scenes import parse_scene

    assert wb.scene_override("", parse_scene("")) is None
    ice = parse_scene("flat+ice")
    assert wb.scene_override("flat+ice", ice) is ice
