"""Speed of the twin, in one run on one machine (prints figures; asserts nothing).

1. single-process limit: the same closed loop (physics 200 Hz, PD motor model, firmware, a 78-D MLP policy with the
   official architecture at 50 Hz) in one process with no messaging (vasimov_tools.closed_loop);
2. the full multi-process graph in lockstep (`vasimov up --lockstep`), with all topics at full rate, and with the
   standard topics (/joint_states, /imu, ground truth) decimated to 50 Hz;
3. their ratio;
4. real time: control-tick lateness p50/p99, the achieved real-time factor and ticks stepped without their answer
   over a wall-clock window (idle machine; bench/realtime_load.py does it with a core burning).

Usage: .venv/bin/python bench/graph_speed.py [--sim-seconds 20] [--realtime-seconds 60]
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, VENV_BIN, graph_env


def single_process_rtf(policy: str, sim_seconds: float) -> float:
    from vasimov.commands import CommandSource, StandCommand, VelocityCommand
    from vasimov_edge.policy.registry import make_backend
    from vasimov_tools.closed_loop import ClosedLoop

    loop = ClosedLoop.create(make_backend(policy))
    loop.submit(StandCommand(source=CommandSource.SCRIPT))
    t0 = time.perf_counter()
    while loop.firmware_time < sim_seconds:
        if loop.tick == 200:  # 4 s: gantry released, armed -> MOVE with the policy running
            loop.submit(VelocityCommand(0.0, 0.0, 0.0, source=CommandSource.SCRIPT))
        loop.step_tick()
    return sim_seconds / (time.perf_counter() - t0)


def graph_lockstep_rtf(policy: str, script: str, sim_seconds: float, *extra: str) -> float:
    out = subprocess.run([str(VENV_BIN / "vasimov"), "up", "--lockstep", "--duration", str(sim_seconds),
                          "--policy", policy, "--script", script, *extra],
                         env=graph_env(101), capture_output=True, text=True, timeout=1800, cwd=ROOT)
    m = re.search(r"real-time factor ([0-9.]+)", out.stdout)
    if out.returncode != 0 or m is None:
        raise RuntimeError(f"lockstep run failed ({out.returncode}):\n{out.stdout[-3000:]}{out.stderr[-2000:]}")
    return float(m.group(1))


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim-seconds", type=float, default=20.0)
    ap.add_argument("--realtime-seconds", type=float, default=60.0)
    ns = ap.parse_args()
    from vasimov_edge.policy.synthetic import make_mlp_policy

    with tempfile.TemporaryDirectory() as tmp:
        policy = make_mlp_policy(Path(tmp) / "mlp.onnx", seed=0)
        script = Path(tmp) / "script.yaml"
        script.write_text("- {t: 0.1, cmd: stand}\n- {t: 4.0, cmd: velocity, vx: 0.0}\n")
        single = single_process_rtf(str(policy), ns.sim_seconds)
        full = graph_lockstep_rtf(str(policy), str(script), ns.sim_seconds)
        light = graph_lockstep_rtf(str(policy), str(script), ns.sim_seconds, "telemetry_decimation:=4")
        print(f"single-process closed loop (no messaging): real-time factor {single:.1f}")
        print(f"multi-process graph, lockstep, all topics at full rate: real-time factor {full:.2f} "
              f"({full / single:.3f} of the single-process limit)")
        print(f"multi-process graph, lockstep, standard topics at 50 Hz: real-time factor {light:.2f} "
              f"({light / single:.3f} of the single-process limit)")
        if ns.realtime_seconds > 0:
            stats = realtime_lateness(str(policy), ns.realtime_seconds)
            print(f"real time over {ns.realtime_seconds:.0f} s: control-tick lateness p50 {stats['p50_ms']:.2f} ms, "
                  f"p99 {stats['p99_ms']:.2f} ms, max {stats['max_ms']:.2f} ms, ticks {stats['ticks']}, "
                  f"real-time factor {stats['rtf']:.3f}, {stats['unanswered']} without answer")
        print(json.dumps({"single_rtf": single, "lockstep_rtf": full, "lockstep_rtf_2": light,
                          "ratio": full / single}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
