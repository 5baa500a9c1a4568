"""``vasimov bench compare A B``: is run B (a policy, a code change) better or worse than run A, scenario by scenario?

A and B are result folders of ``vasimov bench run`` (``<scenario>.json`` each, format in ``docs/scenarios.md``).
Scenarios are matched by name. For each, the differences that matter and a verdict, judged in this order:

* **status**: passed -> failed (or error) is *worse*, failed -> passed *better*;
* **fall**: standing -> fallen is *worse* (and the reverse *better*); both fallen: falling later by more than the
  ``fall_time`` tolerance is *better*, earlier *worse*. When only one of the two runs fell, the fall decides and the
  metrics below are not compared: the run that fell was scored up to its fall, the other over the whole scenario
  (later commands, later changes), so their tracking, response and tilt figures are of different stretches;
* **tracking error** (planar and yaw, lower is better), **step half time** and **stop time** (how fast the body answers
  a change of command and stops after a zero, :mod:`vasimov_tools.tracking`; lower is better), **peak tilt** (from
  ``outcome.max_gravity_z``, lower is better: margin to the fall rule), **pushes survived** (the viewer's push
  tiers, higher is better, any difference counts) and, for scenarios that command no motion at
  all, **drift** (lower is better): a difference beyond its tolerance counts, a smaller one is noise.

A scenario is *worse* when any of these is worse, else *better* when any is better, else *same*. Along/lateral/
heading and the minimum pelvis height are shown as differences but judged only through the scenario's own pass
criteria (the status), because whether "further" is better depends on the command. Timing (``timing``) is not
compared: it is not reproducible. A scenario that ran in A but has no result in B (or errored/was skipped only in B)
is *missing*/*worse*; one only in B is *new*.

``vasimov bench compare --policy A --policy B SUITE|FILE... [--out DIR] [--workers N] [--ray ADDRESS]`` runs the
suite twice first, once per policy spec (``builtin:KEY=VALUE,...`` names a variant of the built-in controller,
``builtin-v2:KEY=VALUE,...`` one of walker v2), through
``vasimov bench run`` into ``DIR/A`` and ``DIR/B`` (default ``DIR``: ``bench_compare``; earlier results there are
replaced), then compares those two folders as above, ``compare.html`` in ``DIR``.

Exit status (for CI): 0 when no scenario is worse or missing, 1 when one is, 2 on a usage error (a folder without
results, a bad policy spec or suite). Outputs: a text table on stdout and, unless ``--no-report``,
``--out``/compare.html: the table and, per scenario, A and B overlaid in the plots of the run report
(:mod:`vasimov_tools.bench_report` draws both).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from vasimov_tools import bench_report as br

WORSE, BETTER, SAME, MISSING, NEW, NOT_RUN = "worse", "better", "same", "missing", "new", "not run"
REGRESSIONS = (WORSE, MISSING)
VERDICT_COLOUR = {WORSE: "#cf222e", MISSING: "#cf222e", BETTER: "#1a7f37", SAME: "#57606a", NEW: "#6e7781",
                  NOT_RUN: "#6e7781"}
RUN_COLOURS = ("#0969da", "#e16f24")  # A blue (the run report's colour), B orange


@dataclass(frozen=True)
class Tolerances:
    """Differences at or below these are "same". Defaults: above the run-to-run spread of a different start (a
    settle time 0.04 s longer moves a 10 s walk's tracking error by ~0.005 m/s), below what a user would call a
    change."""

    fall_time: float = 0.2  # s
    tracking_error: float = 0.01  # m/s
    yaw_tracking_error: float = 0.02  # rad/s
    tilt_deg: float = 2.0  # deg of peak torso tilt
    drift: float = 0.05  # m, scenarios without a motion command only
    response_time: float = 0.1  # s: step half time and stop time (vasimov_tools.tracking), five control ticks


@dataclass
class Comparison:
    scenario: str
    verdict: str
    reasons: list[str] = field(default_factory=list)
    a: dict[str, Any] | None = None
    b: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)  # like-for-like warnings (seed, model differ)


# -- loading ----------------------------------------------------------------------------------------------------------
class CompareError(ValueError):
    """A result folder that cannot be compared; the message names it."""


def load_results(folder: Path | str) -> dict[str, dict[str, Any]]:
    """``scenario name -> result document`` of every ``*.json`` result in ``folder`` (other JSON files ignored)."""
    path = Path(folder)
    if not path.is_dir():
        raise CompareError(f"{path}: not a folder (give two result folders of `vasimov bench run`)")
    docs: dict[str, dict[str, Any]] = {}
    for f in sorted(path.glob("*.json")):
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CompareError(f"{f}: unreadable result ({exc})") from exc
        if isinstance(doc, dict) and "scenario" in doc and "status" in doc and "format" in doc:
            docs[str(doc["scenario"])] = doc
    if not docs:
        raise CompareError(f"{path}: no bench results (*.json from `vasimov bench run`)")
    return docs


# -- judging ----------------------------------------------------------------------------------------------------------
def tilt_deg(outcome: dict[str, Any]) -> float:
    """Peak torso tilt from upright (deg) from the run's largest projected-gravity z."""
    gz = outcome.get("max_gravity_z")
    return math.nan if gz is None else math.degrees(math.acos(max(-1.0, min(1.0, -float(gz)))))


def commands_motion(doc: dict[str, Any]) -> bool:
    """Whether the scenario ever commands a velocity (its trace's commanded vx/vy/wz)."""
    return any(abs(s.get(k, 0.0)) > 1e-12 for s in doc.get("trace", []) for k in ("cmd_vx", "cmd_vy", "cmd_wz"))


def _lower_is_better(name: str, a: float | None, b: float | None, tol: float, unit: str) -> tuple[int, str] | None:
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
        return None
    d = b - a
    if abs(d) <= tol:
        return None
    return (-1 if d > 0 else 1), f"{name} {a:.3f} -> {b:.3f} {unit}"


def judge(name: str, a: dict[str, Any] | None, b: dict[str, Any] | None, tol: Tolerances) -> Comparison:
    """The verdict for one scenario (``a``/``b``: its result documents, ``None`` when that run has none)."""
    if a is None or a.get("status") not in ("passed", "failed"):
        if b is None:
            return Comparison(name, NOT_RUN, a=a, b=b)
        why = "not in A" if a is None else f"{a['status']} in A"
        return Comparison(name, NEW if b.get("status") in ("passed", "failed") else NOT_RUN, [why], a, b)
    if b is None:
        return Comparison(name, MISSING, ["no result in B"], a, b)
    if b.get("status") not in ("passed", "failed"):
        return Comparison(name, WORSE, [f"{b['status']} in B: {b.get('error') or b.get('reason', '')}"], a, b)
    c = Comparison(name, SAME, a=a, b=b)
    for key in ("seed", "model_sha256"):
        if a.get(key) != b.get(key):
            c.notes.append(f"{key} differs ({str(a.get(key))[:12]} / {str(b.get(key))[:12]}): not like for like")
    signs: list[int] = []

    def note(sign: int, text: str) -> None:
        signs.append(sign)
        c.reasons.append(("worse: " if sign < 0 else "better: ") + text)

    if a["status"] != b["status"]:
        note(1 if b["status"] == "passed" else -1, f"{a['status']} -> {b['status']}")
    oa, ob = a["outcome"], b["outcome"]
    fa, fb = oa.get("fell_at"), ob.get("fell_at")
    if fa is None and fb is not None:
        note(-1, f"fell at {fb:.2f} s")
    elif fa is not None and fb is None:
        note(1, f"no longer falls (A fell at {fa:.2f} s)")
    elif fa is not None and fb is not None and abs(fb - fa) > tol.fall_time:
        note(1 if fb > fa else -1, f"falls at {fb:.2f} s instead of {fa:.2f} s")
    if (fa is None) != (fb is None):  # the fall decides: the two runs' metrics cover different stretches
        c.notes.append("other metrics not compared: only one run fell, and it was scored up to its fall")
        c.verdict = WORSE if -1 in signs else BETTER if 1 in signs else SAME
        return c
    checks = [("tracking error", oa.get("tracking_error"), ob.get("tracking_error"), tol.tracking_error, "m/s"),
              ("yaw tracking error", oa.get("yaw_tracking_error"), ob.get("yaw_tracking_error"),
               tol.yaw_tracking_error, "rad/s"),
              ("peak tilt", tilt_deg(oa), tilt_deg(ob), tol.tilt_deg, "deg"),
              ("step half time", oa.get("step_half_time"), ob.get("step_half_time"), tol.response_time, "s"),
              ("stop time", oa.get("stop_time"), ob.get("stop_time"), tol.response_time, "s")]
    pa, pb = oa.get("pushes_survived"), ob.get("pushes_survived")
    if pa is not None and pb is not None and pa != pb:
        note(1 if pb > pa else -1, f"stands through {pb} of the pushes instead of {pa}")
    if not commands_motion(a) and not commands_motion(b):
        checks.append(("drift", oa.get("drift"), ob.get("drift"), tol.drift, "m"))
    for label, va, vb, t, unit in checks:
        got = _lower_is_better(label, va, vb, t, unit)
        if got is not None:
            note(*got)
    c.verdict = WORSE if -1 in signs else BETTER if 1 in signs else SAME
    return c


def compare(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]], tol: Tolerances) -> list[Comparison]:
    """One comparison per scenario name of either run: A's order first, then B's new ones."""
    names = list(a) + [n for n in b if n not in a]
    return [judge(n, a.get(n), b.get(n), tol) for n in names]


def regressed(comparisons: Sequence[Comparison]) -> bool:
    return any(c.verdict in REGRESSIONS for c in comparisons)


# -- text -------------------------------------------------------------------------------------------------------------
def _num(doc: dict[str, Any] | None, key: str, fmt: str) -> str:
    o = (doc or {}).get("outcome")
    if o is None:
        return (doc or {}).get("status", "-")
    if key == "fell_at":
        return "-" if o["fell_at"] is None else format(o["fell_at"], fmt)
    if key == "tilt":
        return format(tilt_deg(o), fmt)
    v = o.get(key)
    return "?" if v is None else format(v, fmt)


COLUMNS = (("fell", "fell_at", ".2f"), ("along", "along", ".2f"), ("track", "tracking_error", ".3f"),
           ("yawtr", "yaw_tracking_error", ".3f"), ("half", "step_half_time", ".2f"), ("stop", "stop_time", ".2f"),
           ("tilt", "tilt", ".1f"), ("drift", "drift", ".2f"))


def format_table(comparisons: Sequence[Comparison]) -> str:
    """One row per scenario: A/B of each column, the verdict and why."""
    w = max([20, *(len(c.scenario) for c in comparisons)])
    head = f"{'scenario':<{w}} {'verdict':<8} " + " ".join(f"{h + ' A/B':>15}" for h, _, _ in COLUMNS) + "  why"
    lines = [head, "-" * len(head)]
    for c in comparisons:
        cells = " ".join(f"{_num(c.a, k, f) + '/' + _num(c.b, k, f):>15}" for _, k, f in COLUMNS)
        lines.append(f"{c.scenario:<{w}} {c.verdict:<8} {cells}  {'; '.join(c.reasons + c.notes)}")
    counts = {v: sum(c.verdict == v for c in comparisons) for v in (WORSE, BETTER, SAME, MISSING, NEW, NOT_RUN)}
    lines.append(f"{len(comparisons)} scenarios: " + ", ".join(f"{n} {v}" for v, n in counts.items() if n))
    return "\n".join(lines)


# -- HTML -------------------------------------------------------------------------------------------------------------
def _row(c: Comparison) -> str:
    colour = VERDICT_COLOUR[c.verdict]
    linked = bool(c.a and c.a.get("trace") and c.b and c.b.get("trace"))
    name = f'<a href="#{br.esc(c.scenario)}">{br.esc(c.scenario)}</a>' if linked else br.esc(c.scenario)
    cells = "".join(f"<td>{br.esc(_num(c.a, k, f))}</td><td>{br.esc(_num(c.b, k, f))}</td>" for _, k, f in COLUMNS)
    return (f'<tr><td>{name}</td><td class="s l" style="color:{colour}">{c.verdict}</td>{cells}'
            f'<td class="l">{br.esc("; ".join(c.reasons + c.notes))}</td></tr>')


def render(comparisons: Sequence[Comparison], label_a: str, label_b: str) -> str:
    """The whole page: the verdict table, then per scenario the run report's plots with A and B overlaid."""
    runs = ((label_a, RUN_COLOURS[0]), (label_b, RUN_COLOURS[1]))
    counts = {v: sum(c.verdict == v for c in comparisons) for v in VERDICT_COLOUR}
    legend = " &middot; ".join(f'<span style="color:{col}">&#9632;</span> {br.esc(lab)}' for lab, col in runs)
    head = "".join(f'<th colspan="2">{h}</th>' for h, _, _ in COLUMNS)
    sub = "".join("<th>A</th><th>B</th>" for _ in COLUMNS)
    out = [br.page_head("vasimov bench compare"),
           f'<p class="meta">A = {br.esc(label_a)} &middot; B = {br.esc(label_b)}</p><p>{legend}</p>',
           "<p>" + ", ".join(f"{n} {v}" for v, n in counts.items() if n) + "</p>",
           f"<table><tr><th>scenario</th><th>verdict</th>{head}<th style=\"text-align:left\">why</th></tr>"
           f"<tr><th></th><th></th>{sub}<th></th></tr>", *(_row(c) for c in comparisons), "</table>"]
    for c in comparisons:
        if not (c.a and c.a.get("trace") and c.b and c.b.get("trace")):
            continue
        out.append(f'<section id="{br.esc(c.scenario)}"><h2>{br.esc(c.scenario)} <span style="color:'
                   f'{VERDICT_COLOUR[c.verdict]}">{c.verdict}</span></h2><p class="meta">'
                   f'{br.esc("; ".join(c.reasons + c.notes) or "no difference beyond the tolerances")}</p>')
        out.extend(br.scenario_plots(c.a, overlay=[(c.b, RUN_COLOURS[1])]))
        out.append("</section>")
    out.append("</body></html>\n")
    return "\n".join(out)


# -- command line -----------------------------------------------------------------------------------------------------
DEFAULT_POLICY_OUT = "bench_compare"


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="vasimov bench compare", usage="%(prog)s A B [options] | --policy A --policy B SUITE|FILE... [options]",
        description=__doc__.splitlines()[0].strip("`"))
    ap.add_argument("items", nargs="+", metavar="A B | SUITE",
                    help="two result folders of `vasimov bench run` (reference A, candidate B); with --policy: the "
                         "suites, scenario files or folders to run with each policy")
    ap.add_argument("--policy", action="append", metavar="SPEC",
                    help="give twice (A, then B): run the suite with each policy spec first (as `vasimov bench run "
                         "--policy`, e.g. builtin and builtin:leg_kp=60,push_recovery=false)")
    ap.add_argument("--workers", type=int, default=None,
                    help="with --policy: worker processes of each run (default: the core count)")
    ap.add_argument("--ray", metavar="ADDRESS", default=None, help="with --policy: run on Ray (see bench run)")
    ap.add_argument("--out", default=None, help=f"folder for compare.html (default: B); with --policy: the folder "
                                                f"of the runs A/, B/ and compare.html (default: {DEFAULT_POLICY_OUT})")
    ap.add_argument("--no-report", action="store_true", help="skip compare.html (and the runs' report.html)")
    for f in fields(Tolerances):
        ap.add_argument(f"--tol-{f.name.replace('_', '-')}", dest=f"tol_{f.name}", type=float, default=f.default,
                        metavar="X", help=f"tolerance on {f.name.replace('_', ' ')} (default %(default)s)")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    tol = Tolerances(**{f.name: getattr(args, f"tol_{f.name}") for f in fields(Tolerances)})
    if any(not (math.isfinite(v) and v >= 0.0) for v in vars(tol).values()):
        print("vasimov bench compare: tolerances must be finite and >= 0", file=sys.stderr)
        return 2
    if args.policy is None:
        if len(args.items) != 2 or args.workers is not None or args.ray is not None:
            print("vasimov bench compare: give two result folders A B (--workers and --ray only go with --policy, "
                  "which runs a suite once per policy)", file=sys.stderr)
            return 2
        folder_a, folder_b = args.items
        label_a, label_b = folder_a, folder_b
        report_dir = Path(args.out or folder_b)
    else:
        runs = run_policies(args)
        if isinstance(runs, int):
            return runs
        (folder_a, label_a), (folder_b, label_b) = runs
        report_dir = Path(args.out or DEFAULT_POLICY_OUT)
    try:
        a, b = load_results(folder_a), load_results(folder_b)
    except CompareError as exc:
        print(f"vasimov bench compare: {exc}", file=sys.stderr)
        return 2
    comparisons = compare(a, b, tol)
    print(format_table(comparisons))
    if not args.no_report:
        report_dir.mkdir(parents=True, exist_ok=True)
        path = report_dir / "compare.html"
        path.write_text(render(comparisons, label_a, label_b), encoding="utf-8")
        print(f"report: {path}")
    bad = [c.scenario for c in comparisons if c.verdict in REGRESSIONS]
    if bad:
        print(f"B regresses in {len(bad)} scenario(s): {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


def run_policies(args: argparse.Namespace) -> tuple[tuple[str, str], tuple[str, str]] | int:
    """``--policy A --policy B``: the suite run once per policy by ``vasimov bench run`` into ``OUT/A`` and
    ``OUT/B``; their (folder, label) pairs, or the exit status 2 when the specs, the suite or the options are bad.
    A run with failed scenarios is no error here: the comparison judges it."""
    from vasimov_tools import bench_run

    if len(args.policy) != 2:
        print(f"vasimov bench compare: --policy goes twice (A, then B), got {len(args.policy)}", file=sys.stderr)
        return 2
    for spec in args.policy:  # both, before the first run starts
        problem = bench_run.policy_error(spec)
        if problem is not None:
            print(f"vasimov bench compare: {problem}", file=sys.stderr)
            return 2
    out = Path(args.out or DEFAULT_POLICY_OUT)
    runs = []
    for label, spec in zip(("A", "B"), args.policy, strict=True):
        folder = out / label
        _clear_results(folder)  # an earlier compare's run: replaced, or its scenarios would count as this one's
        argv = [*args.items, "--out", str(folder), "--policy", spec]
        argv += ["--workers", str(args.workers)] if args.workers is not None else []
        argv += ["--ray", args.ray] if args.ray is not None else []
        argv += ["--no-report"] if args.no_report else []
        print(f"== {label}: vasimov bench run --policy {spec} -> {folder}", flush=True)
        if bench_run.main(argv) == 2:
            return 2
        runs.append((str(folder), f"{spec} ({folder})"))
    return runs[0], runs[1]


def _clear_results(folder: Path) -> None:
    """Remove the bench results (the files :func:`load_results` reads) in ``folder``; other files stay."""
    for f in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and {"scenario", "status", "format"} <= doc.keys():
            f.unlink()


if __name__ == "__main__":
    sys.exit(main())
