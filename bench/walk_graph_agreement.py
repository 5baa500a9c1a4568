"""How far the graph path of the walking bench (menlo-sdk over UDP into the full node graph) lands from the
single-process bench on the same scenarios: the single-process run is deterministic, the graph run is not (command
timing through UDP and processes), so the graph runs ``--repeat`` times and the differences are printed.

    .venv/bin/python bench/walk_graph_agreement.py [--repeat 3] [--realtime] [NAME ...]

Run it inside tools/run_tests.sh's isolation or with nothing else on the SDK's ports (8850/8851/3000). NAMEs are
standard scenarios or the short agreement ones (forward_0.3_3s, balance_2s; the default).
"""

from __future__ import annotations

import argparse
import json
import sys

from vasimov_tools import walk_bench, walk_bench_graph

FIELDS = ("along", "lateral", "drift", "heading")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--realtime", action="store_true")
    args = ap.parse_args(argv)
    pool = {**walk_bench.standard_scenarios(), **walk_bench_graph.agreement_scenarios()}
    names = args.names or list(walk_bench_graph.agreement_scenarios())
    base = walk_bench_graph.first_domain()
    worst: dict[str, float] = dict.fromkeys(FIELDS, 0.0)
    for i, name in enumerate(names):
        sc = pool[name]
        ref = walk_bench.run_scenario(sc)
        print(f"{name} single-process: " + " ".join(f"{f} {getattr(ref, f):+.4f}" for f in FIELDS), flush=True)
        for k in range(args.repeat):
            run = walk_bench_graph.run_graph_scenario(sc, realtime=args.realtime, domain=base + i * args.repeat + k)
            r = run.result
            diff = {f: getattr(r, f) - getattr(ref, f) for f in FIELDS}
            for f in FIELDS:
                worst[f] = max(worst[f], abs(diff[f]))
            print(f"{name} graph {run.path} #{k}: " + " ".join(f"{f} {getattr(r, f):+.4f} (d {diff[f]:+.4f})"
                                                            for f in FIELDS)
                  + f" fell {r.fell_at} rtf {run.rtf:.2f} cmd late {run.command_lateness_ms} ms"
                  f" push late {run.push_lateness_ms} ms watchdog {run.velocity_timeouts}", flush=True)
    print("worst |difference|: " + json.dumps(worst))
    return 0


if __name__ == "__main__":
    sys.exit(main())
