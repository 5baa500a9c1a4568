"""Command floods on every inlet against a balancing robot (issue 10): for each inlet, a separate process sends as
fast as it can for ``--seconds`` while the robot balances (`menlo stand` + `menlo balance`, default built-in
controller); prints per inlet the RobotState rate the SDK's port receives, the real-time factor measured from
outside (`/api/sim/truth`), whether the robot stayed upright, and the drops counted (kernel drops on the UDP
command socket, datagrams dropped unread, commands coalesced). Figures only; asserts nothing.

Inlets: ``udp`` (valid zero-velocity RobotCommands on :8850), ``udp_invalid`` (junk on :8850), ``vac1`` (VAC1
velocity packets on the binary WebSocket), ``foxglove`` (/cmd_vel Twists from a Foxglove client), ``none``.

Usage: .venv/bin/python bench/floods.py [--seconds 60] [--inlets udp,udp_invalid,vac1,foxglove]
(re-runs itself in a private network namespace when root: the SDK's ports are fixed)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test"))
from common import ROOT, VENV_BIN, graph_env
from harness import http_json, http_json_when_ready, run_menlo, wait_for

API = "http://127.0.0.1:3000"
INLETS = ("udp", "udp_invalid", "vac1", "foxglove")


def _in_private_netns() -> None:
    if os.geteuid() == 0 and not os.environ.get("VASIMOV_IN_NETNS"):
        cmd = ["unshare", "-n", "--", "env", "VASIMOV_IN_NETNS=1", "bash", "-c",
               'ip link set lo up && exec "$0" "$@"', sys.executable, *sys.argv]
        os.execvp("unshare", cmd)


# ── flooders (each in its own process, as fast as it can) ───────────────────────────────────────────────────────
def _flood_udp(seconds: float, valid: bool, sent: mp.Value) -> None:
    from asimov_protocol.v1 import asimov_command_pb2 as pb

    m = pb.RobotCommand(protocol_version=1, mode=2)
    m.policy.vx = 0.0
    data = m.SerializeToString() if valid else b"\xff\xfe junk" * 8
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        for _ in range(1000):
            s.sendto(data, ("127.0.0.1", 8850))
        n += 1000
    sent.value = n


def _flood_vac1(seconds: float, url: str, sent: mp.Value) -> None:
    from websockets.sync.client import connect

    from vasimov_bridge import binary_stream as bs
    from vasimov_bridge.binary_stream import CommandKind, CommandPacket

    end, n, closed = time.monotonic() + seconds, 0, 0
    while time.monotonic() < end:  # a flooder the server disconnects comes back, as an attacker would
        try:
            with connect(url, max_size=2**16) as ws:
                threading.Thread(target=lambda ws=ws: [ws.recv() for _ in iter(int, 1)], daemon=True).start()
                while time.monotonic() < end:
                    ws.send(bs.encode_command(CommandPacket(CommandKind.VELOCITY, n & 0xFFFFFFFF)))
                    n += 1
                    sent.value = n
        except Exception:  # closed by the server (keepalive timeout while throttled): reconnect
            closed += 1
    sent.value = n


def _flood_foxglove(seconds: float, url: str, sent: mp.Value) -> None:
    from foxglove_client import FoxgloveWsClient
    from geometry_msgs.msg import Twist
    from rclpy.serialization import serialize_message

    payload = serialize_message(Twist())
    client = FoxgloveWsClient(url)
    cid = client.advertise("/cmd_vel", "cdr", "geometry_msgs/msg/Twist")
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        client.publish(cid, payload)
        n += 1
        if n % 1000 == 0:
            sent.value = n
    client.close()
    sent.value = n


def _state_counter(stop: threading.Event, times: list[float]) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 8851))
    sock.settimeout(0.2)
    while not stop.is_set():
        try:
            sock.recv(65535)
        except TimeoutError:
            continue
        times.append(time.monotonic())
    sock.close()


def one_run(inlet: str, seconds: float, domain: int) -> dict:
    log = tempfile.NamedTemporaryFile(prefix="vasimov-floods-", suffix=".log", delete=False)  # noqa: SIM115
    proc = subprocess.Popen([str(VENV_BIN / "vasimov"), "up", "binary_port:=8766", "foxglove_port:=8765"],
                            env=graph_env(domain), stdout=log, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    out = lambda: Path(log.name).read_text(errors="replace")  # noqa: E731
    result: dict = {"inlet": inlet, "seconds": seconds}
    try:
        wait_for(lambda: "SDK bridge ready" in out() and "plant ready" in out()
                 and "binary stream ready" in out() and "foxglove server on" in out(), 90, "graph start")
        with tempfile.TemporaryDirectory(prefix="menlo-home-") as home:
            run_menlo("robots", "add", "sim", "--mode", "udp", "--udp", "127.0.0.1", home=home)
            result["stand_rc"] = run_menlo("stand", "-y", home=home).returncode
            result["balance_rc"] = run_menlo("balance", "-y", home=home).returncode
        stop, times = threading.Event(), []
        counter = threading.Thread(target=_state_counter, args=(stop, times), daemon=True)
        counter.start()
        ctx = mp.get_context("spawn")
        sent = ctx.Value("q", 0)
        target = {"udp": (_flood_udp, (True,)), "udp_invalid": (_flood_udp, (False,)),
                  "vac1": (_flood_vac1, ("ws://127.0.0.1:8766",)),
                  "foxglove": (_flood_foxglove, ("ws://127.0.0.1:8765",))}.get(inlet)
        flooder = None
        if target is not None:
            fn, args = target
            flooder = ctx.Process(target=fn, args=(seconds, *args, sent), daemon=True)
        t0, s0 = time.monotonic(), http_json(f"{API}/api/sim/truth")["sim_time"]
        if flooder is not None:
            flooder.start()
        lowest = 10.0
        while time.monotonic() - t0 < seconds:  # a benchmark's wall-clock window, not a test wait
            lowest = min(lowest, http_json(f"{API}/api/sim/truth")["base_pos"][2])
            time.sleep(0.25)
        t1, s1 = time.monotonic(), http_json(f"{API}/api/sim/truth")["sim_time"]
        if flooder is not None:
            flooder.join(timeout=30)
        stop.set()
        counter.join()
        window = [t for t in times if t0 + 1.0 <= t < t1]
        result["state_rate_hz"] = len(window) / max(1e-9, t1 - t0 - 1.0)
        result["rtf_outside"] = (s1 - s0) / (t1 - t0)
        result["sent"] = int(sent.value)
        result["lowest_pelvis_m"] = lowest
        fw = http_json_when_ready(f"{API}/api/sim/firmware")
        result["mode"] = fw["mode"]
        result["error_flags"] = fw["error_flags"]
        result["upright"] = lowest >= 0.45 and fw["error_flags"] == 0
        udp = http_json(f"{API}/api/sim/counters")["udp"]
        result["udp_counters"] = udp
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    text = out()
    m = re.search(r"realtime stats: (\{.*\})", text)
    if m is not None:
        result["plant"] = json.loads(m.group(1))
    m = re.search(r"flood control: .*", text)
    result["binary_flood_control"] = m.group(0) if m else None
    m = re.findall(r"foxglove bridge stopped: (.*)", text)
    result["foxglove_counters"] = m[-1] if m else None
    os.unlink(log.name)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--inlets", default=",".join(INLETS), help=f"comma-separated, of {', '.join(INLETS)}, none")
    ns = ap.parse_args()
    _in_private_netns()
    for i, inlet in enumerate(ns.inlets.split(",")):
        r = one_run(inlet.strip(), ns.seconds, 120 + i)
        udp = r.get("udp_counters", {})
        print(f"flood {r['inlet']:<12} {ns.seconds:.0f} s: sent {r.get('sent', 0)}, state {r['state_rate_hz']:.1f} Hz, "
              f"RTF {r['rtf_outside']:.3f}, upright {r['upright']} (lowest pelvis {r['lowest_pelvis_m']:.3f} m, "
              f"{r['mode']}, flags {r['error_flags']:#x}); UDP read {udp.get('rx_datagrams', 0)}, kernel drops "
              f"{udp.get('rx_kernel_drops', 0)}, dropped unread {udp.get('rx_shed_source_budget', 0)}, forwarded "
              f"{udp.get('gate_forwarded', 0)}, coalesced {udp.get('gate_coalesced', 0)}", flush=True)
        print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
