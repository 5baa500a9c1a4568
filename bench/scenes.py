"""The built-in controller in every scene: stand from the gantry, balance, then (a) 5 s at zero command and (b) 5 s
of walking forward at 0.2 m/s, through the firmware core in lockstep (vasimov_tools.walk_bench, deterministic).
Prints one JSON line per run and a table; the "Scenes" table of docs/scenes.md comes from it.

    .venv/bin/python bench/scenes.py [SCENE ...] [--seed N]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from vasimov.scenes import BASES, FRICTIONS, parse_scene
from vasimov_tools.walk_bench import Criteria, Scenario, format_table, run_scenario

DEFAULT = [*BASES, *(f"flat+{f}" for f in FRICTIONS), *(f"slope_10_up+{f}" for f in FRICTIONS),
           *(f"stairs_5cm+{f}" for f in FRICTIONS)]
SCENARIOS = (Scenario("balance_5s", 5.0, criteria=Criteria(max_compute_p99=None)),
             Scenario("forward_0.2_5s", 5.0, ((0.0, 0.2, 0.0, 0.0),), criteria=Criteria(max_compute_p99=None)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenes", nargs="*", default=DEFAULT)
    ap.add_argument("--seed", type=int, default=0, help="seed of the obstacle and rough-ground layouts")
    args = ap.parse_args(argv)
    results = []
    for name in args.scenes:
        scene = parse_scene(name, seed=args.seed)
        for sc in SCENARIOS:
            r = run_scenario(sc, scene=scene)
            r.name = f"{scene.name}:{sc.name}"
            results.append(r)
            print(json.dumps(asdict(r)), flush=True)
    print(format_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
