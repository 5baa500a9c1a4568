"""Helpers for tests that run the real node graph: isolated environment, bounded waits, clean teardown."""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from vasimov_tools.procs import descendants

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
_domains = itertools.count((os.getpid() * 7) % 150)


def next_domain_id() -> int:
    return 1 + next(_domains) % 200  # valid range is 0..232


def graph_env(domain: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        ROS_DOMAIN_ID=str(domain),
        ROS_AUTOMATIC_DISCOVERY_RANGE="SYSTEM_DEFAULT",  # the loopback profile decides (README "Security")
        FASTDDS_DEFAULT_PROFILES_FILE=str(ROOT / "config" / "fastdds_localhost.xml"),
        ROS_LOG_DIR=str(ROOT / ".ros_log"),
        PYTHONUNBUFFERED="1",
    )
    return env


def wait_for(cond: Callable[[], Any], timeout: float, what: str, poll: float = 0.05) -> Any:
    """Poll `cond` until it returns something truthy; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        threading.Event().wait(poll)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_text(errors="replace").replace("\0", " ")


def child_pids(pid: int) -> list[int]:
    """All descendants of pid (from /proc), so teardown can prove nothing was left behind."""
    return descendants(pid)


class Graph:
    """`vasimov up ...` as a subprocess with its own ROS domain; output kept in a log file."""

    #: every graph started in this session, so a failing test's report can show the logs of those still running
    instances: ClassVar[list[Graph]] = []

    def __init__(self, *args: str, domain: int | None = None, env: dict[str, str] | None = None) -> None:
        self.domain = domain if domain is not None else next_domain_id()
        self.env = graph_env(self.domain)
        if env:
            self.env.update(env)
        self.log = tempfile.NamedTemporaryFile(prefix="vasimov-graph-", suffix=".log", delete=False)  # noqa: SIM115
        self.proc = subprocess.Popen([str(VENV_BIN / "vasimov"), "up", *args], env=self.env, cwd=ROOT,
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        self.node_pids: list[int] = []
        Graph.instances.append(self)

    def output(self) -> str:
        return Path(self.log.name).read_text(errors="replace")

    def wait_started(self, n_nodes: int = 4, timeout: float = 30.0) -> None:
        wait_for(lambda: len(child_pids(self.proc.pid)) >= n_nodes or self.proc.poll() is not None,
                 timeout, "the graph's processes")
        self.node_pids = child_pids(self.proc.pid)

    def stop(self, sig: int = signal.SIGINT, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            self.node_pids = child_pids(self.proc.pid) or self.node_pids
        return stop_process(self.proc, sig, timeout, "graph", self.output)

    def leftovers(self) -> list[int]:
        return [p for p in self.node_pids if pid_alive(p)]


def stop_process(proc: subprocess.Popen[bytes], sig: int, timeout: float, what: str,
                 output: Callable[[], str]) -> int:
    """Send `sig` and wait; a process (and its descendants) still running after `timeout` is killed and the test
    fails with the tail of its `output()`."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            for pid in [*child_pids(proc.pid), proc.pid]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            proc.wait()
            raise AssertionError(f"{what} did not stop within {timeout} s:\n{output()[-3000:]}") from None
    return proc.returncode


class UdpListener:
    """A UDP socket on 127.0.0.1 (any free port, `.port`) that keeps every datagram it receives, each passed through
    `decode` (bytes by default), in a thread: the SDK's side of the state stream."""

    def __init__(self, decode: Callable[[bytes], Any] = bytes) -> None:
        self.decode = decode
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.port = int(self.sock.getsockname()[1])
        self._items: list[Any] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            item = self.decode(data)
            with self._lock:
                self._items.append(item)

    def all(self) -> list[Any]:
        with self._lock:
            return list(self._items)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


def http_json(url: str, data: dict | None = None, timeout: float = 5.0) -> Any:
    body = None if data is None else json.dumps(data).encode()
    req = urllib.request.Request(url, data=body, method="POST" if data is not None else "GET",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read())


def http_json_when_ready(url: str, data: dict | None = None, timeout: float = 15.0) -> Any:
    """Like http_json, but retries while the twin answers 503 (a graph still connecting) or refuses connections."""
    def attempt() -> Any:
        try:
            return {"value": http_json(url, data)}
        except OSError:
            return None

    return wait_for(attempt, timeout, f"{url} to answer")["value"]


def run_menlo(*args: str, home: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HOME=home, NO_COLOR="1", TERM="dumb")
    env.pop("MENLO_UDP_HOST", None)
    return subprocess.run([str(VENV_BIN / "menlo"), *args], env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def menlo_status(home: str) -> dict:
    """`menlo status --json`, parsed (the command must succeed)."""
    r = run_menlo("status", "--json", home=home)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


class CpuBurner:
    """`with CpuBurner(cores, max_s):` keeps `cores` CPUs busy with spinning processes (a user's own Python work
    competing with the graph). Each spinner also ends on its own after `max_s`, so a crashed test leaves none."""

    _SPIN = "import time\nend = time.monotonic() + float({max_s})\nwhile time.monotonic() < end:\n    pass\n"

    def __init__(self, cores: int, max_s: float) -> None:
        self.cores = cores
        self.max_s = max_s
        self.procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> CpuBurner:
        for _ in range(self.cores):
            self.procs.append(subprocess.Popen([sys.executable, "-c", self._SPIN.format(max_s=self.max_s)],
                                               stdin=subprocess.DEVNULL))
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        self.procs.clear()


SIM_API = "http://127.0.0.1:3000/api/sim"


def sim_truth_or_none() -> Any:
    """The twin's ground truth, or None while it does not answer (one poll; for samplers and conditions)."""
    try:
        return http_json(f"{SIM_API}/truth")
    except OSError:
        return None


def truth_at_rest(timeout: float = 5.0) -> Any:
    """Ground truth once the base has stopped (< 0.05 m/s horizontally): a CLI returns right after its stop
    command, and a distance is measured once the robot has come to rest."""
    wait_for(lambda: math.hypot(*http_json(f"{SIM_API}/truth")["base_lin_vel"][:2]) < 0.05, timeout,
             "the robot to stop")
    return http_json(f"{SIM_API}/truth")


def walked_in_heading(start: Any, end: Any) -> tuple[float, float]:
    """(forward, lateral) metres from truth ``start`` to ``end``, along and across the heading at the start."""
    heading = start["base_yaw"]
    dx = end["base_pos"][0] - start["base_pos"][0]
    dy = end["base_pos"][1] - start["base_pos"][1]
    return dx * math.cos(heading) + dy * math.sin(heading), -dx * math.sin(heading) + dy * math.cos(heading)


def sim_firmware() -> Any:
    """GET /api/sim/firmware, retried while the twin is still connecting."""
    return http_json_when_ready(f"{SIM_API}/firmware")


class TwinSampler(threading.Thread):
    """Ground truth and firmware state at ~20 Hz over HTTP until `stop()` (used as a context manager): what a test
    needs to judge a motion in simulated time, whatever the real-time factor of a busy machine."""

    def __init__(self, period: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.rows: list[dict] = []
        self.period = period
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            try:
                truth = http_json(f"{SIM_API}/truth")
                fw = http_json(f"{SIM_API}/firmware")
                if fw["epoch"] == truth["epoch"]:  # else a restart came between the two reads: parts of two lives
                    self.rows.append({"epoch": truth["epoch"], "t": truth["sim_time"], "x": truth["base_pos"][0],
                                      "y": truth["base_pos"][1], "z": truth["base_pos"][2], "yaw": truth["base_yaw"],
                                      "mode": fw["mode"], "flags": fw["error_flags"],
                                      "velocity_command": fw["velocity_command"]})
            except OSError:
                pass
            self.halt.wait(self.period)

    def stop(self) -> None:
        self.halt.set()
        self.join(timeout=10)

    def __enter__(self) -> TwinSampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def sim_post(path: str, body: object) -> tuple[int, dict]:
    """POST JSON to the twin's HTTP API; (status, JSON body) whatever the status, for tests of refusals."""
    req = urllib.request.Request(f"http://127.0.0.1:3000{path}", data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def sim_restart() -> None:
    """A virtual restart, waited for: a new epoch, and the firmware back in DAMP."""
    before = http_json_when_ready(f"{SIM_API}/truth")["epoch"]
    http_json_when_ready(f"{SIM_API}/restart", {})
    wait_for(lambda: (sim_truth_or_none() or {}).get("epoch", -1) > before, 15, "virtual restart")

    def firmware_damp() -> bool:
        # the new life's firmware state: the bridge's last one may still be the old life's DAMP (a latched fall
        # reports DAMP too), read before the edge saw the new epoch's first tick
        try:
            fw = http_json(f"{SIM_API}/firmware")
        except OSError:
            return False
        return fw.get("epoch", -1) > before and fw.get("mode") == "DAMP"

    wait_for(firmware_damp, 10, "firmware back in DAMP")
