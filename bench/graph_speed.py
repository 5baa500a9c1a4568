"""Speed and cost of the twin, in one run on one machine (prints figures; asserts nothing).

1. single-process limit: the same closed loop (physics 200 Hz, PD motor model, firmware, a 78-D MLP policy with the
   official architecture at 50 Hz) in one process with no messaging (vasimov_tools.closed_loop): its real-time
   factor and its CPU seconds per simulated second;
2. the full multi-process graph in lockstep (`vasimov up --lockstep`, default launch, no client connected), with all
   topics at full rate, and with the standard topics (/joint_states, /imu, ground truth) decimated to 50 Hz: its
   real-time factor, the whole graph's CPU seconds per simulated second (every process of the launch, sampled from
   outside) and the per-process CPU table;
3. the same graph composed into one process on one executor (`vasimov up --compose`, vasimov_tools.compose), full
   rate: the same two figures;
4. their ratios (issue 24's targets: separate processes >= 0.25 of the single-process loop's speed and <= 6x its CPU
   per simulated second; composed >= 0.4 and <= 3x);
5. real time: control-tick lateness p50/p99, the achieved real-time factor and ticks stepped without their answer
   over a wall-clock window (bench/realtime_load.py does it with a core burning).

CPU per simulated second is the figure a shared, loaded machine disturbs least (a busy machine slows every process
alike, so the real-time factors mostly show the load); compare ratios from one run, never across runs.

Usage: .venv/bin/python bench/graph_speed.py [--sim-seconds 30] [--realtime-seconds 60] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, VENV_BIN, CpuSampler, graph_env


def single_process_rtf(policy: str, sim_seconds: float, paced: bool = False) -> tuple[float, float]:
    """Real-time factor and CPU seconds per simulated second of the closed loop in this process: flat out, or with
    ``paced`` held back to the wall clock tick by tick, as the real-time graph is.

    Why paced: on this project's machines the same code costs more per call when it runs once every 20 ms than back
    to back (caches and predictors are cold after each sleep: 25 numpy array operations 3.6 us back to back, 82 us
    after a 20 ms sleep, 2026-12-07), so a real-time graph measured against the flat-out loop is charged for the
    pacing as well as for its messages; the paced loop is the same work at the graph's pace (docs/performance.md)."""
    from vasimov.commands import CommandSource, StandCommand, VelocityCommand
    from vasimov_edge.policy.registry import make_backend
    from vasimov_tools.closed_loop import ClosedLoop

    loop = ClosedLoop.create(make_backend(policy))
    loop.submit(StandCommand(source=CommandSource.SCRIPT))
    t0, c0 = time.perf_counter(), time.process_time()
    while loop.firmware_time < sim_seconds:
        if loop.tick == 200:  # 4 s: gantry released, armed -> MOVE with the policy running
            loop.submit(VelocityCommand(0.0, 0.0, 0.0, source=CommandSource.SCRIPT))
        loop.step_tick()
        if paced:
            ahead = t0 + loop.firmware_time - time.perf_counter()
            if ahead > 0.0:
                time.sleep(ahead)
    return sim_seconds / (time.perf_counter() - t0), (time.process_time() - c0) / sim_seconds


def graph_lockstep(policy: str, script: str, sim_seconds: float, *extra: str) -> tuple[float, dict[str, float],
                                                                                      dict[str, float]]:
    """The graph's lockstep real-time factor (the plant's own figure), CPU seconds per process from tick 0 to the end
    (what each simulated second costs; sampled from outside) and the same for start-up (launch to tick 0)."""
    proc = subprocess.Popen([str(VENV_BIN / "vasimov"), "up", "--lockstep", "--duration", str(sim_seconds),
                             "--policy", policy, "--script", script, *extra],
                            env=graph_env(101), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    sampler = CpuSampler(proc.pid, period=0.1)
    lines: list[str] = []
    startup: dict[str, float] = {}
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if not startup and "lockstep: all participants ready" in line:
            startup = sampler.snapshot()
    proc.wait(timeout=60)
    cpu = sampler.stop()
    out = "".join(lines)
    m = re.search(r"real-time factor ([0-9.]+)", out)
    if proc.returncode != 0 or m is None:
        raise RuntimeError(f"lockstep run failed ({proc.returncode}):\n{out[-3000:]}")
    running = {k: round(v - startup.get(k, 0.0), 2) for k, v in cpu.items()}
    return float(m.group(1)), running, {k: round(v, 2) for k, v in startup.items()}


def cpu_table(runs: dict[str, dict[str, float]], sim_seconds: float) -> str:
    """Per-process CPU seconds of each run, one row per process, and the whole graph per simulated second."""
    names = sorted({n for cpu in runs.values() for n in cpu}, key=lambda n: -max(c.get(n, 0.0) for c in runs.values()))
    width = max(len(n) for n in [*names, "process"])
    head = f"  {'process':<{width}} " + " ".join(f"{k:>14}" for k in runs)
    rows = [f"  {n:<{width}} " + " ".join(f"{c.get(n, 0.0):14.2f}" for c in runs.values()) for n in names]
    total = f"  {'all (CPU s)':<{width}} " + " ".join(f"{sum(c.values()):14.2f}" for c in runs.values())
    per_s = f"  {'per sim s':<{width}} " + " ".join(f"{sum(c.values()) / sim_seconds:14.3f}" for c in runs.values())
    return "\n".join([head, *rows, total, per_s])


def realtime_lateness(policy: str, seconds: float) -> dict:
    proc = subprocess.Popen([str(VENV_BIN / "vasimov"), "up", "--policy", policy], env=graph_env(102),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.5)  # a benchmark's wall-clock window, not a test wait
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    m = re.search(r"realtime stats: (\{.*\})", out)
    if m is None:
        raise RuntimeError(f"no realtime stats in the plant's output:\n{out[-3000:]}")
    return json.loads(m.group(1))


def _met(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim-seconds", type=float, default=30.0)
    ap.add_argument("--realtime-seconds", type=float, default=60.0)
    ap.add_argument("--repeat", type=int, default=1,
                    help="measure the single-process loop and the graph this many times, alternately (medians)")
    ns = ap.parse_args()
    from vasimov_edge.policy.synthetic import make_mlp_policy

    with tempfile.TemporaryDirectory() as tmp:
        policy = make_mlp_policy(Path(tmp) / "mlp.onnx", seed=0)
        script = Path(tmp) / "script.yaml"
        script.write_text("- {t: 0.1, cmd: stand}\n- {t: 4.0, cmd: velocity, vx: 0.0}\n")
        singles, fulls, lights, composeds = [], [], [], []
        for _ in range(ns.repeat):  # alternate, so a change of the machine's load hits both sides
            singles.append(single_process_rtf(str(policy), ns.sim_seconds))
            fulls.append(graph_lockstep(str(policy), str(script), ns.sim_seconds))
            lights.append(graph_lockstep(str(policy), str(script), ns.sim_seconds, "telemetry_decimation:=4"))
            composeds.append(graph_lockstep(str(policy), str(script), ns.sim_seconds, "--compose"))
        single, single_cpu = (statistics.median(x[i] for x in singles) for i in (0, 1))
        full = statistics.median(r for r, _, _ in fulls)
        light = statistics.median(r for r, _, _ in lights)
        composed = statistics.median(r for r, _, _ in composeds)
        full_cpu = statistics.median(sum(c.values()) for _, c, _ in fulls) / ns.sim_seconds
        light_cpu = statistics.median(sum(c.values()) for _, c, _ in lights) / ns.sim_seconds
        composed_cpu = statistics.median(sum(c.values()) for _, c, _ in composeds) / ns.sim_seconds
        print(f"single-process closed loop (no messaging): real-time factor {single:.1f}, "
              f"CPU {single_cpu:.3f} s per simulated second")
        print(f"multi-process graph, lockstep, all topics at full rate: real-time factor {full:.2f} "
              f"({full / single:.3f} of the single-process limit; target >= 0.25: {_met(full / single >= 0.25)}); CPU "
              f"{full_cpu:.3f} s per simulated second ({full_cpu / single_cpu:.1f}x the single-process loop; target "
              f"<= 6x: {_met(full_cpu / single_cpu <= 6.0)})")
        print(f"multi-process graph, lockstep, standard topics at 50 Hz: real-time factor {light:.2f} "
              f"({light / single:.3f} of the single-process limit); CPU {light_cpu:.3f} s per simulated second "
              f"({light_cpu / single_cpu:.1f}x)")
        print(f"composed graph (one process, --compose), lockstep, all topics at full rate: real-time factor "
              f"{composed:.2f} ({composed / single:.3f} of the single-process limit; target >= 0.4: "
              f"{_met(composed / single >= 0.4)}); CPU {composed_cpu:.3f} s per simulated second "
              f"({composed_cpu / single_cpu:.1f}x; target <= 3x: {_met(composed_cpu / single_cpu <= 3.0)})")
        print(f"CPU seconds per process over {ns.sim_seconds:g} simulated seconds from tick 0 (default launch, no "
              f"client connected; the last run of each kind), and the start-up before tick 0 (not in the figures "
              f"above):")
        print(cpu_table({"full rate": fulls[-1][1], "std at 50 Hz": lights[-1][1], "composed": composeds[-1][1],
                         "start-up": fulls[-1][2], "composed start": composeds[-1][2]},
                        ns.sim_seconds))
        stats: dict = {}
        if ns.realtime_seconds > 0:
            stats = realtime_lateness(str(policy), ns.realtime_seconds)
            print(f"real time over {ns.realtime_seconds:.0f} s: control-tick lateness p50 {stats['p50_ms']:.2f} ms, "
                  f"p99 {stats['p99_ms']:.2f} ms, max {stats['max_ms']:.2f} ms, ticks {stats['ticks']}, "
                  f"real-time factor {stats['rtf']:.3f}, {stats['unanswered']} without answer")
        print(json.dumps({"single_rtf": single, "single_cpu_per_sim_s": single_cpu, "lockstep_rtf": full,
                          "lockstep_rtf_2": light, "ratio": full / single, "graph_cpu_per_sim_s": full_cpu,
                          "cpu_ratio": full_cpu / single_cpu, "cpu_seconds": fulls[-1][1],
                          "startup_cpu_seconds": fulls[-1][2],
                          "composed_rtf": composed, "composed_ratio": composed / single,
                          "composed_cpu_per_sim_s": composed_cpu, "composed_cpu_ratio": composed_cpu / single_cpu,
                          "realtime": stats, "runs": {"single": singles, "full": [r for r, _, _ in fulls],
                                                      "light": [r for r, _, _ in lights],
                                                      "composed": [r for r, _, _ in composeds]}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
