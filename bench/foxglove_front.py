"""CPU cost of the Foxglove bridge's front (vasimov_bridge/foxglove_front.py), the relay that lets clients offering
only foxglove.websocket.v1 in: this process runs the SDK's server and logs a stream shaped like the graph's (many
small messages per second, a joint-state-sized one at 200 Hz), with and without the front, first with no client,
then with one client (another process) subscribed to every channel. Prints this process's CPU per phase (and the
front's listening thread's own CPU while no client is connected); asserts nothing.

Usage: .venv/bin/python bench/foxglove_front.py [--seconds 10] [--rate 2000] [--size 400]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time

import foxglove

from vasimov_bridge.foxglove_front import SubprotocolFront

CLIENT = r"""
import json, sys
from websockets.sync.client import connect
with connect(sys.argv[1], subprotocols=[sys.argv[2]], compression=None, max_size=None) as ws:
    while True:
        m = ws.recv()
        if isinstance(m, str):
            msg = json.loads(m)
            if msg["op"] == "advertise":
                ws.send(json.dumps({"op": "subscribe", "subscriptions": [
                    {"id": 100 + c["id"], "channelId": c["id"]} for c in msg["channels"]]}))
                print("subscribed", len(msg["channels"]), flush=True)
"""


def thread_cpu_s(native_id: int) -> float:
    """CPU seconds (user + system) one thread of this process has used."""
    with open(f"/proc/self/task/{native_id}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def phase(seconds: float, rate: float, size: int, channels: list[foxglove.Channel]) -> float:
    """Log `rate` messages/s round-robin over the channels for `seconds`; this process's CPU seconds."""
    payload = b"\x00\x01\x00\x00" + b"x" * size
    cpu0, t0 = time.process_time(), time.monotonic()
    n = 0
    while (now := time.monotonic()) - t0 < seconds:
        due = int((now - t0) * rate)
        while n < due:
            channels[n % len(channels)].log(payload, log_time=n)
            n += 1
        time.sleep(0.002)
    return time.process_time() - cpu0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=2000.0, help="messages per second over all channels")
    ap.add_argument("--size", type=int, default=400, help="bytes per message")
    a = ap.parse_args()
    schema = foxglove.Schema(name="std_msgs/msg/String", encoding="ros2msg", data=b"string data")
    for front_on in (False, True):
        ctx = foxglove.Context()
        channels = [foxglove.Channel(f"/t{i}", schema=schema, message_encoding="cdr", context=ctx)
                    for i in range(20)]
        server = foxglove.start_server(port=0, context=ctx)
        front = SubprotocolFront("127.0.0.1", 0, server.port, info=lambda _t: None, warn=lambda _k, _t: None,
                                 count=lambda _k: None) if front_on else None
        port = front.port if front is not None else server.port
        label = "front" if front_on else "SDK direct"
        acceptor0 = thread_cpu_s(front.acceptor.native_id) if front is not None else 0.0
        idle = phase(a.seconds, a.rate, a.size, channels)
        acceptor_idle = thread_cpu_s(front.acceptor.native_id) - acceptor0 if front is not None else 0.0
        proc = subprocess.Popen([sys.executable, "-c", CLIENT, f"ws://127.0.0.1:{port}",
                                 "foxglove.websocket.v1" if front_on else "foxglove.sdk.v1"],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        ready = threading.Event()
        threading.Thread(target=lambda p=proc, r=ready: (p.stdout.readline(), r.set()), daemon=True).start()
        if not ready.wait(15):
            raise SystemExit("the client did not subscribe")
        watched = phase(a.seconds, a.rate, a.size, channels)
        proc.terminate()
        proc.wait()
        if front is not None:
            front.stop()
        server.stop()
        print(json.dumps({"mode": label, "rate": a.rate, "size": a.size,
                          "cpu_pct_no_client": round(100 * idle / a.seconds, 1),
                          "front_thread_cpu_s_no_client": acceptor_idle,
                          "cpu_pct_one_client_all_channels": round(100 * watched / a.seconds, 1)}))


if __name__ == "__main__":
    main()
