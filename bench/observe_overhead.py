"""Cost of observation: lockstep real-time factor with a Foxglove client subscribed to every channel and recording
on, against the same run with neither (target: >= 80 %). Prints figures; asserts nothing.

Usage: .venv/bin/python bench/observe_overhead.py [--sim-seconds 30] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, VENV_BIN, CpuSampler, graph_env

sys.path.insert(0, str(ROOT / "test"))

RTF = re.compile(r"real-time factor ([0-9.]+)")
PORT = re.compile(r"foxglove server on ([0-9.]+):(\d+)")
BAG = re.compile(r"bag \S+: (\d+) messages on (\d+) topics, (\d+) dropped")


def run(sim_seconds: float, script: Path, *, observe: bool, record_dir: Path | None) -> tuple[float, dict]:
    args = [str(VENV_BIN / "vasimov"), "up", "--lockstep", "--duration", str(sim_seconds), "--policy", "hold",
            "--script", str(script), "binary_stream:=false"]
    args += ["foxglove_port:=0"] if observe else ["foxglove:=false"]
    if record_dir is not None:
        args += ["--record", str(record_dir)]
    proc = subprocess.Popen(args, env=graph_env(103 if observe else 104), cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    port_seen = threading.Event()
    port: list[int] = []

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            m = PORT.search(line)
            if m and not port:
                port.append(int(m.group(2)))
                port_seen.set()

    t = threading.Thread(target=pump, daemon=True)
    t.start()
    sampler = CpuSampler(proc.pid)
    stats: dict = {}
    client = None
    if observe and port_seen.wait(60):
        from foxglove_client import FoxgloveWsClient
        from harness import wait_for

        client = FoxgloveWsClient(f"ws://127.0.0.1:{port[0]}")
        wait_for(lambda: len(client.channels) >= 15, 30, "the graph's channels advertised")
        for channel in list(client.channels.values()):
            client.subscribe_once(channel["topic"])
    proc.wait(timeout=3600)
    stats["cpu_seconds"] = sampler.stop()
    t.join(timeout=10)
    if client is not None:
        stats["channels_subscribed"] = len(client._subscribed)
        stats["messages_received"] = sum(len(v) for v in client.messages.values())
        client.close()
    text = "".join(lines)
    bag_line = BAG.search(text)
    if bag_line:
        stats["recorded"] = {"messages": int(bag_line.group(1)), "topics": int(bag_line.group(2)),
                             "dropped": int(bag_line.group(3)), "dds_lost": "DDS reported lost" in text}
    m = RTF.search(text)
    if proc.returncode != 0 or m is None:
        raise RuntimeError(f"run failed ({proc.returncode}):\n{text[-3000:]}")
    return float(m.group(1)), stats


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim-seconds", type=float, default=30.0)
    ap.add_argument("--repeat", type=int, default=3,
                    help="bare/observed pairs, run alternately (the ratio of each pair; the median is reported)")
    ns = ap.parse_args()
    pairs = []
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.yaml"
        script.write_text("- {t: 0.1, cmd: stand}\n- {t: 4.0, cmd: velocity, vx: 0.0}\n")
        for k in range(ns.repeat):
            base, base_stats = run(ns.sim_seconds, script, observe=False, record_dir=None)
            observed, stats = run(ns.sim_seconds, script, observe=True, record_dir=Path(tmp) / f"bag{k}")
            pairs.append((base, observed))
            print(f"pair {k + 1}: bare RTF {base:.2f}, observed RTF {observed:.2f} ({100 * observed / base:.0f} %), "
                  f"recorder: {stats.get('recorded')}")
            print(f"  CPU seconds per process, bare:     {base_stats['cpu_seconds']}")
            print(f"  CPU seconds per process, observed: {stats['cpu_seconds']}")
    ratios = sorted(o / b for b, o in pairs)
    median = ratios[len(ratios) // 2]
    print(f"lockstep RTF without Foxglove or recording: {statistics.median(b for b, _ in pairs):.2f} (median)")
    print(f"lockstep RTF with a Foxglove client on every channel and recording: "
          f"{statistics.median(o for _, o in pairs):.2f} (median); observed/bare per pair: "
          f"{', '.join(f'{100 * r:.0f} %' for r in ratios)}; median {100 * median:.0f} % (target >= 80 %)")
    print(json.dumps({"pairs": pairs, "ratio_median": median, "last_observed": stats,
                      "last_bare_cpu_seconds": base_stats["cpu_seconds"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
