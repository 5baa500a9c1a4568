"""The recovery chain in the bench and the closed loop: the scenario keys, the result keys, and the rule that the chain
reaches the robot only through the motor path (no simulator-state write, no gantry) while it runs."""

from __future__ import annotations

import pytest

from vasimov_plant.physics import PlantCore
from vasimov_tools import scenarios as sc
from vasimov_tools import walk_bench as wb
from vasimov_tools.closed_loop import ClosedLoop

DOC = {"format": 1, "boot": "lying_front", "recovery": True, "duration": 3.0,
       "commands": [{"t": 0.0, "velocity": [0.0, 0.0, 0.0]}],
       "pass": {"upright_at_end": True, "max_recovery_s": 15.0, "min_falls": 1}}


def test_scenario_keys_parse_and_bad_values_are_named() -> None:
    s, _ = sc.parse(DOC, "doc", "lying")
    assert s.boot == "lying_front" and s.recovery
    assert s.criteria.upright_at_end is True and s.criteria.max_recovery_s == 15.0 and s.criteria.min_falls == 1
    assert not sc.parse({**DOC, "recovery": False, "pass": {}}, "doc", "x")[0].recovery
    for bad, field in (({"recovery": "yes"}, "recovery"), ({"boot": "sitting"}, "boot"),
                       ({"pass": {"upright_at_end": 1}}, "pass.upright_at_end"),
                       ({"pass": {"min_falls": -1}}, "pass.min_falls")):
        with pytest.raises(sc.ScenarioError, match=field):
            sc.parse({**DOC, **bad}, "doc", "x")
    assert {"recovery_lying_front", "recovery_lying_back"} <= set(sc.load_suite("recovery"))


def test_check_with_recovery_judges_recoveries_not_the_fall() -> None:
    c = wb.Criteria(max_compute_p99=None, upright_at_end=True, max_recovery_s=10.0, min_falls=1)
    base = dict(name="x", passed=False, fell_at=0.1, along=0.0, lateral=0.0, drift=0.0, heading=0.0,
                min_pelvis_height=0.0, max_gravity_z=0.0, compute_p50_ms=0.0, compute_p99_ms=0.0, cpu_p50_ms=0.0,
                cpu_p99_ms=0.0, failures=[], sim_seconds=1.0, wall_seconds=1.0)
    ok = wb.Result(**base, falls=1, recoveries=1, recovery_s=[6.0], upright_at_end=True)
    assert wb.check(c, ok) == []
    slow = wb.Result(**base, falls=1, recoveries=1, recovery_s=[12.0], upright_at_end=True)
    assert wb.check(c, slow) == ["recovery 12.00 > 10.00 s"]
    down = wb.Result(**base, falls=2, recoveries=1, recovery_s=[6.0], upright_at_end=False)
    assert wb.check(c, down) == ["1 of 2 falls not recovered", "not upright at the end"]
    plain = wb.Result(**base)  # recovery off: a fall fails as before
    assert wb.check(wb.Criteria(max_compute_p99=None), plain) == ["fell at 0.10s"]


# PlantCore methods that write the simulator's state or move the gantry (set_gantry is checked by its arguments).
_WRITES = ("reset", "restart_clock", "apply_push", "set_force", "lose_motors", "freeze_imu", "offset_encoder",
           "inject_non_finite")


def test_a_lying_start_runs_the_chain_through_the_motor_path_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Boot face down with recovery: once the loop runs, the plant is only commanded (set_command) -- never reset,
    pushed, re-posed, or hooked to the gantry -- and the result counts the lying start as a fall."""
    running = {"on": False}
    violations: list[str] = []
    gantry_calls: list[tuple[bool, bool]] = []
    step_tick = ClosedLoop.step_tick

    def spy_tick(self: ClosedLoop) -> object:
        running["on"] = True
        return step_tick(self)

    monkeypatch.setattr(ClosedLoop, "step_tick", spy_tick)
    for name in _WRITES:
        orig = getattr(PlantCore, name)

        def spy(self: PlantCore, *a: object, _n: str = name, _o: object = orig, **k: object) -> object:
            if running["on"]:
                violations.append(_n)
            return _o(self, *a, **k)  # type: ignore[operator]

        monkeypatch.setattr(PlantCore, name, spy)
    set_gantry = PlantCore.set_gantry

    def spy_gantry(self: PlantCore, engaged: bool, lowering: bool = False) -> None:
        if running["on"]:
            gantry_calls.append((bool(engaged), bool(lowering)))
        set_gantry(self, engaged, lowering)

    monkeypatch.setattr(PlantCore, "set_gantry", spy_gantry)
    scenario, _ = sc.parse(DOC, "doc", "lying_front")
    ticks: list[float] = []
    r = wb.run_scenario(scenario, on_tick=lambda t, _b, _p: ticks.append(t))
    assert violations == [], violations
    assert gantry_calls and not any(e or lw for e, lw in gantry_calls)
    assert r.falls == 1 and r.upright_at_end is not None
    assert len(ticks) == round(3.0 / 0.02)  # a fall does not end a recovery scenario early


def test_the_flag_reaches_the_edge_from_the_launch_file_and_vasimov_up() -> None:
    from pathlib import Path

    from vasimov_tools import cli, launch_file

    launch = Path(__file__).resolve().parents[1] / "launch" / "bringup.launch.yaml"
    edge = next(n for n in launch_file.load(launch).nodes if n.name == "edge")
    assert edge.params["recovery"] is False  # default: the robot's fall latch
    edge = next(n for n in launch_file.load(launch, {"recovery": "true"}).nodes if n.name == "edge")
    assert edge.params["recovery"] is True
    assert cli.build_parser().parse_args(["up", "--recovery"]).recovery is True
    assert cli.build_parser().parse_args(["up"]).recovery is False


def test_a_knock_down_with_recovery_is_on_the_reports_time_line() -> None:
    """A fall with the chain on is recorded with its time and drawn on the report's time lines (issue 21: "the bench
    report shows the falls and recoveries on its time line")."""
    from vasimov_tools import bench_report, bench_run

    doc_in = {"format": 1, "recovery": True, "duration": 3.0,
              "commands": [{"t": 0.0, "velocity": [0.0, 0.0, 0.0]}],
              "pushes": [{"t": 0.5, "body": "pelvis_link", "force": [250.0, 0.0, 0.0], "duration": 0.15}]}
    scenario, _ = sc.parse(doc_in, "doc", "knock_down")
    doc = bench_run.run_one({"scenario": scenario, "source": "test", "policy": bench_run.DEFAULT_POLICY,
                             "model_sha256": "-", "code_version": "-"})
    o = doc["outcome"]
    assert o["falls"] == 1 and len(o["fall_times"]) == 1
    assert 0.5 < o["fall_times"][0] < 3.0  # after the push
    assert doc["trace"][-1]["t"] >= 2.9  # with the chain on a fall does not end the scenario
    ev = bench_report.events(doc)
    # the chain's trip and the bench's fall rule (tilt or pelvis height), each on the time line
    assert (o["fall_times"][0], bench_report.FALL_COLOUR, f"down at {o['fall_times'][0]:.2f} s (recovery chain)") in ev
    assert (o["fell_at"], bench_report.FALL_COLOUR, f"fell at {o['fell_at']:.2f} s") in ev and len(ev) == 2
    page = bench_report.render([doc])
    assert page.count('<line class="fall"') == 2 * 4  # vx, vy, yaw rate and tilt plots
    # a return upright is drawn too, labelled with how long it took
    up = {**doc, "outcome": {**o, "recovery_times": [2.5], "recovery_s": [1.2]}}
    assert (2.5, bench_report.UP_COLOUR, "upright again at 2.50 s, 1.2 s after the fall") in bench_report.events(up)
    assert bench_report.render([up]).count('<line class="recovery"') == 4
