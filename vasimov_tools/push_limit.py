"""``vasimov bench push-limit --policy SPEC [--direction D ...] [--walking VX] [--phases N]``: the largest 0.15 s
pelvis push a policy survives, per direction, found by bisection through the bench's own path.

Every probe is one scenario run by :func:`vasimov_tools.walk_bench.run_scenario` with the backend that ``vasimov
bench run --policy SPEC`` would use (:func:`vasimov_tools.bench_run.policy_factory`): boot (stand, balance, settle),
then either balance (standing) or walk forward at ``--walking`` m/s, one push of F newtons for 0.15 s at the pelvis
at t = 2 s (standing) or 3 s (walking, two gait cycles in), and 4 s more to recover or fall. With ``--phases N`` each
probe is N runs pushing at instants spread over 1 s from there (about one gait cycle), and a force counts as survived
only if every run survives it: a walking limit then holds across the gait, not at one phase of it. Survived means the
bench's fall rule never fired (pelvis above 0.45 m over the ground, tilt below 36.9 deg). Directions are in the world
frame, which at boot is the robot's own (it faces +x): front pushes toward +x (the viewer's and the goals suite's
"front"), back toward -x, left +y, right -y.

The search (:func:`bisect_limit`, pure) assumes survival is monotone in the force: it probes the top of the range
first (survived: the limit is at least that), then the bottom (fell: below the range), then halves the bracket until
it is narrower than ``--tolerance``. It reports the largest force survived, the smallest that felled the robot and
every probe, so a non-monotone result (a lower force that fell) is visible in the probe list rather than hidden.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import multiprocessing
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

DIRECTIONS: dict[str, tuple[float, float, float]] = {
    "front": (1.0, 0.0, 0.0), "back": (-1.0, 0.0, 0.0), "left": (0.0, 1.0, 0.0), "right": (0.0, -1.0, 0.0),
}
PUSH_SECONDS = 0.15
STANDING_PUSH_T = 2.0  # s after the scenario's clock starts
WALKING_PUSH_T = 3.0
RECOVER_SECONDS = 4.0  # after the push: time to fall or recover
PHASE_SPAN = 1.0  # s over which --phases spreads the push times: about one gait cycle (two steps) of a walker
DEFAULT_RANGE = (0.0, 1000.0)  # N
DEFAULT_TOLERANCE = 10.0  # N


@dataclass
class Bisection:
    """The outcome of :func:`bisect_limit`: ``survived`` is the largest force that was survived (None: even the
    bottom of the range fell), ``fell`` the smallest that was not (None: the top of the range was survived), and
    ``probes`` every (force, survived) in the order they ran."""

    survived: float | None
    fell: float | None
    probes: list[tuple[float, bool]] = field(default_factory=list)


def bisect_limit(survives: Callable[[float], bool], lo: float, hi: float, tolerance: float) -> Bisection:
    """Largest force in [lo, hi] for which ``survives`` holds, to within ``tolerance``, assuming it is monotone."""
    if not (0.0 <= lo < hi) or tolerance <= 0.0:
        raise ValueError(f"need 0 <= lo < hi and tolerance > 0, got lo={lo}, hi={hi}, tolerance={tolerance}")
    probes: list[tuple[float, bool]] = []

    def probe(force: float) -> bool:
        ok = bool(survives(force))
        probes.append((force, ok))
        return ok

    if probe(hi):
        return Bisection(hi, None, probes)
    if not probe(lo):
        return Bisection(None, lo, probes)
    good, bad = lo, hi
    while bad - good > tolerance:
        mid = (good + bad) / 2.0
        if probe(mid):
            good = mid
        else:
            bad = mid
    return Bisection(good, bad, probes)


def push_times(walking: float, phases: int = 1) -> list[float]:
    """When the probes push: at 2 s (standing) or 3 s (walking), and with ``phases`` > 1 at that many instants spread
    evenly over ``PHASE_SPAN`` from there, so a walking push meets the gait in several phases."""
    if phases < 1:
        raise ValueError(f"phases must be >= 1, got {phases}")
    t0 = WALKING_PUSH_T if walking else STANDING_PUSH_T
    return [t0 + k * PHASE_SPAN / phases for k in range(phases)]


def push_scenario(direction: str, force: float, walking: float = 0.0, t: float | None = None) -> Any:
    """The probe scenario: a push of ``force`` N toward ``direction`` at the pelvis at ``t`` (default: the first of
    :func:`push_times`), standing or walking at ``walking`` m/s (a walk_bench.Scenario; no pass criterion but the
    fall)."""
    from vasimov_tools.walk_bench import Criteria, Push, Scenario

    unit = DIRECTIONS[direction]
    t = push_times(walking)[0] if t is None else t
    return Scenario(
        f"push_limit_{direction}_{force:g}N_t{t:g}" + (f"_walking_{walking:g}" if walking else ""), t + RECOVER_SECONDS,
        commands=((0.0, float(walking), 0.0, 0.0),),
        pushes=(Push(t, tuple(force * u for u in unit), PUSH_SECONDS, "pelvis_link"),),  # type: ignore[arg-type]
        criteria=Criteria(max_compute_p99=None),
        note=f"push-limit probe: {force:g} N toward {direction} for {PUSH_SECONDS} s",
    )


def search(task: dict[str, Any]) -> dict[str, Any]:
    """One direction's bisection (runs in a worker process): the JSON-able report."""
    from vasimov_tools import bench_run
    from vasimov_tools.walk_bench import run_scenario

    factory = bench_run.policy_factory(task["policy"])
    falls: dict[float, list[float | None]] = {}

    def survives(force: float) -> bool:  # every phase must be survived; stop at the first that falls
        falls[force] = []
        for t in push_times(task["walking"], task["phases"]):
            r = run_scenario(push_scenario(task["direction"], force, task["walking"], t), factory)
            falls[force].append(r.fell_at)
            if r.fell_at is not None:
                return False
        return True

    b = bisect_limit(survives, task["lo"], task["hi"], task["tolerance"])
    return {**task, **asdict(b), "push_times": push_times(task["walking"], task["phases"]),
            "probes": [{"force": f, "survived": ok, "fell_at": falls[f]} for f, ok in b.probes]}


def format_table(reports: Sequence[dict[str, Any]]) -> str:
    head = f"{'direction':<10} {'walking':>8} {'phases':>6} {'survived':>9} {'fell':>7} {'probes':>6}"
    lines = [head, "-" * len(head)]
    for r in reports:
        hi = r["hi"]
        surv = "-" if r["survived"] is None else (f">={hi:g}" if r["fell"] is None else f"{r['survived']:.0f}")
        fell = "-" if r["fell"] is None else f"{r['fell']:.0f}"
        lines.append(f"{r['direction']:<10} {r['walking']:>8.2f} {r['phases']:>6} {surv:>9} {fell:>7} "
                     f"{len(r['probes']):>6}")
    lines.append(f"N, 0.15 s at the pelvis; policy {reports[0]['policy'] if reports else '?'}; "
                 f"bisection to {reports[0]['tolerance'] if reports else '?'} N")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="vasimov bench push-limit", description=__doc__.splitlines()[0].strip("`"))
    ap.add_argument("--policy", default="builtin", help="backend spec, as for `vasimov bench run` (default builtin)")
    ap.add_argument("--direction", action="append", choices=[*DIRECTIONS, "all"],
                    help="push direction (repeatable; default all four)")
    ap.add_argument("--walking", type=float, default=0.0, metavar="VX",
                    help="walk forward at VX m/s while pushed (default 0: standing)")
    ap.add_argument("--range", nargs=2, type=float, default=list(DEFAULT_RANGE), metavar=("LO", "HI"),
                    help="forces to search, N (default %(default)s)")
    ap.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE, help="N (default %(default)s)")
    ap.add_argument("--phases", type=int, default=1,
                    help=f"push at this many instants spread over {PHASE_SPAN:g} s (about a gait cycle); a force "
                         "counts as survived only if every one is (default 1)")
    ap.add_argument("--workers", type=int, default=1, help="directions searched in parallel processes (default 1)")
    ap.add_argument("--out", default=None, help="write the reports as JSON to this file")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    from vasimov_tools import bench_run

    lo, hi = args.range
    if not (0.0 <= lo < hi) or args.tolerance <= 0.0 or args.workers < 1 or args.phases < 1:
        ap.error("need 0 <= LO < HI, --tolerance > 0, --workers >= 1 and --phases >= 1")
    if not -0.4 <= args.walking <= 0.4:
        ap.error("--walking must be within the SDK's vx range -0.4..0.4 m/s")
    problem = bench_run.policy_error(args.policy)
    if problem is not None:
        ap.error(problem)
    chosen = args.direction or ["all"]
    directions = list(DIRECTIONS) if "all" in chosen else list(dict.fromkeys(chosen))
    tasks = [{"policy": args.policy, "direction": d, "walking": args.walking, "lo": lo, "hi": hi,
              "tolerance": args.tolerance, "phases": args.phases} for d in directions]
    if args.workers == 1 or len(tasks) == 1:
        reports = [search(t) for t in tasks]
    else:
        ctx = multiprocessing.get_context("spawn")
        with cf.ProcessPoolExecutor(max_workers=min(args.workers, len(tasks)), mp_context=ctx) as pool:
            reports = list(pool.map(search, tasks))
    print(format_table(reports))
    if args.out:
        Path(args.out).write_text(json.dumps(reports, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
