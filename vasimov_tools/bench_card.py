"""``vasimov bench card [--policy SPEC] [--out DIR] [--workers N] [--suites S ...] [--no-push-limit] [--from DIR
...]``: what a walking policy can do, on one page, measured through the bench's own path.

Why: ``bench run`` answers "which scenarios pass" and ``bench compare`` "is B better than A"; a user who brings a
policy, or reads about the built-in walker, asks something else first: how fast does it really walk when asked for
the SDK's limits, how soon does it answer a command, how hard a push does it stand, where does it fall. The card
answers that from the same results, computed, never typed in:

* **Suites**: per shipped suite, scenarios run, passed, fell, and seconds survived of the seconds asked.
* **Holding one command**: every scenario shorter than ``LONG_RUN`` without pushes whose command is one non-zero
  hold of at least ``MIN_HOLD`` s: the command asked and the body's mean velocity over the hold after its first
  ``SETTLE`` s (from the trace's ground-truth positions and heading, in the heading frame: :func:`walked_velocity`),
  the half-response and stop times the bench scored, and when it fell.
* **Pushes**: the largest survived 0.15 s pelvis push per direction, standing and walking (``vasimov bench
  push-limit``, bisection to 10 N, every push phase of a gait cycle survived), and every scenario file's pushes with
  how many of them the robot stood through (the viewer's push files: the "reasonable" and the "beyond" tier).
* **Long runs**: scenarios of 60 s or more (command sequences, the 100 m lap): how many fell and when.
* **Compute**: the controller's thread CPU per 50 Hz tick (the one figure that depends on the machine).

It runs ``bench run`` (into ``DIR/results``) and ``bench push-limit`` (``DIR/push_limit_*.json``) with the policy,
then writes ``DIR/card.md`` and prints it; ``--from DIR`` renders the card again from a folder of an earlier card or
of ``bench run`` results (with any ``push_limit*.json`` reports in it), running nothing; ``--from A --from B`` puts
cards side by side, a column each (the holds and long runs every card has).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SUITES = ("standard", "goals", "envelope", "viewer", "sequences")
MIN_HOLD = 4.0  # s: a shorter hold is a command step, not a speed to report
SETTLE = 2.0  # s: skipped at the start of a hold (the walker's response; scored separately as half-time)
LONG_RUN = 60.0  # s: scenarios at least this long are reported as long runs
PUSH_WALKING = 0.2  # m/s: the walking speed of the card's walking push limits
PUSH_PHASES = 4
PUSH_RANGE = (0.0, 600.0)  # N
TRACE_DT = 0.1  # s between trace samples (walk_bench: every 5th 50 Hz tick)
DIRECTION_ORDER = ("front", "back", "left", "right")


def suite_of(doc: dict[str, Any]) -> str:
    """The shipped suite a result came from (``.../suites/<suite>/file.yaml``), else ``files``."""
    parts = Path(str(doc.get("source", ""))).parts
    for i, p in enumerate(parts[:-2]):
        if p == "suites":
            return parts[i + 1]
    return "files"


def _fell_at(doc: dict[str, Any]) -> float | None:
    v = (doc.get("outcome") or {}).get("fell_at")
    return None if v is None else float(v)


def _ran(doc: dict[str, Any]) -> bool:
    return doc.get("status") in ("passed", "failed")


def suite_rows(docs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per suite (shipped order first): scenarios run, passed, fell, skipped, errors, seconds survived / asked."""
    by: dict[str, list[dict[str, Any]]] = {}
    for d in docs:
        by.setdefault(suite_of(d), []).append(d)
    order = [s for s in SUITES if s in by] + sorted(s for s in by if s not in SUITES)
    rows = []
    for s in order:
        ran = [d for d in by[s] if _ran(d)]
        asked = sum(float(d["duration"]) for d in ran)
        survived = sum(min(float(d["duration"]), f) if (f := _fell_at(d)) is not None else float(d["duration"])
                       for d in ran)
        rows.append({"suite": s, "ran": len(ran), "passed": sum(d["status"] == "passed" for d in ran),
                     "fell": sum(_fell_at(d) is not None for d in ran),
                     "skipped": sum(d.get("status") == "skipped" for d in by[s]),
                     "errors": sum(d.get("status") == "error" for d in by[s]), "survived_s": survived,
                     "asked_s": asked})
    return rows


def single_hold(trace: Sequence[dict[str, Any]]) -> tuple[float, float, tuple[float, float, float]] | None:
    """``(start, end, command)`` of the trace's only non-zero command, held without change; None when the trace
    commands nothing, changes between non-zero commands, or returns to one after a zero."""
    if not trace:
        return None
    segments: list[tuple[float, tuple[float, float, float]]] = []  # (start, command) of each constant stretch
    for s in trace:
        cmd = (float(s["cmd_vx"]), float(s["cmd_vy"]), float(s["cmd_wz"]))
        if not segments or segments[-1][1] != cmd:
            segments.append((float(s["t"]), cmd))
    moving = [i for i, (_, cmd) in enumerate(segments) if any(cmd)]
    if len(moving) != 1:
        return None
    i = moving[0]
    end = segments[i + 1][0] if i + 1 < len(segments) else float(trace[-1]["t"]) + TRACE_DT
    return segments[i][0], end, segments[i][1]


def walked_velocity(trace: Sequence[dict[str, Any]], start: float, end: float) -> tuple[float, float, float] | None:
    """Mean (vx, vy, wz) walked over ``[start, end)``, heading frame: the trace's ground-truth positions and heading
    differenced sample to sample, each planar step turned into the heading between its two samples, summed and
    divided by the time. None with fewer than 10 samples.

    Why positions, not the trace's velocities: the trace samples every 0.1 s, a quarter of a 0.4 s step, so its
    samples fall on the same phases of every step and the sway at two and four times the step rate does not average
    out (a turn walked at 0.29 rad/s read 0.57). Positions and heading are continuous, so their difference over the
    window is the mean whatever the phase; only the sway at the window's two ends remains (a few mm)."""
    window = [s for s in trace if start - 1e-9 <= float(s["t"]) < end - 1e-9]
    if len(window) < 10:
        return None
    fwd = side = 0.0
    for a, b in itertools.pairwise(window):
        dx, dy = float(b["x"]) - float(a["x"]), float(b["y"]) - float(a["y"])
        h = 0.5 * (float(a["heading"]) + float(b["heading"]))
        fwd += math.cos(h) * dx + math.sin(h) * dy
        side += -math.sin(h) * dx + math.cos(h) * dy
    span = float(window[-1]["t"]) - float(window[0]["t"])
    turn = float(window[-1]["heading"]) - float(window[0]["heading"])
    return fwd / span, side / span, turn / span


def hold_rows(docs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per scenario without pushes, shorter than ``LONG_RUN``, that holds one command for ``MIN_HOLD`` s or
    more (see the module doc; a long run that fell during its first command is not a hold of that command)."""
    rows = []
    for d in docs:
        if not _ran(d) or d.get("pushes") or float(d["duration"]) >= LONG_RUN:  # long runs: their own section
            continue
        hold = single_hold(d.get("trace") or [])
        if hold is None:
            continue
        start, end, cmd = hold
        fell = _fell_at(d)
        if fell is not None and end >= float(d["trace"][-1]["t"]):  # the trace stopped at the fall, mid-hold
            end = max(end, float(d["duration"]))
        if end - start < MIN_HOLD:
            continue
        last = end if fell is None else min(end, fell)
        out = d.get("outcome") or {}
        rows.append({"scenario": d["scenario"], "suite": suite_of(d), "asked": cmd,
                     "walked": walked_velocity(d["trace"], start + SETTLE, last), "window": (start + SETTLE, last),
                     "half_time": out.get("step_half_time"), "stop_time": out.get("stop_time"), "fell_at": fell,
                     "limited": out.get("command_limited_share")})
    return rows


def push_rows(docs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every scenario with pushes: its pushes (force magnitude, body, time), how many the robot stood through."""
    rows = []
    for d in docs:
        pushes = d.get("pushes") or []
        if not _ran(d) or not pushes:
            continue
        out = d.get("outcome") or {}
        rows.append({"scenario": d["scenario"], "suite": suite_of(d),
                     "pushes": [(math.hypot(*p["force"]), p.get("body") or "pelvis_link", float(p["t"]))
                                for p in sorted(pushes, key=lambda p: p["t"])],
                     "survived": int(out.get("pushes_survived", 0)), "fell_at": _fell_at(d),
                     "moving": any(abs(s.get(k, 0.0)) > 1e-12 for s in d.get("trace", [])
                                   for k in ("cmd_vx", "cmd_vy", "cmd_wz"))})
    return rows


def long_rows(docs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per suite, its scenarios of ``LONG_RUN`` s or more: how many, how many fell, the times they fell at."""
    by: dict[str, list[dict[str, Any]]] = {}
    for d in docs:
        if _ran(d) and float(d["duration"]) >= LONG_RUN:
            by.setdefault(suite_of(d), []).append(d)
    rows = []
    for s, ds in by.items():
        falls = sorted(f for d in ds if (f := _fell_at(d)) is not None)
        rows.append({"suite": s, "ran": len(ds), "fell": len(falls), "fall_times": falls,
                     "duration": max(float(d["duration"]) for d in ds)})
    return rows


def compute_figures(docs: Sequence[dict[str, Any]]) -> tuple[float, float] | None:
    """The controller's thread CPU per 50 Hz tick over the runs: the median of the scenarios' p50 and the largest of
    their p99 (ms); None without timings. Unlike everything else on the card this depends on the machine."""
    timing = [d["timing"] for d in docs if _ran(d) and d.get("timing", {}).get("cpu_p99_ms") is not None]
    if not timing:
        return None
    return statistics.median(float(t["cpu_p50_ms"]) for t in timing), max(float(t["cpu_p99_ms"]) for t in timing)


def limits_by_case(limits: Sequence[dict[str, Any]]) -> dict[tuple[float, int], dict[str, dict[str, Any]]]:
    """Push-limit reports grouped by (walking speed, phases), then by direction."""
    out: dict[tuple[float, int], dict[str, dict[str, Any]]] = {}
    for r in limits:
        out.setdefault((float(r["walking"]), int(r.get("phases", 1))), {})[r["direction"]] = r
    return out


def _case_label(walking: float, phases: int) -> str:
    label = "standing" if walking == 0.0 else f"walking {walking:g} m/s"
    return label + (f", {phases} phases" if phases > 1 else "")


def _limit_cells(by_dir: dict[str, dict[str, Any]]) -> str:
    return " | ".join(_limit_cell(by_dir.get(d)) for d in DIRECTION_ORDER)


def load_push_limits(folder: Path) -> list[dict[str, Any]]:
    """Every push-limit report (a JSON list written by ``bench push-limit --out``) in ``folder``; an unreadable one
    is refused by name (``CompareError``, as for an unreadable result)."""
    from vasimov_tools.bench_compare import CompareError

    reports: list[dict[str, Any]] = []
    for f in sorted(folder.glob("push_limit*.json")):
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CompareError(f"{f}: unreadable push-limit report ({exc})") from exc
        if isinstance(data, list):
            reports.extend(r for r in data if isinstance(r, dict) and "direction" in r and "survived" in r)
    return reports


def load_docs(folder: Path) -> list[dict[str, Any]]:
    """The ``bench run`` results under ``folder`` (``folder/results`` when the card wrote them there)."""
    from vasimov_tools.bench_compare import load_results

    results = folder / "results"
    return list(load_results(results if results.is_dir() else folder).values())


# -- rendering --------------------------------------------------------------------------------------------------------
def _f(v: float | None, fmt: str = ".2f", none: str = "-") -> str:
    return none if v is None else format(v, fmt)


def _vec(v: Sequence[float] | None) -> str:
    if v is None:
        return "-"
    return f"{v[0]:+.2f} / {v[1]:+.2f} / {v[2]:+.2f}"


def _limit_cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return "-"
    if r["survived"] is None:
        return f"< {r['lo']:g}"
    if r["fell"] is None:
        return f">= {r['survived']:g}"
    return f"{r['survived']:.0f}"


def render(docs: Sequence[dict[str, Any]], push_limits: Sequence[dict[str, Any]], policy: str | None = None) -> str:
    """The card as markdown."""
    ran = [d for d in docs if _ran(d)]
    policies = sorted({str(d.get("policy")) for d in ran}) or ([policy] if policy else ["?"])
    codes = sorted({str(d.get("code_version", "?"))[:12] for d in ran}) or ["?"]
    lines = [f"# What `{', '.join(policies)}` can do", "",
             f"Measured by `vasimov bench card` (lockstep through the firmware core, code {', '.join(codes)}). Every "
             "number below is computed from the runs' results; see `vasimov_tools/bench_card.py` for how.", ""]
    rows = suite_rows(docs)
    if rows:
        lines += ["## Suites", "", "| suite | ran | passed | fell | survived / asked (s) |", "|---|---|---|---|---|"]
        for r in rows:
            extra = "".join(f", {r[k]} {k}" for k in ("skipped", "errors") if r[k])
            lines.append(f"| {r['suite']} | {r['ran']}{extra} | {r['passed']} | {r['fell']} | "
                         f"{r['survived_s']:.1f} / {r['asked_s']:.1f} |")
        tot = {k: sum(r[k] for r in rows) for k in ("ran", "passed", "fell", "survived_s", "asked_s")}
        lines += [f"| all | {tot['ran']} | {tot['passed']} | {tot['fell']} | {tot['survived_s']:.1f} / "
                  f"{tot['asked_s']:.1f} |", ""]
    cpu = compute_figures(docs)
    if cpu is not None:
        lines += [f"Controller compute (thread CPU per 50 Hz tick, on the machine that ran it): "
                  f"median of the scenarios' p50 {cpu[0]:.2f} ms, largest p99 {cpu[1]:.2f} ms.", ""]
    holds = hold_rows(docs)
    if holds:
        lines += ["## Holding one command", "",
                  f"Asked and walked: vx / vy (m/s) / wz (rad/s); walked is the mean over the hold after its first "
                  f"{SETTLE:g} s (up to a fall). Half: time to half of the change; stop: time to stopped after the "
                  "zero; clipped: share of ticks the walker walked a smaller command than asked.", "",
                  "| scenario | asked | walked | half (s) | stop (s) | clipped | fell at (s) |",
                  "|---|---|---|---|---|---|---|"]
        for r in holds:
            lim = r["limited"]
            lines.append(f"| {r['scenario']} | {_vec(r['asked'])} | {_vec(r['walked'])} | {_f(r['half_time'])} | "
                         f"{_f(r['stop_time'])} | {'-' if lim is None else f'{100 * lim:.0f} %'} | "
                         f"{_f(r['fell_at'])} |")
        lines.append("")
    if push_limits:
        lines += ["## Push limits", "",
                  "Largest 0.15 s pelvis push survived (N; `vasimov bench push-limit`, bisection; walking: every "
                  "push phase across a gait cycle survived).", "",
                  "| while | " + " | ".join(DIRECTION_ORDER) + " |", "|---|" + "---|" * len(DIRECTION_ORDER)]
        for case, by_dir in sorted(limits_by_case(push_limits).items()):
            lines.append(f"| {_case_label(*case)} | {_limit_cells(by_dir)} |")
        lines.append("")
    pushes = push_rows(docs)
    if pushes:
        lines += ["## Pushes in the scenario files", "",
                  "| scenario | while | pushes (N at body, s) | stood through | fell at (s) |", "|---|---|---|---|---|"]
        for r in pushes:
            ps = ", ".join(f"{f:.0f} at {b} {t:g}" for f, b, t in r["pushes"])
            lines.append(f"| {r['scenario']} | {'walking' if r['moving'] else 'standing'} | {ps} | "
                         f"{r['survived']} of {len(r['pushes'])} | {_f(r['fell_at'])} |")
        lines.append("")
    longs = long_rows(docs)
    if longs:
        lines += ["## Long runs", "", "| suite | runs (longest, s) | fell | fell at (s): min / median / max |",
                  "|---|---|---|---|"]
        for r in longs:
            ft = r["fall_times"]
            when = f"{ft[0]:.1f} / {statistics.median(ft):.1f} / {ft[-1]:.1f}" if ft else "-"
            lines.append(f"| {r['suite']} | {r['ran']} ({r['duration']:g}) | {r['fell']} | {when} |")
        lines.append("")
    return "\n".join(lines)


def _label(docs: Sequence[dict[str, Any]], folder: Path) -> str:
    policies = sorted({str(d.get("policy")) for d in docs if _ran(d)})
    return ", ".join(policies) if policies else folder.name


def render_side_by_side(cards: Sequence[tuple[str, Sequence[dict[str, Any]], Sequence[dict[str, Any]]]]) -> str:
    """Several cards (label, results, push-limit reports) as one page, a column per card: the suites, the holds
    every card has, the push limits and the long runs."""
    labels = [f"`{label}`" for label, _, _ in cards]
    lines = [f"# {' vs '.join(labels)}", "",
             "Measured by `vasimov bench card` (lockstep through the firmware core); each column is one card's "
             "results.", "", "## Suites", "", "Passed / fell of those run; seconds survived of the seconds asked.", "",
             "| suite | " + " | ".join(labels) + " | " + " | ".join(f"survived: {lb}" for lb in labels) + " |",
             "|---|" + "---|" * (2 * len(cards))]
    rows = [{r["suite"]: r for r in suite_rows(docs)} for _, docs, _ in cards]
    suites = [s for s in SUITES if any(s in r for r in rows)]
    suites += sorted({s for r in rows for s in r} - set(suites))
    for suite in [*suites, "all"]:
        cells, survived = [], []
        for r in rows:
            picked = list(r.values()) if suite == "all" else [r[suite]] if suite in r else []
            if not picked:
                cells.append("-")
                survived.append("-")
                continue
            tot = {k: sum(x[k] for x in picked) for k in ("ran", "passed", "fell", "survived_s", "asked_s")}
            cells.append(f"{tot['passed']} / {tot['fell']} of {tot['ran']}")
            survived.append(f"{tot['survived_s']:.0f} of {tot['asked_s']:.0f}")
        lines.append(f"| {suite} | " + " | ".join(cells) + " | " + " | ".join(survived) + " |")
    cpus = [compute_figures(docs) for _, docs, _ in cards]
    if any(c is not None for c in cpus):
        lines.append("| controller CPU per tick, ms: median p50 / largest p99 (this machine) | "
                     + " | ".join("-" if c is None else f"{c[0]:.2f} / {c[1]:.2f}" for c in cpus) + " |"
                     + " |" * len(cards))
    holds = [{r["scenario"]: r for r in hold_rows(docs)} for _, docs, _ in cards]
    common = [n for n in holds[0] if all(n in h for h in holds[1:])]
    if common:
        lines += ["", "## Holding one command", "",
                  f"vx / vy (m/s) / wz (rad/s); walked: the mean over the hold after its first {SETTLE:g} s (up to a "
                  "fall); half: seconds to half of the change; fell: the fall time (s).", "",
                  "| scenario | asked | " + " | ".join(f"{lb} walked | half | fell" for lb in labels) + " |",
                  "|---|---|" + "---|---|---|" * len(cards)]
        for n in common:
            cells = [f"{_vec(h[n]['walked'])} | {_f(h[n]['half_time'])} | {_f(h[n]['fell_at'])}" for h in holds]
            lines.append(f"| {n} | {_vec(holds[0][n]['asked'])} | " + " | ".join(cells) + " |")
    if any(limits for _, _, limits in cards):
        lines += ["", "## Push limits", "", "Largest 0.15 s pelvis push survived (N).", "",
                  "| while | policy | " + " | ".join(DIRECTION_ORDER) + " |",
                  "|---|---|" + "---|" * len(DIRECTION_ORDER)]
        keyed = [limits_by_case(limits) for _, _, limits in cards]
        for case in sorted({key for k in keyed for key in k}):
            for lb, k in zip(labels, keyed, strict=True):
                lines.append(f"| {_case_label(*case)} | {lb} | {_limit_cells(k.get(case, {}))} |")
    longs = [{r["suite"]: r for r in long_rows(docs)} for _, docs, _ in cards]
    suites = [s for s in longs[0] if all(s in x for x in longs[1:])]
    if suites:
        lines += ["", "## Long runs", "", "Fell of those run; the median fall time (s).", "",
                  "| suite | " + " | ".join(labels) + " |", "|---|" + "---|" * len(cards)]
        for suite in suites:
            cells = []
            for x in longs:
                r = x[suite]
                med = f", median {statistics.median(r['fall_times']):.1f}" if r["fall_times"] else ""
                cells.append(f"{r['fell']} of {r['ran']}{med}")
            lines.append(f"| {suite} ({longs[0][suite]['duration']:g} s) | " + " | ".join(cells) + " |")
    lines.append("")
    return "\n".join(lines)


# -- running ----------------------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="vasimov bench card",
                                 description="What a walking policy can do, on one page (card.md): suites, velocity "
                                             "asked and walked, push limits, pushes stood through, long runs.")
    ap.add_argument("--policy", default="builtin", help="backend spec, as for `vasimov bench run` (default builtin)")
    ap.add_argument("--out", default="bench_card", help="folder for the results and card.md (default: %(default)s)")
    ap.add_argument("--workers", type=int, default=2, help="parallel worker processes (default %(default)s)")
    ap.add_argument("--suites", nargs="+", default=list(SUITES), metavar="SUITE|FILE",
                    help="what to run (default: %(default)s)")
    ap.add_argument("--no-push-limit", action="store_true", help="skip the push-limit searches")
    ap.add_argument("--from", dest="from_dirs", action="append", default=None, metavar="DIR",
                    help="render the card from an earlier card's folder or a `bench run` folder, running nothing; "
                         "given twice or more, the cards side by side")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    from vasimov_tools.bench_compare import CompareError

    if args.from_dirs:
        cards = []
        for folder in map(Path, args.from_dirs):
            try:
                docs = load_docs(folder)
                cards.append((_label(docs, folder), docs, load_push_limits(folder)))
            except CompareError as exc:
                print(f"vasimov bench card: {exc}", file=sys.stderr)
                return 2
        if len(cards) == 1:
            print(render(cards[0][1], cards[0][2]))
        else:
            print(render_side_by_side(cards))
        return 0
    if args.workers < 1:
        ap.error("--workers must be >= 1")
    from vasimov_tools import bench_run, push_limit

    problem = bench_run.policy_error(args.policy)
    if problem is not None:
        ap.error(problem)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = out / "results"
    code = bench_run.main([*args.suites, "--policy", args.policy, "--out", str(results), "--workers",
                           str(args.workers), "--no-report"])
    if code == 2:
        return 2
    if not args.no_push_limit:
        for name, walking in (("standing", 0.0), (f"walking_{PUSH_WALKING:g}", PUSH_WALKING)):
            push_limit.main(["--policy", args.policy, "--walking", str(walking), "--phases", str(PUSH_PHASES),
                             "--range", *(str(v) for v in PUSH_RANGE), "--workers", str(args.workers),
                             "--out", str(out / f"push_limit_{name}.json")])
    card = render(load_docs(out), load_push_limits(out), args.policy)
    (out / "card.md").write_text(card + "\n", encoding="utf-8")
    print(card)
    print(f"card: {out / 'card.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
