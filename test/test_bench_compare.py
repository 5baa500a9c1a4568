"""`vasimov bench compare A B`: verdicts per scenario and the CI exit status, on hand-made results (every rule) and
on real runs of the built-in controller against a deliberately weakened one."""

from __future__ import annotations

import copy
import json
import textwrap
from pathlib import Path

import pytest

from vasimov_tools import bench_compare as bc
from vasimov_tools import bench_run, cli


# -- the rules, on hand-made result documents -------------------------------------------------------------------------
def _doc(name: str = "s", status: str = "passed", fell_at: float | None = None, tracking: float = 0.05,
         gz: float = -0.99, drift: float = 0.02, moving: bool = True, half: float | None = 0.5,
         stop: float | None = 0.6, pushes: int | None = None) -> dict:
    v = 0.2 if moving else 0.0
    trace = [{"t": 0.1 * k, "x": 0.02 * k, "y": 0.0, "heading": 0.0, "cmd_vx": v, "cmd_vy": 0.0, "cmd_wz": 0.0,
              "vx": v, "vy": 0.0, "wz": 0.0, "tilt_deg": 3.0, "z": 0.6} for k in range(11)]
    return {"format": 1, "scenario": name, "status": status, "seed": 0, "model_sha256": "m", "duration": 1.0,
            "fall": {"min_pelvis_height": 0.45, "max_tilt_deg": 36.9}, "pushes": [], "modes": [], "trace": trace,
            "outcome": {"fell_at": fell_at, "along": 0.2, "lateral": 0.0, "drift": drift, "heading": 0.0,
                        "min_pelvis_height": 0.6, "max_gravity_z": gz, "tracking_error": tracking,
                        "yaw_tracking_error": 0.01, "step_half_time": half, "stop_time": stop,
                        **({} if pushes is None else {"pushes_survived": pushes}),
                        "failures": [] if status == "passed" else ["x"]}}


TOL = bc.Tolerances()


@pytest.mark.parametrize(("a", "b", "verdict"), [
    (_doc(), _doc(tracking=0.055), bc.SAME),  # within the tracking tolerance
    (_doc(), _doc(tracking=0.08), bc.WORSE),
    (_doc(), _doc(tracking=0.02), bc.BETTER),
    (_doc(), _doc(status="failed", fell_at=0.5), bc.WORSE),
    (_doc(status="failed", fell_at=0.5), _doc(), bc.BETTER),
    (_doc(status="failed", fell_at=0.5), _doc(status="failed", fell_at=0.9), bc.BETTER),  # falls later
    (_doc(status="failed", fell_at=0.9), _doc(status="failed", fell_at=0.5), bc.WORSE),
    (_doc(), _doc(gz=-0.9), bc.WORSE),  # peak tilt 8.1 -> 25.8 deg
    (_doc(tracking=0.02), _doc(tracking=0.08, gz=-0.999), bc.WORSE),  # one worse metric makes it worse
    (_doc(moving=False), _doc(moving=False, drift=0.2), bc.WORSE),  # drift counts when nothing is commanded...
    (_doc(), _doc(drift=0.2), bc.SAME),  # ...not while walking
    (_doc(), _doc(half=0.55), bc.SAME),  # response times within 0.1 s are noise
    (_doc(), _doc(half=0.9), bc.WORSE),  # slower to half of a commanded change
    (_doc(), _doc(stop=0.2), bc.BETTER),  # stops sooner after a zero
    (_doc(), _doc(half=None, stop=None), bc.SAME),  # not measured in one run: not judged
    (_doc(status="failed", fell_at=0.9, pushes=1), _doc(status="failed", fell_at=0.9, pushes=2), bc.BETTER),
    (_doc(pushes=2), _doc(pushes=1), bc.WORSE),  # one viewer push tier fewer
    (_doc(), _doc(pushes=1), bc.SAME),  # older results without the key: not judged
    # only one run fell: the fall decides, whatever the other metrics (scored over different stretches) say
    (_doc(status="failed", fell_at=0.5, half=0.5), _doc(half=0.9, tracking=0.08), bc.BETTER),
    (_doc(half=0.9, tracking=0.08), _doc(status="failed", fell_at=0.5, half=0.5, tracking=0.02), bc.WORSE),
])
def test_verdict_rules(a, b, verdict):
    c = bc.judge("s", a, b, TOL)
    assert c.verdict == verdict, c.reasons
    assert bool(c.reasons) == (verdict != bc.SAME)


def test_missing_errored_and_new_scenarios():
    assert bc.judge("s", _doc(), None, TOL).verdict == bc.MISSING
    err = {"format": 1, "scenario": "s", "status": "error", "error": "RuntimeError: boom"}
    c = bc.judge("s", _doc(), err, TOL)
    assert c.verdict == bc.WORSE and "boom" in c.reasons[0]
    assert bc.judge("s", None, _doc(), TOL).verdict == bc.NEW
    assert bc.judge("s", err, _doc(), TOL).verdict == bc.NEW
    skipped = {"format": 1, "scenario": "s", "status": "skipped", "reason": "terrain"}
    assert bc.judge("s", skipped, skipped, TOL).verdict == bc.NOT_RUN
    assert not bc.regressed([bc.judge("s", None, _doc(), TOL), bc.judge("s", skipped, skipped, TOL)])


def test_unlike_runs_are_noted():
    b = _doc()
    b["seed"] = 7
    c = bc.judge("s", _doc(), b, TOL)
    assert c.verdict == bc.SAME and "seed differs" in c.notes[0]


def _write(folder: Path, docs: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for d in docs:
        (folder / f"{d['scenario']}.json").write_text(json.dumps(d), encoding="utf-8")
    return folder


def test_cli_exit_status_and_reports(tmp_path, capsys):
    a = _write(tmp_path / "a", [_doc("walk"), _doc("stand", moving=False)])
    b = _write(tmp_path / "b", [_doc("walk", status="failed", fell_at=0.4), _doc("stand", moving=False)])
    assert cli.main(["bench", "compare", str(a), str(a), "--out", str(tmp_path / "same")]) == 0
    out = capsys.readouterr().out
    assert "2 scenarios: 2 same" in out
    assert cli.main(["bench", "compare", str(a), str(b)]) == 1
    cap = capsys.readouterr()
    assert "walk" in cap.err and "regresses in 1 scenario" in cap.err
    row = next(line for line in cap.out.splitlines() if line.startswith("walk"))
    assert " worse " in row and "fell at 0.40 s" in row
    page = (b / "compare.html").read_text()
    assert page.count("<svg") == 10 and "#e16f24" in page  # both runs' plots, B's line drawn over A's
    # a looser tolerance cannot hide a fall; usage errors exit 2
    assert bc.main([str(a), str(b), "--tol-tracking-error", "1", "--no-report"]) == 1
    assert bc.main([str(a), str(tmp_path / "nowhere")]) == 2
    assert bc.main([str(a), str(b), "--tol-drift", "-1"]) == 2
    (tmp_path / "empty").mkdir()
    assert bc.main([str(tmp_path / "empty"), str(b)]) == 2
    assert "no bench results" in capsys.readouterr().err


def test_report_keeps_one_run_pages_unchanged():
    """The run report draws through the same plot functions; without an overlay nothing of B appears."""
    from vasimov_tools import bench_report

    page = bench_report.render([_doc("walk")])
    assert page.count("<svg") == 5 and "#e16f24" not in page
    over = bench_report.scenario_plots(_doc("walk"), overlay=[(copy.deepcopy(_doc("walk")), "#e16f24")])
    assert len(over) == 5 and all("#e16f24" in svg for svg in over)


# -- real runs: the built-in controller against a weakened one --------------------------------------------------------
SUITE = {
    "push.yaml": """\
        format: 1
        name: push_front
        duration: 2.5
        pushes:
          - {t: 0.5, force: [80, 0, 0], duration: 0.15}
        """,
    "walk.yaml": """\
        format: 1
        name: walk_0.2
        duration: 3.0
        commands:
          - {t: 0, velocity: [0.2, 0, 0]}
        """,
}
# the built-in controller with its leg gains cut: the stance sags and the push is not recovered
WEAK = "policy_options: {leg_kp: 60.0, swing_kp: 60.0, push_recovery: false}\n"


def _suite(folder: Path, extra: str = "") -> Path:
    folder.mkdir()
    for name, text in SUITE.items():
        (folder / name).write_text(textwrap.dedent(text) + extra, encoding="utf-8")
    return folder


def test_weakened_controller_is_flagged(tmp_path, capsys):
    ref = _suite(tmp_path / "ref")
    weak = _suite(tmp_path / "weak", WEAK)
    assert bench_run.main([str(ref), "--out", str(tmp_path / "A"), "--workers", "2", "--no-report"]) == 0
    bench_run.main([str(weak), "--out", str(tmp_path / "B"), "--workers", "2", "--no-report"])
    capsys.readouterr()
    assert cli.main(["bench", "compare", str(tmp_path / "A"), str(tmp_path / "A"), "--no-report"]) == 0
    assert "2 same" in capsys.readouterr().out
    assert cli.main(["bench", "compare", str(tmp_path / "A"), str(tmp_path / "B")]) == 1
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines()[2:-2]}
    assert set(rows) == {"push_front", "walk_0.2"}, out
    assert all(" worse " in r for r in rows.values()), out
    page = (tmp_path / "B" / "compare.html").read_text()
    assert page.count("<svg") == 10


WEAK_SPEC = "builtin:leg_kp=60,swing_kp=60,push_recovery=false"  # WEAK, as a policy spec


def test_policy_twice_runs_the_suite_per_policy_and_flags_the_weakened_one(tmp_path, capsys):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "push.yaml").write_text(textwrap.dedent(SUITE["push.yaml"]), encoding="utf-8")
    out = tmp_path / "cmp"
    (out / "A").mkdir(parents=True)
    (out / "A" / "old.json").write_text(json.dumps(_doc("old")))  # an earlier run's result: replaced
    args = ["bench", "compare", str(suite), "--out", str(out), "--workers", "1"]
    assert cli.main([*args, "--policy", "builtin", "--policy", WEAK_SPEC]) == 1
    cap = capsys.readouterr()
    rows = [line for line in cap.out.splitlines() if line.startswith("push_front")]
    assert len(rows) == 3  # run A's table, run B's, the comparison's
    assert " worse " in rows[-1] and "regresses in 1 scenario(s): push_front" in cap.err
    a, b = bc.load_results(out / "A"), bc.load_results(out / "B")
    assert set(a) == set(b) == {"push_front"}
    assert (a["push_front"]["policy"], b["push_front"]["policy"]) == ("builtin", WEAK_SPEC)
    page = (out / "compare.html").read_text()
    assert page.count("<svg") == 5 and WEAK_SPEC in page and (out / "B" / "report.html").exists()
    # the same policy twice: the same results, no regression
    assert cli.main([*args, "--policy", "builtin", "--policy", "builtin", "--no-report"]) == 0
    assert "1 scenarios: 1 same" in capsys.readouterr().out


def test_policy_mode_usage_errors(tmp_path, capsys):
    out = tmp_path / "cmp"
    assert bc.main(["suite", "--policy", "builtin", "--out", str(out)]) == 2
    assert "twice" in capsys.readouterr().err
    assert bc.main(["standard", "--policy", "builtin", "--policy", "builtin:leg_kp=soft", "--out", str(out)]) == 2
    assert "builtin:leg_kp=soft" in capsys.readouterr().err and not out.exists()  # checked before any run
    assert bc.main(["no_such_suite", "--policy", "builtin", "--policy", "hold", "--out", str(out)]) == 2
    assert bc.main([str(tmp_path), str(tmp_path), "--workers", "2"]) == 2
    assert "only go with --policy" in capsys.readouterr().err
