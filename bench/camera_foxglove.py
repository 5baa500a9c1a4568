"""Images through the Foxglove bridge with a slow client: does a client taking camera images keep the small state
topics at full rate for everyone? Real-time graph (`vasimov up --policy hold`), two phases of equal wall time:

1. a fast client takes /joint_states alone;
2. the same, plus a slow client (a small socket buffer, 50 ms of "work" per frame it reads) taking the JPEG image
   (``--slow-state``: and /joint_states; ``--raw``: and the raw color and depth images).

Prints per phase the fast client's /joint_states rate, the slow client's rates, the age of the images the slow client
gets (how stale newest-wins keeps them) and the bridge's drop counters. Asserts nothing.

Usage: .venv/bin/python bench/camera_foxglove.py [--seconds 15]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, VENV_BIN, graph_env

sys.path.insert(0, str(ROOT / "test"))

PORT = re.compile(r"foxglove server on ([0-9.]+):(\d+)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--domain", type=int, default=108)
    ap.add_argument("--slow-state", action="store_true", help="the slow client takes /joint_states (200 Hz) too")
    ap.add_argument("--raw", action="store_true", help="the slow client takes the raw color and depth images too")
    ns = ap.parse_args(argv)

    from foxglove_client import FoxgloveWsClient

    from vasimov.ros import topics

    class SlowClient(FoxgloveWsClient):
        """Reads a frame, then works 50 ms on it: at most 20 frames a second, whatever the server sends."""

        def _read(self) -> None:
            orig = self.ws.recv

            def slow_recv(timeout: float | None = None):
                frame = orig(timeout=timeout)
                time.sleep(0.05)
                return frame

            self.ws.recv = slow_recv  # type: ignore[method-assign]
            super()._read()

    log = open(ROOT / ".ros_log" / "bench_camera_foxglove.log", "w")  # noqa: SIM115
    proc = subprocess.Popen([str(VENV_BIN / "vasimov"), "up", "--policy", "hold", "foxglove_port:=0",
                             "binary_stream:=false"], env=graph_env(ns.domain), cwd=ROOT, stdout=log,
                            stderr=subprocess.STDOUT)
    clients: list[FoxgloveWsClient] = []
    try:
        deadline = time.monotonic() + 120
        m = None
        while m is None and time.monotonic() < deadline:
            m = PORT.search((ROOT / ".ros_log" / "bench_camera_foxglove.log").read_text(errors="replace"))
            time.sleep(0.3)
        if m is None:
            print("no foxglove port line", file=sys.stderr)
            return 1
        url = f"ws://{m.group(1)}:{m.group(2)}"
        fast = FoxgloveWsClient(url)
        clients.append(fast)
        time.sleep(2.0)
        js = fast.subscribe(topics.JOINT_STATES, timeout=60)
        stats = fast.subscribe(topics.FOXGLOVE_STATS, timeout=60)
        time.sleep(3.0)

        def window(name: str, slow: FoxgloveWsClient | None, subs: dict[str, int]) -> None:
            n0 = len(fast.received(js))
            s0 = {k: len(slow.received(v)) for k, v in subs.items()} if slow else {}
            t0 = time.monotonic()
            time.sleep(ns.seconds)
            wall = time.monotonic() - t0
            out = {"phase": name, "fast_joint_states_hz": round((len(fast.received(js)) - n0) / wall, 1)}
            if slow is not None:
                out["slow_hz"] = {k: round((len(slow.received(v)) - s0[k]) / wall, 1) for k, v in subs.items()}
                # image age at arrival: arrival wall time minus the wall time its sim stamp was published at is not
                # known here; use the lag behind the newest /joint_states the fast client had at that moment
                color = slow.received(subs["jpeg"])[s0["jpeg"]:]
                js_all = fast.received(js)
                lags = []
                for log_time, _, arrival in color:
                    newest = [t for t, _, a in js_all if a <= arrival]
                    if newest:
                        lags.append((newest[-1] - log_time) / 1e9)
                if lags:
                    lags.sort()
                    out["jpeg_sim_lag_s"] = {"median": round(lags[len(lags) // 2], 3), "max": round(lags[-1], 3)}
            last = fast.received(stats)
            if last:
                counters = json.loads(last[-1][1])
                out["bridge_counters"] = counters
            print(json.dumps(out), flush=True)

        window("fast client alone", None, {})
        slow = SlowClient(url, receive_buffer=64 * 1024)
        clients.append(slow)
        subs = {"jpeg": slow.subscribe(topics.CAMERA_COLOR_COMPRESSED, timeout=60)}
        if ns.slow_state:
            subs["joint_states"] = slow.subscribe(topics.JOINT_STATES, timeout=60)
        if ns.raw:
            subs.update(color=slow.subscribe(topics.CAMERA_COLOR, timeout=60),
                        depth=slow.subscribe(topics.CAMERA_DEPTH, timeout=60))
        time.sleep(4.0)  # the camera starts rendering
        window("fast client + slow image client", slow, subs)
    finally:
        for c in clients:
            c.close()
        proc.send_signal(2)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
