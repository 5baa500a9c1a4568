"""Real time under load: the robot stands and balances (driven by the real `menlo` CLI) while another process burns
one core; prints the plant's control-tick lateness, the achieved real-time factor, stale-command damps and whether
the robot stayed up (figures only; asserts nothing).

The real-time factor is measured from outside the plant too: simulated time from `GET /api/sim/truth` over the
window's wall time, so the figure does not rest on the plant's own bookkeeping.

Usage: .venv/bin/python bench/realtime_load.py [--seconds 60] [--burn 1] [--runs 1]
(re-runs itself in a private network namespace when root, like tools/run_tests.sh: the SDK's ports are fixed)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test"))
from common import ROOT, VENV_BIN, graph_env
from harness import CpuBurner, http_json, http_json_when_ready, run_menlo, wait_for

API = "http://127.0.0.1:3000"


def _in_private_netns() -> None:
    if os.geteuid() == 0 and not os.environ.get("VASIMOV_IN_NETNS"):
        cmd = ["unshare", "-n", "--", "env", "VASIMOV_IN_NETNS=1", "bash", "-c",
               'ip link set lo up && exec "$0" "$@"', sys.executable, *sys.argv]
        os.execvp("unshare", cmd)


def one_run(seconds: float, burn: int, domain: int) -> dict:
    log = tempfile.NamedTemporaryFile(prefix="vasimov-rtload-", suffix=".log", delete=False)  # noqa: SIM115
    proc = subprocess.Popen([str(VENV_BIN / "vasimov"), "up"], env=graph_env(domain), stdout=log,
                            stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    out = lambda: Path(log.name).read_text(errors="replace")  # noqa: E731
    result: dict = {"burning_cores": burn}
    try:
        wait_for(lambda: "SDK bridge ready" in out() and "plant ready" in out(), 60, "graph start")
        with tempfile.TemporaryDirectory(prefix="menlo-home-") as home:
            run_menlo("robots", "add", "sim", "--mode", "udp", "--udp", "127.0.0.1", home=home)
            r = run_menlo("stand", "-y", home=home)
            result["stand_rc"] = r.returncode
            r = run_menlo("balance", "-y", home=home)
            result["balance_rc"] = r.returncode
            # the hook comes off when the walking policy takes the joints (balance), not at STAND
            wait_for(lambda: not http_json_when_ready(f"{API}/api/sim/firmware")["gantry_engaged"], 20,
                     "gantry release")
            with CpuBurner(burn, seconds + 30):
                t0, s0 = time.monotonic(), http_json(f"{API}/api/sim/truth")["sim_time"]
                lowest = 10.0
                while time.monotonic() - t0 < seconds:  # a benchmark's wall-clock window, not a test wait
                    lowest = min(lowest, http_json(f"{API}/api/sim/truth")["base_pos"][2])
                    time.sleep(0.25)
                t1, s1 = time.monotonic(), http_json(f"{API}/api/sim/truth")["sim_time"]
            result["rtf_outside"] = (s1 - s0) / (t1 - t0)
            result["lowest_pelvis_m"] = lowest
            result["fell"] = lowest < 0.45
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    text = out()
    m = re.search(r"realtime stats: (\{.*\})", text)
    if m is not None:
        result.update(json.loads(m.group(1)))
    result["stale_damp_lines"] = text.count("damping all joints")
    os.unlink(log.name)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--burn", type=int, default=1, help="cores to keep busy with a spinning process (0 = none)")
    ap.add_argument("--runs", type=int, default=1)
    ns = ap.parse_args()
    _in_private_netns()
    for i in range(ns.runs):
        r = one_run(ns.seconds, ns.burn, 110 + i)
        print(f"real time, {ns.seconds:.0f} s standing/balancing, {ns.burn} core(s) burning: "
              f"lateness p50 {r.get('p50_ms', float('nan')):.2f} ms, p99 {r.get('p99_ms', float('nan')):.2f} ms, "
              f"max {r.get('max_ms', float('nan')):.2f} ms; real-time factor {r['rtf_outside']:.3f} (outside), "
              f"stale-command damps {r.get('stale_commands')}, fell {r['fell']}", flush=True)
        print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
