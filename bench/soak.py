"""Soak: the whole graph in real time for a long run, used the way people use it, and what wore out.

Usage: .venv/bin/python bench/soak.py [--duration 1800] [--seed 0] [--out DIR] [--json FILE]   (make soak)

One `vasimov up --record DIR/bag` graph (real time, built-in controller), and at once:

* an SDK client (menlo-sdk's Python API): stand, balance, then random velocities inside the SDK envelope
  (vasimov_tools.walk_bench.random_commands, seeded), one every `--command-period` seconds, each held with the SDK's
  own keepalive; after a fall it restarts the twin (POST /api/sim/restart) and stands up again;
* a Foxglove client (test/foxglove_client.py) subscribed to /joint_states, counting what arrives;
* the recorder of `--record`.

Reported at the end (and as JSON with --json): falls (fault latches seen at GET /api/sim/firmware; no pushes are
made, so every fall counts), stale-command watchdog damps, ticks without answer and lateness / real-time factor
(the plant's `realtime stats` line), dropped messages (the recorder's metadata: vasimov.dropped and
vasimov.dds_lost), observer exits (the supervisor's status at GET /api/sim/counters), the SDK state rate, Foxglove
messages received, and memory: each node's RSS after warm-up vs at the end (growth in %).

Criteria (exit 1 when one fails): 0 falls, 0 dropped messages, 0 observer exits, memory growth < 5 % per node
for runs of 10 minutes or more (shorter runs report it only: start-up allocations dominate). Runs in a private
network namespace when root (like tools/run_tests.sh), so its fixed SDK ports never meet another run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test"))
from common import ROOT, VENV_BIN, graph_env

API = "http://127.0.0.1:3000"
FOXGLOVE_PORT = re.compile(r"foxglove server on ([0-9.]+):(\d+)")
REALTIME_STATS = re.compile(r"plant: realtime stats: (\{.*\})")
MEMORY_LIMIT_PCT = 5.0
MEMORY_MIN_RUN_S = 600.0  # the memory criterion applies from this run length on
RSS_SERIES_PERIOD_S = 60.0  # the report's memory series: one sample a minute
WARMUP_S = 20.0  # memory baseline this long after the walk starts (imports, caches and first allocations done)


def http(path: str, data: dict | None = None, timeout: float = 5.0) -> Any:
    body = None if data is None else json.dumps(data).encode()
    req = urllib.request.Request(API + path, data=body, method="POST" if data is not None else "GET",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read())


def wait_for(cond: Any, timeout: float, what: str, poll: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = cond()
        except OSError:
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(poll)


def node_rss(root_pid: int) -> dict[str, int]:
    """RSS (bytes) of every node process under the supervisor, by node name (the __node:= remap)."""
    import psutil

    out: dict[str, int] = {}
    for p in psutil.Process(root_pid).children(recursive=True):
        try:
            cmd = p.cmdline()
            rss = p.memory_info().rss
        except psutil.Error:
            continue
        name = next((a.split(":=", 1)[1] for a in cmd if a.startswith("__node:=")), None)
        if name:
            out[name] = rss
    return out


class FallMonitor(threading.Thread):
    """Polls the firmware state: every transition into a latched fault is a fall (nothing is pushed here)."""

    def __init__(self) -> None:
        super().__init__(daemon=True, name="fall-monitor")
        self.stop = threading.Event()
        self.falls: list[dict[str, Any]] = []
        self.faulted = threading.Event()
        self.started = time.monotonic()

    def run(self) -> None:
        was = False
        while not self.stop.wait(0.2):
            try:
                fw = http("/api/sim/firmware", timeout=2.0)
            except (OSError, ValueError):
                continue
            now = bool(fw.get("error_flags"))
            if now and not was:
                self.falls.append({"t_s": round(time.monotonic() - self.started, 1), "mode": fw.get("mode"),
                                   "error_flags": fw.get("error_flags"),
                                   "alerts": [a.get("name") for a in fw.get("alerts", [])]})
                self.faulted.set()
            was = now


class FoxgloveCounter(threading.Thread):
    """A Foxglove client on /joint_states; keeps counts only (messages are dropped as they are counted)."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True, name="foxglove-counter")
        from foxglove_client import FoxgloveWsClient

        self.client = FoxgloveWsClient(url)
        self.client.subscribe("/joint_states")
        self.received = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(1.0):
            self._drain()

    def _drain(self) -> None:
        with self.client.lock:
            for msgs in self.client.messages.values():
                self.received += len(msgs)
                msgs.clear()

    def close(self) -> int:
        self.stop.set()
        self.join(timeout=5)
        self._drain()
        self.client.close()
        return self.received


class SdkWalker(threading.Thread):
    """The SDK client: stand, balance, then seeded random velocities; after a fall, restart and stand again."""

    def __init__(self, seed: int, duration: float, period: float, falls: FallMonitor) -> None:
        super().__init__(daemon=True, name="sdk-walker")
        from vasimov_tools.walk_bench import random_commands

        self.commands = random_commands(seed, n=max(1, int(duration // period)), duration=duration)
        self.period = period
        self.falls = falls
        self.stop = threading.Event()
        self.sent = 0
        self.restarts = 0
        self.errors: list[str] = []
        self.walking = threading.Event()

    def _robot(self) -> Any:
        from menlo.asimov import ConnectionConfig, Robot, UdpConfig, WaitTimeoutError

        robot = Robot(ConnectionConfig(udp=UdpConfig("127.0.0.1")))
        robot.connect(timeout=10.0)
        robot.stand(timeout=60.0)
        for attempt in range(5):  # as a user would: on a loaded machine simulated time runs slower than the wall
            try:
                robot.balance(timeout=20.0)
                break
            except WaitTimeoutError:
                if attempt == 4:
                    raise
        return robot

    def run(self) -> None:
        from menlo.asimov import RobotFaultedError

        robot = self._robot()
        self.walking.set()
        t0 = time.monotonic()
        try:
            for at, vx, vy, vyaw in self.commands:
                if self.stop.wait(max(0.0, t0 + at - time.monotonic())):
                    break
                if self.falls.faulted.is_set():
                    robot = self._recover(robot)
                try:
                    robot.set_velocity(vx, vy, vyaw, duration=self.period, wait=False)
                    self.sent += 1
                except RobotFaultedError:
                    robot = self._recover(robot)
                except Exception as exc:  # counted and reported, the soak goes on
                    self.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            robot.close()

    def _recover(self, robot: Any) -> Any:
        robot.close()
        epoch = http("/api/sim/truth")["epoch"]
        http("/api/sim/restart", {})
        wait_for(lambda: http("/api/sim/truth")["epoch"] > epoch, 30, "the virtual restart")
        self.falls.faulted.clear()
        self.restarts += 1
        return self._robot()


class FrameCount:
    """SDK state frames sent, across virtual restarts (each starts a new stream whose counter starts again at 0);
    sampled every few seconds, so a restart loses at most the frames of one sample period."""

    def __init__(self, first: int) -> None:
        self.last = first
        self.total = 0

    def update(self, value: int) -> None:
        self.total += value - self.last if value >= self.last else value
        self.last = value


def run_soak(duration: float, seed: int, out: Path, command_period: float) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "graph.log"
    domain = 1 + (os.getpid() % 200)
    env = graph_env(domain)
    with log_path.open("wb") as log:
        proc = subprocess.Popen([str(VENV_BIN / "vasimov"), "up", "--record", str(out / "bag"), "foxglove_port:=0",
                                 "binary_port:=0"], env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT)
    text = lambda: log_path.read_text(errors="replace")  # noqa: E731
    report: dict[str, Any] = {"duration_s": duration, "seed": seed, "command_period_s": command_period}
    falls = FallMonitor()
    walker = fox = None
    try:
        m = wait_for(lambda: FOXGLOVE_PORT.search(text()) or proc.poll() is not None, 90, "the Foxglove port line")
        if proc.poll() is not None:
            raise RuntimeError(f"the graph exited at start-up:\n{text()[-3000:]}")
        wait_for(lambda: http("/api/sim/firmware"), 60, "the firmware state")
        falls.start()
        fox = FoxgloveCounter(f"ws://{m.group(1)}:{m.group(2)}")
        fox.start()
        walker = SdkWalker(seed, duration, command_period, falls)
        started = time.monotonic()
        walker.start()
        wait_for(walker.walking.is_set, 90, "the SDK client standing and balancing")
        walk_start = time.monotonic()
        frames = FrameCount(int(http("/api/sim/counters")["state_frames_sent"]))
        time.sleep(min(WARMUP_S, duration / 3))
        rss_start = node_rss(proc.pid)
        end = walk_start + duration
        rss_max = dict(rss_start)
        series: list[tuple[float, dict[str, int]]] = [(time.monotonic() - walk_start, rss_start)]
        while time.monotonic() < end and proc.poll() is None and walker.is_alive():
            time.sleep(min(5.0, max(0.0, end - time.monotonic())))
            frames.update(int(http("/api/sim/counters")["state_frames_sent"]))
            now_rss = node_rss(proc.pid)
            for k, v in now_rss.items():
                rss_max[k] = max(rss_max.get(k, 0), v)
            if time.monotonic() - walk_start - series[-1][0] >= RSS_SERIES_PERIOD_S:
                series.append((time.monotonic() - walk_start, now_rss))
        rss_end = node_rss(proc.pid)
        series.append((time.monotonic() - walk_start, rss_end))
        counters = http("/api/sim/counters")
        frames.update(int(counters["state_frames_sent"]))
        walk_s = time.monotonic() - walk_start
        report["wall_s_total"] = round(time.monotonic() - started, 1)
        report["graph_alive_at_end"] = proc.poll() is None
        report["sdk_state_hz"] = round(frames.total / walk_s, 1)
        report["graph_status"] = counters.get("graph")
        report["memory"] = {
            name: {"start_mb": round(rss_start[name] / 2**20, 1), "end_mb": round(rss_end.get(name, 0) / 2**20, 1),
                   "max_mb": round(rss_max.get(name, 0) / 2**20, 1),
                   "growth_pct": round(100.0 * (rss_end.get(name, 0) - rss_start[name]) / rss_start[name], 2)}
            for name in sorted(rss_start)}
        # the shape of the growth (a plateau is a warm-up that took longer; a line is a leak): RSS every minute and
        # the growth over the second half of the walk
        half = min(series, key=lambda ts: abs(ts[0] - walk_s / 2))[1]
        for name, m in report["memory"].items():
            if half.get(name):
                m["second_half_growth_pct"] = round(100.0 * (rss_end.get(name, 0) - half[name]) / half[name], 2)
        report["memory_series"] = {"t_s": [round(t, 1) for t, _ in series],
                                   **{name: [round(r.get(name, 0) / 2**20, 2) for _, r in series]
                                      for name in sorted(rss_start)}}
    finally:
        if walker is not None:
            walker.stop.set()
            walker.join(timeout=30)
        if fox is not None:
            report["foxglove_joint_states_received"] = fox.close()
        falls.stop.set()
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            report["exit_code"] = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            report["exit_code"] = proc.wait()
    if walker is not None:
        report["sdk"] = {"velocity_commands_sent": walker.sent, "restarts_after_falls": walker.restarts,
                         "errors": walker.errors[:10], "error_count": len(walker.errors)}
    report["falls"] = falls.falls
    stats = REALTIME_STATS.findall(text())
    report["plant_realtime"] = json.loads(stats[-1]) if stats else None
    report["recorder"] = recorder_figures(out / "bag")
    report["log"] = str(log_path)
    return report


def recorder_figures(bag: Path) -> dict[str, Any]:
    import yaml

    meta_path = bag / "metadata.yaml"
    if not meta_path.is_file():
        return {"error": f"no {meta_path}"}
    info = yaml.safe_load(meta_path.read_text())["rosbag2_bagfile_information"]
    custom = info.get("custom_data") or {}
    dropped = json.loads(custom.get("vasimov.dropped", "{}"))
    lost = json.loads(custom.get("vasimov.dds_lost", "{}"))
    return {"messages": int(info.get("message_count", 0)), "dropped": dropped, "dds_lost": lost,
            "dropped_total": sum(dropped.values()) + sum(lost.values()),
            "size_mb": round(sum(f.stat().st_size for f in bag.iterdir()) / 2**20, 1)}


def verdicts(report: dict[str, Any]) -> list[tuple[str, bool, str]]:
    rt = report.get("plant_realtime") or {}
    rec = report.get("recorder") or {}
    status = report.get("graph_status") or {}
    out = [
        ("graph ran to the end", bool(report.get("graph_alive_at_end")), f"exit code {report.get('exit_code')}"),
        ("no falls", not report["falls"], f"{len(report['falls'])} falls {report['falls'][:3]}"),
        ("no dropped messages", rec.get("dropped_total") == 0, f"recorder: {rec}"),
        ("no observer exits", status.get("observer_exits", 0) == 0, f"{status.get('observer_exits')} exits"),
        ("plant stats reported", bool(rt), f"{rt}"),
    ]
    if report["duration_s"] >= MEMORY_MIN_RUN_S:
        worst = max((m["growth_pct"], n) for n, m in report["memory"].items())
        out.append((f"memory growth < {MEMORY_LIMIT_PCT:g} % per node", worst[0] < MEMORY_LIMIT_PCT,
                    f"worst {worst[1]} {worst[0]:+.2f} %"))
    return out


def print_report(report: dict[str, Any]) -> None:
    rt = report.get("plant_realtime") or {}
    print(f"soak: {report['duration_s']:.0f} s walk (seed {report['seed']}), {report.get('wall_s_total')} s wall")
    print(f"  SDK: {report.get('sdk')}; state stream {report.get('sdk_state_hz')} Hz")
    print(f"  falls: {len(report['falls'])} {report['falls'][:5]}")
    if rt:
        print(f"  plant: RTF {rt['rtf']}, lateness p50 {rt['p50_ms']:.1f} ms p99 {rt['p99_ms']:.1f} ms max "
              f"{rt['max_ms']:.1f} ms, {rt['late_ticks']} late ticks, {rt['unanswered']} unanswered, "
              f"{rt['stale_commands']} stale-command damps, {rt['rejected_commands']} rejected")
    print(f"  recorder: {report.get('recorder')}")
    print(f"  Foxglove /joint_states received: {report.get('foxglove_joint_states_received')}")
    print(f"  observers: {(report.get('graph_status') or {}).get('observer_exits')} exits")
    print("  memory (RSS MB after warm-up -> end, growth):")
    for name, m in (report.get("memory") or {}).items():
        half = f", second half {m['second_half_growth_pct']:+.2f} %" if "second_half_growth_pct" in m else ""
        print(f"    {name:16s} {m['start_mb']:8.1f} -> {m['end_mb']:8.1f} ({m['growth_pct']:+.2f} %{half}), max "
              f"{m['max_mb']:.1f}")
    for what, ok, detail in verdicts(report):
        print(f"  [{'ok' if ok else 'FAIL'}] {what}" + ("" if ok else f": {detail}"))


def _in_private_netns() -> None:
    """Re-run this script in a private network namespace (only loopback) when root, as tools/run_tests.sh does."""
    if os.geteuid() != 0 or os.environ.get("VASIMOV_IN_NETNS") or shutil.which("unshare") is None:
        return
    if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
        return
    os.execvp("unshare", ["unshare", "-n", "--", "env", "VASIMOV_IN_NETNS=1", "bash", "-c",
                          'ip link set lo up && exec "$0" "$@"', sys.executable, *sys.argv])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=1800.0, help="seconds of random walking (default 30 min)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--command-period", type=float, default=10.0, help="seconds each random velocity is held")
    ap.add_argument("--out", type=Path, help="directory for the graph log and the bag (default: a temp dir)")
    ap.add_argument("--json", type=Path, help="also write the report here")
    ns = ap.parse_args()
    _in_private_netns()
    out = ns.out or Path(tempfile.mkdtemp(prefix="vasimov-soak-"))
    report = run_soak(ns.duration, ns.seed, out, ns.command_period)
    print_report(report)
    if ns.json:
        ns.json.write_text(json.dumps(report, indent=2))
    return 0 if all(ok for _, ok, _ in verdicts(report)) else 1


if __name__ == "__main__":
    sys.exit(main())
