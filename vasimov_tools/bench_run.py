"""``vasimov bench run SUITE|FILE... [--out DIR] [--workers N] [--policy SPEC] [--ray ADDRESS]``: scenario files run
headless, in lockstep, in parallel processes, one JSON result per scenario.

Each scenario runs through :func:`vasimov_tools.walk_bench.run_scenario` -- the closed loop of plant, firmware and
policy backend that the lockstep graph is proven bit-identical to -- in a fresh ``spawn`` worker process, so a
result depends only on the scenario, its seed, the model, the policy and the code, which the JSON records. The same
suite therefore gives the same outcomes with 1 worker or N (``test_bench_run`` checks it); only the timing fields
(``timing``: compute time of the backend, wall clock) differ from run to run, and so does a pass/fail that a file
bases on ``max_compute_p99_ms``.

``--ray ADDRESS`` (``local``: a private, bounded instance for this run; else a cluster) runs the same tasks as Ray
tasks (:mod:`vasimov_tools.bench_ray`), with the same results. Ray is an optional dependency (``pip install
vasimov[ray]``; ``make setup`` installs it for the tests): without it the option exits 2 saying so.

``--policy`` takes a backend spec, or ``builtin:KEY=VALUE,...`` (:func:`vasimov_tools.scenarios.parse_policy`): the
built-in controller with config overrides on top of each file's ``policy_options``; ``builtin-v2:KEY=VALUE,...`` is
walker v2 with ``WalkerConfig`` overrides.

Outputs in ``DIR``: ``<scenario>.json`` per scenario (skipped ones too, with the reason), ``report.html`` (a
self-contained page: table and plots, :mod:`vasimov_tools.bench_report`), and a text table on stdout. Exit status:
0 when every scenario that ran passed, 1 when one failed or errored, 2 on a usage error or an invalid file.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import json
import math
import multiprocessing
import os
import shutil
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, TextIO

from vasimov_tools import scenarios as sc

RESULT_FORMAT = 1
TIMING_FIELDS = ("compute_p50_ms", "compute_p99_ms", "cpu_p50_ms", "cpu_p99_ms", "wall_seconds")
DEFAULT_POLICY = "builtin"


# -- provenance -------------------------------------------------------------------------------------------------------
def code_version() -> str:
    """The git commit of the code (``+dirty`` with uncommitted changes to tracked files), or the package version."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        from importlib.metadata import PackageNotFoundError, version

        try:
            return "vasimov " + version("vasimov")
        except PackageNotFoundError:
            return "unknown"


def model_sha256() -> str:
    """sha256 of the MJCF text the plant compiles (the robot and scene the results were computed on)."""
    from vasimov.model import build_mjcf

    return hashlib.sha256(build_mjcf().encode("utf-8")).hexdigest()


# -- one scenario (runs in a worker) ----------------------------------------------------------------------------------
def run_one(task: dict[str, Any]) -> dict[str, Any]:
    """Run one scenario and return its JSON document. Never raises: a broken run is recorded as ``error``."""
    from vasimov_tools import walk_bench as wb

    doc = task_doc(task)
    trace: list[dict[str, float]] = []
    try:
        factory = policy_factory(task["policy"])
        r = wb.run_scenario(task["scenario"], factory, trace=trace)
    except Exception as exc:  # a broken backend/firmware is a result to report, not a crash of the whole suite
        doc.update(status="error", error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(limit=5))
        return doc
    result = asdict(r)
    doc["status"] = "passed" if r.passed else "failed"
    doc["outcome"] = {k: v for k, v in result.items() if k not in TIMING_FIELDS}
    doc["timing"] = {k: result[k] for k in TIMING_FIELDS}
    doc["trace"] = trace
    return doc


def task_doc(task: dict[str, Any]) -> dict[str, Any]:
    """What a result records before the run: the scenario, its seed, the policy, the model and the code."""
    scenario = task["scenario"]
    return {
        "format": RESULT_FORMAT, "scenario": scenario.name, "source": task["source"], "seed": scenario.seed,
        "policy": task["policy"], "model_sha256": task["model_sha256"], "code_version": task["code_version"],
        "description": scenario.note, "duration": scenario.duration,
        "pushes": [asdict(p) for p in scenario.pushes], "modes": [list(m) for m in scenario.modes],
        "fall": fall_rule(scenario),
    }


def error_doc(task: dict[str, Any], error: str) -> dict[str, Any]:
    """The result of a scenario whose worker died (a crash outside :func:`run_one`'s own error handling)."""
    return {**task_doc(task), "status": "error", "error": error}


def fall_rule(scenario: Any) -> dict[str, float]:
    """The fall rule the run applied: the scenario's own, else the bench's."""
    from vasimov_tools import walk_bench as wb

    h = wb.FALL_MIN_PELVIS_HEIGHT if scenario.min_pelvis_height is None else scenario.min_pelvis_height
    gz = wb.FALL_MAX_GRAVITY_Z if scenario.max_gravity_z is None else scenario.max_gravity_z
    return {"min_pelvis_height": h, "max_tilt_deg": math.degrees(math.acos(max(-1.0, min(1.0, -gz))))}


def policy_factory(spec: str) -> Callable[..., Any]:
    """The backend factory of ``--policy SPEC`` for :func:`vasimov_tools.walk_bench.run_scenario` (one rule for every
    bench command that takes a policy: run, compare, push-limit)."""
    from vasimov_tools import walk_bench as wb

    base, options = sc.parse_policy(spec)
    if base == DEFAULT_POLICY:
        if not options:
            return wb.default_backend_factory
        overrides = dict(options)

        def builtin_factory(**file_options: object) -> Any:  # the spec's options win over the file's
            return wb.default_backend_factory(**{**file_options, **overrides})

        return builtin_factory
    from vasimov_edge.policy.registry import WALKER_V2, make_backend

    if base == WALKER_V2 and options:  # builtin-v2:KEY=VALUE,...: walker v2 with its config overridden
        from vasimov_edge.policy.walker import WalkerV2
        from vasimov_edge.policy.walker.config import WalkerConfig

        backend = WalkerV2(replace(WalkerConfig(), **dict(options)))
    else:
        backend = make_backend(base)

    def factory(**_options: object) -> Any:  # scenario options tune the built-in controller only
        backend.reset()
        return backend

    return factory


def skipped_doc(entry: sc.Entry, common: dict[str, Any]) -> dict[str, Any]:
    return {"format": RESULT_FORMAT, "scenario": entry.name, "source": entry.source, "status": "skipped",
            "reason": entry.skipped, **common}


# -- progress ---------------------------------------------------------------------------------------------------------
class Progress:
    """Completed/passed/fell counts, the running scenarios and an ETA: one redrawn line on a terminal, plain lines
    (one per finished scenario) otherwise, so logs of CI runs stay readable."""

    def __init__(self, total: int, stream: TextIO, tty: bool | None = None, total_sim: float = 0.0) -> None:
        self.total, self.stream = total, stream
        self.total_sim, self.done_sim = total_sim, 0.0  # simulated seconds to run / run: the ETA's measure
        self.tty = stream.isatty() if tty is None else tty
        self.done = self.passed = self.fell = self.errors = 0
        self.running: list[str] = []
        self.t0 = time.monotonic()

    def started(self, name: str) -> None:
        self.running.append(name)
        self._draw()

    def finished(self, doc: dict[str, Any]) -> None:
        name = doc["scenario"]
        if name in self.running:
            self.running.remove(name)
        self.done += 1
        status = doc["status"]
        self.passed += status == "passed"
        self.errors += status == "error"
        fell = doc.get("outcome", {}).get("fell_at")
        self.fell += fell is not None
        if "outcome" in doc or status == "error":
            self.done_sim += float(doc.get("duration", 0.0))
        if self.tty:
            self._draw()
        else:
            extra = f" fell at {fell:.2f} s" if fell is not None else ""
            extra += f" ({doc.get('reason') or doc.get('error')})" if status in ("skipped", "error") else ""
            print(f"[{self.done}/{self.total}] {name}: {status}{extra}  eta {self._eta()}", file=self.stream,
                  flush=True)

    def _eta(self) -> str:
        """Remaining simulated seconds at the rate so far (skipped files take no time)."""
        if self.done_sim <= 0.0:
            return "?"
        left = (time.monotonic() - self.t0) / self.done_sim * max(self.total_sim - self.done_sim, 0.0)
        return f"{int(left // 60)}m{int(left % 60):02d}s"

    def _draw(self) -> None:
        if not self.tty:
            return
        width = 24
        fill = round(width * self.done / max(self.total, 1))
        running = ", ".join(self.running[:3]) + (" ..." if len(self.running) > 3 else "")
        line = (f"\r[{'#' * fill}{'.' * (width - fill)}] {self.done}/{self.total} passed {self.passed} "
                f"fell {self.fell} eta {self._eta()}  {running}")
        cols = shutil.get_terminal_size((100, 24)).columns - 1  # one screen line, or \r cannot redraw it
        self.stream.write(line[: cols + 1].ljust(cols + 1))
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


# -- runners ----------------------------------------------------------------------------------------------------------
def longest_first(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The order tasks start in: longest simulated duration first, so the last ones to start are short."""
    return sorted(tasks, key=lambda t: -t["scenario"].duration)


def run_tasks(tasks: list[dict[str, Any]], workers: int, progress: Progress,
              on_done: Callable[[dict[str, Any]], None]) -> None:
    """Run the tasks in ``workers`` spawned processes, :func:`longest_first`."""
    order = longest_first(tasks)
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        pending: dict[cf.Future[dict[str, Any]], str] = {}
        queue = list(order)
        while queue or pending:
            while queue and len(pending) < workers:
                t = queue.pop(0)
                pending[pool.submit(run_one, t)] = t["scenario"].name
                progress.started(t["scenario"].name)
            done, _ = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                pending.pop(fut)
                on_done(fut.result())


def ray_available() -> bool:
    from vasimov_tools import bench_ray

    return bench_ray.ray_available()


# -- table ------------------------------------------------------------------------------------------------------------
def format_table(docs: Sequence[dict[str, Any]]) -> str:
    """The compact text table: one row per scenario in suite order (skipped and errored ones included)."""
    w = max([24, *(len(d["scenario"]) for d in docs)])
    head = f"{'scenario':<{w}} {'status':<8} {'fell':>6} {'along':>7} {'lat':>6} {'head':>6} {'track':>6}  notes"
    lines = [head, "-" * len(head)]
    for d in docs:
        o = d.get("outcome")
        if o is None:
            lines.append(f"{d['scenario']:<{w}} {d['status']:<8} {'':>6} {'':>7} {'':>6} {'':>6} {'':>6}  "
                         f"{d.get('reason') or d.get('error', '')}")
            continue
        fell = f"{o['fell_at']:.2f}" if o["fell_at"] is not None else "-"
        notes = list(o["failures"])
        if o.get("upright_at_end") is not None:  # the recovery chain ran (scenario `recovery: true`)
            times = ", ".join(f"{x:.1f}" for x in o.get("recovery_s") or []) or "-"
            notes.insert(0, f"falls {o.get('falls', 0)}, recovered {o.get('recoveries', 0)} (s: {times}), "
                            f"{'upright' if o['upright_at_end'] else 'down'} at end")
        lines.append(f"{d['scenario']:<{w}} {d['status']:<8} {fell:>6} {o['along']:7.2f} {o['lateral']:6.2f} "
                     f"{o['heading']:6.2f} {o['tracking_error']:6.3f}  {'; '.join(notes)}")
    counts = {s: sum(d["status"] == s for d in docs) for s in ("passed", "failed", "error", "skipped")}
    fell = sum(1 for d in docs if d.get("outcome", {}).get("fell_at") is not None)
    lines.append(f"{len(docs)} scenarios: {counts['passed']} passed, {counts['failed']} failed ({fell} fell), "
                 f"{counts['error']} errors, {counts['skipped']} skipped")
    return "\n".join(lines)


# -- command line -----------------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="vasimov bench run", description=__doc__.splitlines()[0].strip("`"))
    ap.add_argument("items", nargs="+", metavar="SUITE|FILE|DIR",
                    help=f"shipped suites ({', '.join(sc.suite_names())}), scenario files or folders of them")
    ap.add_argument("--out", default="bench_results", help="folder for the JSON results and report.html "
                                                           "(default: %(default)s)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="parallel worker processes, or CPUs of --ray local (default: the core count, %(default)s)")
    ap.add_argument("--policy", default=None,
                    help="backend for every scenario: builtin, builtin:KEY=VALUE,... (the built-in controller with "
                         "config overrides), builtin-v2, builtin-v2:KEY=VALUE,... (walker v2 with WalkerConfig "
                         "overrides), hold, FILE.onnx or hf://REPO@REV (default: each file's policy, else builtin)")
    ap.add_argument("--ray", metavar="ADDRESS", default=None,
                    help="run the scenarios as Ray tasks: local (a private instance of --workers CPUs for this run) "
                         "or a cluster address (ray.init(address=...)); needs `pip install vasimov[ray]`")
    ap.add_argument("--no-report", action="store_true", help="skip report.html")
    return ap


def policy_error(spec: str) -> str | None:
    """Why ``spec`` names no usable policy (resolving it: an ONNX file is loaded, a hub spec fetched), else None."""
    try:
        base, _ = sc.parse_policy(spec)
        if base != DEFAULT_POLICY:
            from vasimov_edge.policy.registry import make_backend

            make_backend(base)
    except sc.ScenarioError as exc:
        return f"policy {spec!r}: {exc.field}: {exc.reason}"
    except Exception as exc:  # BackendSpecError, CheckpointError, onnxruntime errors: all user-facing
        return f"policy {spec!r}: {exc}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.workers < 1:
        print("vasimov bench run: --workers must be >= 1", file=sys.stderr)
        return 2
    if args.ray is not None and not ray_available():
        print("vasimov bench run: --ray needs the `ray` package, which is not installed (it is not a dependency of "
              "vasimov: `pip install ray`, or `pip install -e .[ray]` in a checkout); without --ray the scenarios "
              "run in local worker processes", file=sys.stderr)
        return 2
    try:
        entries = sc.load_entries(args.items)
    except sc.ScenarioError as exc:
        print(f"vasimov bench run: {exc}", file=sys.stderr)
        return 2
    specs = {args.policy or e.policy or DEFAULT_POLICY for e in entries if e.scenario is not None}
    for spec in sorted(specs - {DEFAULT_POLICY}):  # resolve (and verify) once, fail before any scenario runs
        problem = policy_error(spec)
        if problem is not None:
            print(f"vasimov bench run: {problem}", file=sys.stderr)
            return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    common = {"model_sha256": model_sha256(), "code_version": code_version()}
    docs: dict[str, dict[str, Any]] = {}
    tasks = []
    for e in entries:
        if e.scenario is None:
            docs[e.name] = skipped_doc(e, common)
        else:
            tasks.append({"scenario": e.scenario, "source": e.source,
                          "policy": args.policy or e.policy or DEFAULT_POLICY, **common})
    progress = Progress(len(entries), sys.stderr, total_sim=sum(t["scenario"].duration for t in tasks))

    def on_done(doc: dict[str, Any]) -> None:
        docs[doc["scenario"]] = doc
        write_result(out, doc)
        progress.finished(doc)

    for name, doc in list(docs.items()):
        on_done(doc)
        docs[name] = doc
    if tasks:
        if args.ray is not None:
            from vasimov_tools import bench_ray

            bench_ray.run_tasks(tasks, args.ray, min(args.workers, len(tasks)), progress, on_done)
        else:
            run_tasks(tasks, min(args.workers, len(tasks)), progress, on_done)
    progress.close()
    ordered = [docs[e.name] for e in entries]
    print(format_table(ordered))
    if not args.no_report:
        from vasimov_tools import bench_report

        path = bench_report.write(out, ordered)
        print(f"report: {path}")
    return 0 if all(d["status"] in ("passed", "skipped") for d in ordered) else 1


def write_result(out: Path, doc: dict[str, Any]) -> Path:
    path = out / f"{doc['scenario']}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(_finite(doc), indent=1, allow_nan=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def _finite(v: Any) -> Any:
    """JSON has no inf/NaN: they become null."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_finite(x) for x in v]
    return v


if __name__ == "__main__":
    sys.exit(main())
