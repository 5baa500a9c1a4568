"""Scenario files: the format's validator, the shipped suites and the runner's use of boot states and modes."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
import pytest

from vasimov import joints
from vasimov.scenes import VIEWER_COURSES
from vasimov_edge.policy.registry import HoldPoseBackend
from vasimov_tools import scenarios as sc
from vasimov_tools import sequence_suite, viewer_suite
from vasimov_tools import walk_bench as wb


def _write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text), encoding="utf-8")
    return p


MINIMAL = "format: 1\nduration: 2.0\n"


# -- the shipped suites -----------------------------------------------------------------------------------------------
def test_shipped_suites_load_with_the_expected_members():
    assert {"standard", "goals", "viewer", "envelope"} <= set(sc.suite_names())
    viewer = sc.load_entries(["viewer"])
    assert len(viewer) == 39  # all of Menlo's viewer bench files
    assert [e.name for e in viewer if e.scenario is None] == []  # none skipped: friction overrides, course scenes
    sheet = joints.facts()["benchmarks_in_viewer"]["scenarios"]
    courses = {e.name: e.scenario.scene for e in viewer if e.name.startswith("viewer_terrain_")}
    assert len(courses) == len(sheet["terrain"]) == 7
    assert courses["viewer_terrain_slope_push"] == courses["viewer_terrain_slope_10deg"] == "viewer_slope_10deg"
    assert set(courses.values()) == set(VIEWER_COURSES.values())
    for e in viewer:
        e.scenario.build_scene()  # every scene and friction resolves
    assert len(sc.load_entries(["standard"])) == 13 and len(sc.load_entries(["goals"])) == 4


def test_the_envelope_suite_holds_the_issues_cases_and_targets():
    """Issue 20's envelope: the SDK limits one axis at a time and combined, command steps, standing pushes of 300 N
    from four sides and 250 N sideways while walking, slopes, stairs up and down, rough, obstacles, wet and ice."""
    env = {e.name: e.scenario for e in sc.load_entries(["envelope"])}
    assert all(s is not None for s in env.values())
    single = {n: s.commands[0][1:] for n, s in env.items() if n.startswith("envelope_sdk_")}
    assert sorted(single.values()) == sorted([(0.4, 0, 0), (-0.4, 0, 0), (0, 0.4, 0), (0, -0.4, 0), (0, 0, 0.8),
                                              (0, 0, -0.8)])
    for n, s in env.items():
        if n.startswith(("envelope_sdk_", "envelope_combined_", "envelope_command_steps")):
            assert (s.criteria.max_tracking_error, s.criteria.max_step_half_time, s.criteria.max_stop_time) == (
                0.1, 0.5, 1.0), n
            assert s.commands[-1][1:] == (0.0, 0.0, 0.0), n  # ends with a zero: the stop is scored
        assert s.criteria.max_compute_p99 == pytest.approx(3e-3), n
    standing = {tuple(p.force) for n, s in env.items() if n.startswith("envelope_push_standing_") for p in s.pushes}
    assert standing == {(300.0, 0.0, 0.0), (-300.0, 0.0, 0.0), (0.0, 300.0, 0.0), (0.0, -300.0, 0.0)}
    walking = [s for n, s in env.items() if n.startswith("envelope_push_walking_")]
    assert {(s.commands[0][1], abs(s.pushes[0].force[1]), s.pushes[0].duration) for s in walking} == {(0.3, 250.0,
                                                                                                        0.15)}
    scenes = {s.build_scene().name: s for s in env.values()}
    for name in ("slope_10_up", "slope_10_down", "slope_15_up", "slope_15_down", "stairs_10cm", "stairs_10cm_down",
                 "rough", "obstacles", "flat+ice"):
        assert scenes[name].commands[0][1:] == (0.2, 0.0, 0.0), name
    assert scenes["flat+mu0.3"].friction == 0.3 and scenes["flat+ice"].build_scene().friction.mu == 0.1


def test_viewer_files_are_the_fact_sheet_generated():
    """The shipped files are exactly what vasimov_tools.viewer_suite generates from the sheet (no hand edits)."""
    docs = viewer_suite.documents()
    shipped = sorted(viewer_suite.VIEWER_DIR.glob("*.yaml"))
    assert [p.name for p in shipped] == [n for n, _ in docs]
    for p, (_, text) in zip(shipped, docs, strict=True):
        assert p.read_text(encoding="utf-8") == text, p.name


def test_sequence_files_are_the_generated_ones_and_stay_in_the_sdk_envelope():
    """``sequences``: exactly what vasimov_tools.sequence_suite writes; axis files send one axis at a time at 0.5-1.0
    of its SDK limit (or zero), mixed files any mix inside the envelope."""
    docs = sequence_suite.documents()
    shipped = sorted(sequence_suite.SEQUENCES_DIR.glob("*.yaml"))
    assert [p.name for p in shipped] == [n for n, _ in docs]
    for p, (_, text) in zip(shipped, docs, strict=True):
        assert p.read_text(encoding="utf-8") == text, p.name
    entries = {e.name: e.scenario for e in sc.load_entries(["sequences"])}
    assert len(entries) == 48 and all(s is not None for s in entries.values())
    lim = np.array(wb.ENVELOPE)
    idle = 0
    for name, s in entries.items():
        v = np.array([c[1:] for c in s.commands])
        assert np.all(np.abs(v) <= lim + 1e-12), name
        if name.startswith("sequence_axis_"):
            assert s.duration == 120.0 and len(s.commands) == 20
            nonzero = np.count_nonzero(v, axis=1)
            assert np.all(nonzero <= 1), name
            idle += int(np.sum(nonzero == 0))
            frac = (np.abs(v) / lim)[nonzero == 1].max(axis=1)
            assert np.all((frac >= 0.5) & (frac <= 1.0)), name
        else:
            assert s.duration == 150.0 and len(s.commands) == 15
    assert 0.1 < idle / (36 * 20) < 0.3  # about a fifth of the holds are stops


@pytest.mark.parametrize("generator", [sequence_suite, viewer_suite])
def test_a_generator_rewrites_only_its_own_files_and_help_writes_nothing(generator, tmp_path, monkeypatch, capsys):
    """Pointed at a folder of the user's, a generator removes only stale files it wrote itself (its header line),
    never the user's own scenarios; ``--help`` prints usage instead of writing into a folder named ``--help``."""
    mine = tmp_path / "my_scenario.yaml"
    mine.write_text("format: 1\nname: mine\nduration: 1.0\ncommands: []\n", encoding="utf-8")
    header = generator.documents()[0][1].split("\n", 1)[0]
    stale = tmp_path / "zz_stale.yaml"
    stale.write_text(header + "\nformat: 1\n", encoding="utf-8")
    assert generator.main([str(tmp_path)]) == 0
    assert mine.exists() and not stale.exists()
    written = sorted(p.name for p in tmp_path.glob("*.yaml"))
    assert written == sorted([mine.name, *(n for n, _ in generator.documents())])
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        generator.main(["--help"])
    assert exc.value.code == 0 and "usage:" in capsys.readouterr().out
    assert not (tmp_path / "--help").exists()


def test_viewer_suite_keeps_the_sheets_profiles_forces_and_failure_criterion():
    vs = wb.viewer_scenarios()
    s = vs["viewer_locomotion_circle"]
    assert s.min_pelvis_height == 0.35
    assert s.max_gravity_z == pytest.approx(-math.cos(math.radians(78.5)))
    assert s.criteria == wb.Criteria(max_compute_p99=None)  # the fall rule only
    sustained = vs["viewer_push_sustained_groin_lateral"]
    assert [(p.t, p.force[1], p.duration) for p in sustained.pushes] == [
        (2.0, 110.0, 0.6), (10.0, 190.0, 0.6), (18.0, 260.0, 0.6), (26.0, 340.0, 0.6)]
    assert sustained.duration == 36.0
    wet = sc.load_entries([str(viewer_suite.VIEWER_DIR / "11_friction_wet_floor.yaml")])[0]
    assert wet.scenario.friction == 0.3 and wet.scenario.build_scene().friction.mu == 0.3


def test_standard_suite_is_the_issue_definition():
    """The files reproduce the scenarios the bench defined in Python before they moved to files."""
    s = wb.standard_scenarios()
    assert list(s)[:13] == ["balance_60s", "forward_0.1", "forward_0.2", "forward_0.3", "backward_0.2",
                            "strafe_left_0.2", "strafe_right_0.2", "turn_0.3", "step_in_place_60s", "random_20x3s",
                            "push_front_80N", "push_back_100N", "push_side_100N"]
    for v in (0.1, 0.2, 0.3):
        f = s[f"forward_{v:.1f}"]
        assert f.commands == ((0.0, v, 0.0, 0.0),) and f.duration == 10.0
        assert f.criteria == wb.Criteria(min_along=pytest.approx(8 * v), max_abs_lateral=0.3, max_abs_heading=0.2)
    assert s["strafe_right_0.2"].criteria == wb.Criteria(min_abs_lateral=1.5, lateral_sign=-1.0,
                                                         max_abs_heading=0.3)
    assert s["random_20x3s"].commands == wb.random_commands(seed=7)
    assert s["step_in_place_60s"].backend_options == (("step_in_place", True),)
    assert s["push_back_100N"].pushes == (wb.Push(2.0, (-100.0, 0.0, 0.0)),)
    assert s["goal_turn_0.5"].criteria == wb.Criteria(min_heading=4.0)
    assert all(x.min_pelvis_height is None and x.max_gravity_z is None for x in s.values())  # runner's fall rule


# -- validation -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        ("duration: 2\n", "format", "must be 1"),
        ("format: 2\nduration: 2\n", "format", "must be 1"),
        ("format: 1\n", "duration", "missing"),
        ("format: 1\nduration: -1\n", "duration", "> 0"),
        (MINIMAL + "durration: 3\n", "(top level)", "unknown key(s) ['durration']"),
        (MINIMAL + "seed: -1\n", "seed", ">= 0"),
        (MINIMAL + "boot: sitting\n", "boot", "balance, stand, limp"),
        (MINIMAL + "commands: [{t: 0, velocity: [0.1, 0]}]\n", "commands[0].velocity", "3 numbers"),
        (MINIMAL + "commands: [{t: 1, velocity: [0, 0, 0]}]\n", "commands[0].t", "t = 0"),
        (MINIMAL + "commands: [{t: 0, mode: balance}, {t: 0, mode: damp}]\n", "commands[1].t", "increase"),
        (MINIMAL + "commands: [{t: 0, mode: jump}]\n", "commands[0].mode", "stand, balance, damp"),
        (MINIMAL + "commands: [{t: 0, mode: damp, velocity: [0, 0, 0]}]\n", "commands[0]", "exactly one"),
        (MINIMAL + "commands: [{t: 0, mode: balance}, {t: 5, mode: damp}]\n", "commands[1].t", "<= 2"),
        (MINIMAL + "pushes: [{t: 1, force: [10, 0, 0], body: tail}]\n", "pushes[0].body", "unknown body 'tail'"),
        (MINIMAL + "pushes: [{t: 1, force: [5000, 0, 0]}]\n", "pushes[0]", "exceeds 2000"),
        (MINIMAL + "pushes: [{t: 1}]\n", "pushes[0].force", "missing"),
        (MINIMAL + "fall: {max_tilt_deg: nope}\n", "fall.max_tilt_deg", "finite number"),
        (MINIMAL + "pass: {min_drift: 1}\n", "pass", "unknown key(s) ['min_drift']"),
        (MINIMAL + "pass: {min_lateral: 0}\n", "pass.min_lateral", "non-zero"),
        (MINIMAL + "policy_options: {no_such_gain: 1}\n", "policy_options", "unknown key(s)"),
        (MINIMAL + "policy_options: {leg_kp: high}\n", "policy_options.leg_kp", "finite number"),
        (MINIMAL + "policy_options: {push_recovery: 0}\n", "policy_options.push_recovery", "true or false"),
        (MINIMAL + "name: 'has space'\n", "name", "letters"),
        ("format: 1\nduration: [\n", "(file)", "not valid YAML"),
    ],
)
def test_an_invalid_file_names_the_file_the_field_and_the_reason(tmp_path, text, field, reason):
    path = _write(tmp_path, text)
    with pytest.raises(sc.ScenarioError) as exc:
        sc.load_file(path)
    assert not isinstance(exc.value, sc.UnsupportedScenarioError)
    assert exc.value.field == field
    assert reason in exc.value.reason
    assert str(exc.value).startswith(f"{path}: {field}: ")


def test_a_policy_spec_names_the_builtin_controller_with_options():
    assert sc.parse_policy("builtin") == ("builtin", ())
    assert sc.parse_policy(" hf://Menlo/x@abc ") == ("hf://Menlo/x@abc", ())  # other specs pass through
    assert sc.parse_policy("builtin:leg_kp=60, swing_kp=60.5,push_recovery=false") == (
        "builtin", (("leg_kp", 60), ("swing_kp", 60.5), ("push_recovery", False)))
    # a tuple-valued setting takes a list: its commas stay inside the brackets
    assert sc.parse_policy("builtin:command_rate=[0.3, 0.3,1],leg_kp=60") == (
        "builtin", (("command_rate", (0.3, 0.3, 1.0)), ("leg_kp", 60)))
    for bad, field, says in [("builtin:leg_kp", "options", "KEY=VALUE"), ("builtin:", "options", "KEY=VALUE"),
                             ("builtin:command_rate=[0.3,0.3]", "options.command_rate", "list of 3 finite"),
                             ("builtin:command_rate=0.3", "options.command_rate", "list of 3 finite"),
                             ("builtin:command_rate=[0.3,true,1]", "options.command_rate", "list of 3 finite"),
                             ("builtin:gain=1", "options", "unknown key(s)"),
                             ("builtin:leg_kp=[1", "options.leg_kp", "not a value"),
                             ("builtin:leg_kp=.nan", "options.leg_kp", "finite number")]:
        with pytest.raises(sc.ScenarioError) as exc:
            sc.parse_policy(bad)
        assert (exc.value.field, says in exc.value.reason) == (field, True), (bad, str(exc.value))


def test_a_policy_spec_names_walker_v2_with_options():
    assert sc.parse_policy("builtin-v2") == ("builtin-v2", ())
    assert sc.parse_policy("builtin-v2:swing_orientation_weight=1,heel_off_gain=0,gravity_ff=false") == (
        "builtin-v2", (("swing_orientation_weight", 1), ("heel_off_gain", 0), ("gravity_ff", False)))
    assert sc.parse_policy("builtin-v2:accel=[1, 1,2]") == ("builtin-v2", (("accel", (1.0, 1.0, 2.0)),))
    for bad, field, says in [("builtin-v2:", "options", "builtin-v2:KEY=VALUE"),
                             ("builtin-v2:leg_kp=60", "options", "unknown key(s)"),  # builtin's, not v2's
                             ("builtin-v2:step_time=fast", "options.step_time", "finite number"),
                             ("builtin-v2:accel=[1,1]", "options.accel", "list of 3 finite")]:
        with pytest.raises(sc.ScenarioError) as exc:
            sc.parse_policy(bad)
        assert (exc.value.field, says in exc.value.reason) == (field, True), (bad, str(exc.value))


def test_a_walker_v2_spec_with_options_builds_walker_v2_with_that_config():
    pytest.importorskip("placo")
    from vasimov_tools.bench_run import policy_factory

    backend = policy_factory("builtin-v2:swing_orientation_weight=1.5,step_time=0.35")(leg_kp=60)
    assert type(backend).__name__ == "WalkerV2"
    assert (backend.cfg.swing_orientation_weight, backend.cfg.step_time) == (1.5, 0.35)
    assert policy_factory("builtin-v2")().cfg == type(backend.cfg)()  # no options: the defaults


@pytest.mark.parametrize(
    ("extra", "field", "says"),
    [
        ("faults: [{t: 1, alert: CAN_BUS_OFF}]\n", "faults", "fault injection"),
        ("link: {loss: 0.1}\n", "link", "link impairment"),
    ],
)
def test_reserved_fields_are_unsupported_not_invalid(tmp_path, extra, field, says):
    with pytest.raises(sc.UnsupportedScenarioError) as exc:
        sc.load_file(_write(tmp_path, MINIMAL + extra))
    assert exc.value.field == field and says in exc.value.reason
    assert sc.load_file(_write(tmp_path, MINIMAL + "scene: flat\nfaults: []\n", "ok.yaml"))[0].duration == 2.0


@pytest.mark.parametrize(("extra", "field", "says"), [
    ("scene: moon\n", "scene", "unknown scene 'moon'"),
    ("scene: terrain/lava.xml\n", "scene", "not one of Menlo's viewer terrain courses"),
    ("scene: flat+lava\n", "scene", "unknown friction override 'lava'"),
    ("friction: 0\n", "friction", "(0, 2]"),
    ("friction: .nan\n", "friction", "(0, 2]"),
])
def test_bad_scenes_and_frictions_are_errors_naming_the_field(tmp_path, extra, field, says):
    with pytest.raises(sc.ScenarioError) as exc:
        sc.load_file(_write(tmp_path, MINIMAL + extra))
    assert not isinstance(exc.value, sc.UnsupportedScenarioError)
    assert exc.value.field == field and says in exc.value.reason


def test_a_viewer_course_name_reads_as_the_scene_that_models_it(tmp_path):
    for text in ("terrain/rough.xml", "terrain/rough"):
        s, _ = sc.load_file(_write(tmp_path, MINIMAL + f"scene: {text}\n"))
        assert s.scene == "viewer_rough"


def test_a_scene_and_friction_reach_the_plant(tmp_path):
    s, _ = sc.load_file(_write(tmp_path, MINIMAL + "seed: 3\nscene: rough+wet\nfriction: 0.25\n"))
    scene = s.build_scene()
    assert (scene.base.name, scene.seed, scene.friction.mu) == ("rough", 3, 0.25)


def test_a_full_file_maps_onto_the_runner_scenario(tmp_path):
    s, policy = sc.load_file(_write(tmp_path, """\
        format: 1
        name: full
        description: every field
        seed: 4
        boot: stand
        settle: 0.5
        policy: hold
        duration: 6
        commands:
          - {t: 0, mode: balance}
          - {t: 1, velocity: [0.2, -0.1, 0.3]}
          - {t: 3, mode: damp}
          - {t: 4, mode: stand}
        pushes:
          - {t: 2, force: [0, 50, 0], body: waist_yaw_link, duration: 0.6}
        fall: {min_pelvis_height: 0.3, max_tilt_deg: 60}
        pass: {min_along: 0.1, min_lateral: -0.2, max_tracking_error: 0.5, max_compute_p99_ms: 3}
        """))
    assert policy == "hold"
    assert (s.name, s.seed, s.boot, s.settle_time, s.duration, s.note) == ("full", 4, "stand", 0.5, 6.0, "every field")
    assert s.commands == ((0.0, 0.0, 0.0, 0.0), (1.0, 0.2, -0.1, 0.3))
    assert s.modes == ((3.0, "damp"), (4.0, "stand"))
    assert s.pushes == (wb.Push(2.0, (0.0, 50.0, 0.0), 0.6, "waist_yaw_link"),)
    assert s.min_pelvis_height == 0.3 and s.max_gravity_z == pytest.approx(-0.5)
    assert s.criteria == wb.Criteria(min_along=0.1, min_abs_lateral=0.2, lateral_sign=-1.0, max_tracking_error=0.5,
                                     max_compute_p99=3e-3)
    assert [s.mode_at(t) for t in (0.5, 1.5, 3.0, 3.9, 4.5)] == [None, None, "damp", "damp", "stand"]
    np.testing.assert_allclose(s.command_at(3.5), (0.2, -0.1, 0.3))  # the velocity a later entry returns to


def test_suites_reject_unknown_items_and_duplicate_names(tmp_path):
    with pytest.raises(sc.ScenarioError, match="neither a scenario file"):
        sc.resolve(["no_such_suite"])
    _write(tmp_path, MINIMAL + "name: same\n", "a.yaml")
    _write(tmp_path, MINIMAL + "name: same\n", "b.yaml")
    with pytest.raises(sc.ScenarioError, match="also the name of"):
        sc.load_entries([str(tmp_path)])


# -- the runner honours what the format adds --------------------------------------------------------------------------
def _hold(**_: object) -> HoldPoseBackend:
    return HoldPoseBackend()


def test_damp_in_the_profile_drops_the_robot_and_balance_does_not():
    base = wb.Scenario("b", 2.0, criteria=wb.Criteria(max_compute_p99=None))
    damped = wb.Scenario("d", 2.0, modes=((0.2, "damp"),), criteria=wb.Criteria(max_compute_p99=None))
    assert wb.run_scenario(base, _hold).fell_at is None
    r = wb.run_scenario(damped, _hold)
    assert r.fell_at is not None and r.fell_at > 0.2


def test_limp_boot_leaves_the_robot_hanging_on_the_gantry():
    s = wb.Scenario("limp", 0.5, boot="limp", settle_time=0.2, criteria=wb.Criteria(max_compute_p99=None))
    trace: list[dict[str, float]] = []
    r = wb.run_scenario(s, _hold, trace=trace)
    assert r.fell_at is None and r.drift < 0.01
    assert trace and all(row["z"] > 0.62 for row in trace)  # held above standing height, feet off the floor
