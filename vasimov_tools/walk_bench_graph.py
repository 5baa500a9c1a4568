"""Graph mode of the walking bench: the same scenarios, driven through the full node graph by the real menlo-sdk.

``vasimov bench walk --graph [--realtime] [names...]`` runs every scenario of :mod:`vasimov_tools.walk_bench` in a fresh
``vasimov up`` graph (its own ``ROS_DOMAIN_ID``, loopback discovery) and drives it the way a user does:
``Robot(ConnectionConfig(udp=UdpConfig("127.0.0.1"))).connect()``, ``stand()``, ``balance()``, then
``set_velocity(vx, vy, vyaw)`` (held, the SDK's 10 Hz keepalive) at the scenario's command times and
``POST /api/sim/push`` at its push times. It is scored on ``GET /api/sim/truth`` with the single-process bench's own
rules (:func:`vasimov_tools.walk_bench.check`), so the two tables read the same. Why it exists: the single-process
bench (:mod:`vasimov_tools.closed_loop`) leaves out UDP, the SDK, the arbiter and the process hops; this shows its
numbers hold on the path users drive.

What differs from the single-process bench, on purpose and measured:

* Scenario times are simulated time. The client schedules on the firmware clock the SDK's state stream carries
  (``RobotState.timestamp_us``), not on wall sleeps, so lockstep (faster than real time) and real time run the same
  schedule. A command still reaches the firmware some wall milliseconds after its due time (the bridge batches the
  lockstep stream in 5 ms, then UDP, the arbiter and the next tick): in lockstep those milliseconds are multiplied by
  the real-time factor. The command's lateness as the client sees it (newest simulated time it knows, from the
  state stream or a truth sample, at the send, minus the due time) is reported; the firmware applies it one tick or
  more later still.
* The scenario clock starts ``SETTLE_TIME`` after the firmware reported MOVE, as the state stream tells it; start
  and end poses are interpolated between the two truth samples around the start and end times.
* Fall and minimum-height checks run on polled truth samples (every ``TRUTH_PERIOD`` of wall time), not on every
  control tick: a fall is still caught (a fallen robot stays down) but ``fell_at`` can be later by one poll and
  ``min_pelvis_height`` can miss a brief dip.
* Compute time of the policy is not measured here (the policy node publishes its own wall time per tick on
  ``/vasimov/policy/step`` ``compute_time``; no thread CPU time leaves the node): the four compute columns are NaN and
  the compute criterion is not checked.
* The SDK re-sends a held velocity every 0.1 s of wall time, which in lockstep is ``0.1 x RTF`` s of simulated time;
  the firmware zeroes a velocity not refreshed within 2 s of simulated time. Every run reads the firmware's
  ``velocity_timeouts`` counter at the end and fails if it is not zero (the keepalive did not keep up).
* Scenarios that need backend options (``step_in_place_60s``) cannot be started through the launch file and are
  skipped with a message.

Why one file past 400 lines: one tool (start a graph, drive it with the SDK, score it); its parts are used nowhere
else.
"""

from __future__ import annotations

import contextlib
import dataclasses
import http.client
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vasimov.frames import projected_gravity
from vasimov_tools.procs import alive, descendants, mapped_shm_segments
from vasimov_tools.walk_bench import SETTLE_TIME, Criteria, Result, Scenario, check, format_table, standard_scenarios

HOST = "127.0.0.1"
HTTP_PORT = 3000  # the SDK's fixed version-check port; the bench is the SDK's default user
TRUTH_PERIOD = 0.02  # s of wall time between truth polls (keeps the bench's CPU off the loop on a small machine)
END_WINDOW = 0.3  # s of simulated time before the end (and around pushes) in which truth is polled back to back
BOOT_TIMEOUT = 120.0  # s of wall time for a fresh graph to answer the SDK (a loaded 2-core machine needs ~20 s)
STALL_TIMEOUT = 30.0  # s of wall time without a new state sample before a run is declared stalled (a loaded
# machine slows simulated time down, possibly far below real time, but never stops it)
STOP_TIMEOUT = 40.0  # s of wall time for `vasimov up` to stop every node after SIGINT
LOCKSTEP_MARGIN = 900.0  # s of simulated time the lockstep graph may run past a scenario (a bound, not a wait)
MIN_PELVIS_HEIGHT = 0.45  # the single-process bench's defaults (run_scenario)
MAX_GRAVITY_Z = -0.8


class GraphBenchError(RuntimeError):
    """The graph or the SDK session could not be brought to the scenario's start (not a scenario result)."""


@dataclass(frozen=True)
class TruthSample:
    wall: float  # time.monotonic() when the answer arrived
    sim_time: float
    pos: np.ndarray
    quat: np.ndarray
    yaw: float

    @classmethod
    def from_json(cls, d: dict[str, Any], wall: float) -> TruthSample:
        return cls(wall, float(d["sim_time"]), np.asarray(d["base_pos"], dtype=float),
                   np.asarray(d["base_quat"], dtype=float), float(d["base_yaw"]))


@dataclass
class GraphRun:
    """A graph-mode result: the bench's own :class:`Result` plus what only this path has."""

    result: Result
    path: str  # "graph-lockstep" or "graph-realtime"
    rtf: float  # simulated / wall seconds over the scenario window, measured from truth samples
    max_rtf: float  # largest over 0.5 s wall windows: sets the SDK keepalive's spacing in simulated time
    keepalive_gap_sim: float  # 0.1 s wall x max_rtf: the longest simulated gap between held-velocity packets
    velocity_timeouts: int  # firmware counter; 0 means the keepalive always beat the 2 s watchdog
    command_lateness_ms: list[float]  # per command change: newest known sim time at send minus due time, ms
    push_lateness_ms: list[float]  # per push: newest known sim time at the request minus due time, ms
    truth_samples: int
    boot_wall_s: float  # `vasimov up` to the first state at the SDK
    extras: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The bench's JSON fields plus this path's; not-measured values (NaN) become null, so it stays JSON."""
        out = asdict(self.result)
        out.update({k: v for k, v in asdict(self).items() if k != "result"})
        return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in out.items()}


# -- pure scoring ----------------------------------------------------------------------------------------------------
def unwrap_heading(samples: Sequence[TruthSample]) -> np.ndarray:
    """Signed heading change from the first sample, unwrapped sample to sample (as the bench does tick to tick)."""
    h = np.zeros(len(samples))
    for i in range(1, len(samples)):
        h[i] = h[i - 1] + (samples[i].yaw - samples[i - 1].yaw + math.pi) % (2.0 * math.pi) - math.pi
    return h


def _at(times: np.ndarray, samples: Sequence[TruthSample], heading: np.ndarray, t: float
        ) -> tuple[np.ndarray, float, float]:
    """(position, unwrapped heading, time) at ``t``, linear between the two samples around it; clamped to the first
    or last sample outside their span."""
    j = int(np.searchsorted(times, t, side="left"))
    if j >= len(samples):
        return samples[-1].pos, float(heading[-1]), float(times[-1])
    if j == 0 or times[j] == t:
        return samples[j].pos, float(heading[j]), float(times[j])
    a = (t - times[j - 1]) / (times[j] - times[j - 1])
    return (samples[j - 1].pos + a * (samples[j].pos - samples[j - 1].pos),
            float(heading[j - 1] + a * (heading[j] - heading[j - 1])), t)


def score(scenario: Scenario, samples: Sequence[TruthSample], t0: float, *, fell_at: float | None = None,
          min_pelvis_height: float = MIN_PELVIS_HEIGHT, max_gravity_z: float = MAX_GRAVITY_Z,
          wall_seconds: float = math.nan) -> Result:
    """Score truth samples around a scenario that starts at simulated time ``t0``, with the bench's rules.

    Start and end poses are interpolated linearly between the two samples around ``t0`` and ``t0 + duration`` (the
    end: around the fall when the run stopped on one); the fall and height checks use the samples after ``t0``.
    Needs a sample at or before ``t0``. Compute columns are NaN (not measured here)."""
    if not samples or samples[0].sim_time > t0 + 1e-9:
        raise ValueError("scoring needs a truth sample at or before the scenario's start")
    if scenario.min_pelvis_height is not None:
        min_pelvis_height = scenario.min_pelvis_height
    if scenario.max_gravity_z is not None:
        max_gravity_z = scenario.max_gravity_z
    end_t = t0 + scenario.duration
    heading = unwrap_heading(samples)
    times = np.array([s.sim_time for s in samples])
    body = [s for s in samples if t0 + 1e-9 < s.sim_time <= end_t + 1e-9]
    min_h = min((float(s.pos[2]) for s in body), default=math.inf)
    max_gz = max((float(projected_gravity(s.quat)[2]) for s in body), default=-math.inf)
    if fell_at is None:
        for s in body:
            if s.pos[2] < min_pelvis_height or projected_gravity(s.quat)[2] > max_gravity_z:
                fell_at = s.sim_time - t0
                break
    p0, h0, _ = _at(times, samples, heading, t0)
    pos, head, t_end = _at(times, samples, heading, end_t if fell_at is None else min(end_t, t0 + fell_at))
    yaw0 = samples[0].yaw + h0 - heading[0]
    c0, s0 = math.cos(yaw0), math.sin(yaw0)
    d = pos - p0
    nan = math.nan
    res = Result(
        name=scenario.name, passed=False, fell_at=fell_at,
        along=float(c0 * d[0] + s0 * d[1]), lateral=float(-s0 * d[0] + c0 * d[1]),
        drift=float(math.hypot(d[0], d[1])), heading=float(head - h0),
        min_pelvis_height=min_h, max_gravity_z=max_gz,
        compute_p50_ms=nan, compute_p99_ms=nan, cpu_p50_ms=nan, cpu_p99_ms=nan,
        failures=[], sim_seconds=float(t_end - t0), wall_seconds=wall_seconds)
    res.failures = check(dataclasses.replace(scenario.criteria, max_compute_p99=None), res)
    res.passed = not res.failures
    return res


def max_rate(samples: Sequence[TruthSample], window: float = 0.5) -> float:
    """Largest simulated-per-wall rate over wall windows of at least ``window`` s (NaN with too few samples)."""
    best, j = math.nan, 0
    for i in range(len(samples)):
        while j < i and samples[i].wall - samples[j + 1].wall >= window:
            j += 1
        dw = samples[i].wall - samples[j].wall
        if dw >= window:
            r = (samples[i].sim_time - samples[j].sim_time) / dw
            best = r if math.isnan(best) else max(best, r)
    return best


# -- the graph ------------------------------------------------------------------------------------------------------
def _die_with_parent() -> None:
    from vasimov_tools.supervisor import _die_with_parent as die

    die()


class Graph:
    """One ``vasimov up`` (the launch machinery users run) with its own ROS domain, output in a log file."""

    def __init__(self, launch_args: Sequence[str], domain: int) -> None:
        from vasimov_tools.supervisor import graph_environment, resolve_executable

        env = graph_environment()
        env.update(ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
        self.domain = domain
        self.log = tempfile.NamedTemporaryFile(prefix="vasimov-bench-graph-", suffix=".log", delete=False)  # noqa: SIM115
        self.started = time.monotonic()
        self.proc = subprocess.Popen([resolve_executable("vasimov"), "up", *launch_args], env=env,
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
                                     preexec_fn=_die_with_parent)
        self.node_pids: list[int] = []
        self.segments: set[str] = set()  # Fast DDS participant segments the nodes had mapped

    def output(self) -> str:
        return Path(self.log.name).read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def remember_nodes(self) -> None:
        if self.alive():
            self.node_pids = sorted(set(self.node_pids) | set(descendants(self.proc.pid)))
            self.segments |= mapped_shm_segments(self.node_pids)

    def stop(self) -> list[int]:
        """SIGINT (the supervisor stops every node cleanly), SIGKILL after ``STOP_TIMEOUT``; Fast DDS segments of dead
        processes are removed. Returns what was left behind: node processes still alive, and the nodes' shared-memory
        segments still in /dev/shm (both empty after a clean stop)."""
        from vasimov_tools.supervisor import clean_shared_memory

        self.remember_nodes()
        if self.alive():
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                for pid in [*descendants(self.proc.pid), self.proc.pid]:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                self.proc.wait()
        deadline = time.monotonic() + 5.0
        while any(alive(p) for p in self.node_pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [str(p) for p in self.node_pids if alive(p)]
        clean_shared_memory()
        left += sorted(seg for seg in self.segments if (Path("/dev/shm") / seg).exists())
        self.log.close()
        return left

    def remove_log(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.log.name)


class TwinHttp:
    """The twin's HTTP API on one kept-alive connection (the bench polls truth many times a second)."""

    def __init__(self, host: str = HOST, port: int = HTTP_PORT, timeout: float = 5.0) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.conn: http.client.HTTPConnection | None = None

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        for attempt in (0, 1):  # one retry on a connection the server closed in between
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                self.conn.request(method, path, body=data, headers=headers)
                resp = self.conn.getresponse()
                raw = resp.read()
                if resp.getheader("Connection", "").lower() == "close":
                    self.close()
                return resp.status, json.loads(raw) if raw else None
            except (OSError, http.client.HTTPException):
                self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def truth(self) -> TruthSample | None:
        status, body = self.request("GET", "/api/sim/truth")
        return TruthSample.from_json(body, time.monotonic()) if status == 200 else None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def twin_answering(port: int = HTTP_PORT) -> bool:
    """Whether something already answers the SDK's version check on this machine (a `make run` left going)."""
    try:
        conn = http.client.HTTPConnection(HOST, port, timeout=1.0)
        conn.request("GET", "/api/version")
        conn.getresponse().read()
        conn.close()
        return True
    except (OSError, http.client.HTTPException):
        return False


# -- one scenario ------------------------------------------------------------------------------------------------------
class SimClock:
    """The firmware clock as the SDK's state stream carries it, updated on the SDK's reader thread."""

    def __init__(self) -> None:
        self.t = -1.0
        self.move_at: float | None = None  # firmware time of the first sample reporting MOVE
        self.changed = threading.Event()
        self.last_sample = time.monotonic()

    def on_state(self, state: Any) -> None:
        self.t = state.fw_timestamp_us * 1e-6
        self.last_sample = time.monotonic()
        if self.move_at is None and state.mode.name == "MOVE":
            self.move_at = self.t
        self.changed.set()

    def stalled(self) -> bool:
        return time.monotonic() - self.last_sample > STALL_TIMEOUT

    def wait_until(self, t: float, alive: Any) -> None:
        while self.t < t - 1e-9:
            if self.stalled() or not alive():
                raise GraphBenchError(f"simulated time stuck at {self.t:.3f} s waiting for {t:.3f} s")
            self.changed.wait(0.05)
            self.changed.clear()


def _connect(deadline: float, graph: Graph) -> Any:
    from menlo.asimov import ConnectError, ConnectionConfig, Robot, UdpConfig

    last: Exception | None = None
    while time.monotonic() < deadline and graph.alive():
        robot = Robot(ConnectionConfig(udp=UdpConfig(HOST)))
        try:
            robot.connect(timeout=5.0)
            return robot
        except ConnectError as exc:  # graph still booting: the version check or the first state not there yet
            last = exc
            robot.close()
            time.sleep(0.5)
    raise GraphBenchError(f"the SDK could not connect to the graph: {last}")


def _wait_firmware_armed(api: TwinHttp, graph: Graph, timeout: float = 30.0) -> None:
    """Wait (wall-bounded) until the firmware itself reports armed.

    The SDK's arming mirror counts 0.5 s of *wall* time of upright STAND samples; the firmware counts 0.5 s of
    simulated time. When the graph runs slower than real time (lockstep or real time on a loaded machine), ``stand()``
    returns before the firmware has armed, and the single zero ``balance()`` sends is ignored in unarmed STAND (as on
    the robot), so ``balance()`` times out. The single-process bench sends balance the tick the firmware arms; this is
    the same moment seen through the twin's HTTP API."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and graph.alive():
        status, body = api.request("GET", "/api/sim/firmware")
        if status == 200 and body.get("armed"):
            return
        time.sleep(0.01)
    raise GraphBenchError("the firmware did not report armed after stand()")


def run_graph_scenario(scenario: Scenario, *, realtime: bool = False, domain: int = 1, policy: str | None = None,
                       seed: int = 0, settle_time: float = SETTLE_TIME) -> GraphRun:
    """Boot a fresh graph, drive one scenario through the SDK and the HTTP API, score it, stop the graph."""
    from menlo.asimov import MenloError

    if scenario.backend_options:
        raise GraphBenchError(f"{scenario.name} needs backend options {dict(scenario.backend_options)}, which the "
                              f"launch file cannot pass to the policy node")
    if twin_answering():
        raise GraphBenchError(f"something already answers on {HOST}:{HTTP_PORT} (a running twin?); the graph bench "
                              f"uses the SDK's fixed ports, stop it first")
    args = [] if realtime else ["--lockstep", "--duration", repr(scenario.duration + LOCKSTEP_MARGIN)]
    args += ["--seed", str(seed)]
    if policy is not None:
        args += ["--policy", policy]
    wall0 = time.monotonic()
    graph = Graph(args, domain)
    http_api = TwinHttp()
    robot = None
    clock = SimClock()
    left: list[str] = []
    ok = False
    try:
        robot = _connect(wall0 + BOOT_TIMEOUT, graph)
        clock.last_sample = time.monotonic()  # the stall clock starts with the session, not before the boot
        robot.on_state = clock.on_state
        clock.wait_until(0.0, graph.alive)
        boot_wall = time.monotonic() - wall0
        graph.remember_nodes()
        robot.stand(timeout=30.0)  # wall seconds; the STAND ramp arms after 0.5 s of simulated time
        _wait_firmware_armed(http_api, graph)
        robot.balance(timeout=30.0)
        if clock.move_at is None:
            raise GraphBenchError("balance() returned but no MOVE sample was seen")
        robot.set_velocity(0.0, 0.0, 0.0, wait=False)  # the bench's settle command (zero: sent once, never stale)
        run = _drive(scenario, robot, http_api, clock, graph, clock.move_at + settle_time, realtime)
        status, counters = http_api.request("GET", "/api/sim/counters")
        run.velocity_timeouts = int(counters["firmware"]["velocity_timeouts"]) if status == 200 else -1
        if run.velocity_timeouts:
            run.result.failures.append(f"velocity watchdog fired {run.velocity_timeouts}x (keepalive too sparse)")
            run.result.passed = False
        run.boot_wall_s = boot_wall
        run.result.wall_seconds = time.monotonic() - wall0
        ok = True
        return run
    except MenloError as exc:
        raise GraphBenchError(f"SDK: {type(exc).__name__}: {exc}") from exc
    finally:
        if robot is not None:
            with contextlib.suppress(Exception):
                robot.close()
        http_api.close()
        left = graph.stop()
        if ok:  # the exit summaries `vasimov up` prints (the plant's real-time factor, late and unanswered ticks)
            run.extras["shm_segments_removed"] = len(graph.segments)
            run.extras["graph_summary"] = [line.removeprefix("vasimov: ") for line in graph.output().splitlines()
                                           if line.startswith("vasimov: plant: ")]
        if left:
            raise GraphBenchError(f"graph processes or shared-memory segments left behind: {left} "
                                  f"(log {graph.log.name})")
        if ok:
            graph.remove_log()
        else:
            sys.stderr.write(f"vasimov bench walk --graph: graph log kept in {graph.log.name}\n")


class TruthPoller(threading.Thread):
    """Polls ``/api/sim/truth`` on its own connection and thread, so an HTTP answer that is slow on a loaded machine
    never delays a command: every ``TRUTH_PERIOD`` of wall time, back to back within ``END_WINDOW`` of the times that
    get interpolated (the scenario's start and end)."""

    def __init__(self, dense_at: Sequence[float]) -> None:
        super().__init__(name="truth-poller", daemon=True)
        self.dense_at = tuple(dense_at)
        self.samples: list[TruthSample] = []  # appended here only; readers take len() first
        self.error: BaseException | None = None
        self.stop = threading.Event()
        self.api = TwinHttp()

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                s = self.api.truth()
                if s is not None and (not self.samples or s.sim_time > self.samples[-1].sim_time):
                    self.samples.append(s)
                last = self.samples[-1].sim_time if self.samples else -math.inf
                if not any(abs(t - last) < END_WINDOW for t in self.dense_at):
                    self.stop.wait(TRUTH_PERIOD)
        except (OSError, http.client.HTTPException, ValueError, KeyError) as exc:
            self.error = exc
        finally:
            self.api.close()


def _drive(scenario: Scenario, robot: Any, api: TwinHttp, clock: SimClock, graph: Graph, start_at: float,
           realtime: bool) -> GraphRun:
    """From ``start_at`` (firmware time, as the state stream tells it): commands and pushes at their scenario times
    on the stream's clock, truth polled on another thread, until the end or a fall. Start and end poses are
    interpolated from the truth samples around them (a truth answer can lag the stream by hundreds of simulated ms
    on a loaded machine, so "read truth, then send" would misalign the start)."""
    t0 = start_at
    end_t = t0 + scenario.duration
    poller = TruthPoller((t0, end_t))
    poller.start()
    try:
        return _drive_polled(scenario, robot, api, clock, graph, t0, poller, realtime)
    finally:
        poller.stop.set()
        poller.join(timeout=10.0)


def _drive_polled(scenario: Scenario, robot: Any, api: TwinHttp, clock: SimClock, graph: Graph, t0: float,
                  poller: TruthPoller, realtime: bool) -> GraphRun:
    clock.wait_until(t0, graph.alive)
    samples = poller.samples
    if not samples or samples[0].sim_time > t0:
        raise GraphBenchError("no ground truth before the scenario's start")
    commands = sorted(scenario.commands, key=lambda c: c[0])
    pushes = sorted(scenario.pushes, key=lambda p: p.t)
    next_cmd = next_push = checked = 0
    cmd_late: list[float] = []
    push_late: list[float] = []
    last_cmd: tuple[float, ...] | None = None
    end_t = t0 + scenario.duration
    min_h = scenario.min_pelvis_height if scenario.min_pelvis_height is not None else MIN_PELVIS_HEIGHT
    max_gz = scenario.max_gravity_z if scenario.max_gravity_z is not None else MAX_GRAVITY_Z
    fell_at: float | None = None
    done = False
    while not done:
        if clock.stalled() or not graph.alive() or poller.error is not None:
            raise GraphBenchError(f"the graph stopped or stalled at simulated {clock.t:.2f} s"
                                  + (f" (truth: {poller.error})" if poller.error else ""))
        now = clock.t - t0
        while next_cmd < len(commands) and commands[next_cmd][0] <= now + 1e-9:
            while next_cmd + 1 < len(commands) and commands[next_cmd + 1][0] <= now + 1e-9:
                next_cmd += 1  # several due at once: only the newest counts
            cmd = tuple(float(v) for v in commands[next_cmd][1:])
            if cmd != last_cmd:
                robot.set_velocity(*cmd, wait=False)  # held: re-sent every 0.1 s wall by the SDK
                cmd_late.append((now - commands[next_cmd][0]) * 1e3)
                last_cmd = cmd
            next_cmd += 1
        while next_push < len(pushes) and pushes[next_push].t <= now + 1e-9:
            p = pushes[next_push]
            status, _ = api.request("POST", "/api/sim/push",
                                    {"body": p.body, "force": list(p.force), "duration": p.duration})
            if status != 202:
                raise GraphBenchError(f"push refused: HTTP {status}")
            push_late.append((now - p.t) * 1e3)
            next_push += 1
        n = len(samples)
        for s in samples[checked:n]:
            if s.sim_time <= t0:
                continue
            if s.pos[2] < min_h or projected_gravity(s.quat)[2] > max_gz:
                fell_at, done = s.sim_time - t0, True
                break
            if s.sim_time >= end_t - 1e-9:
                done = True
                break
        checked = n
        if not done:
            clock.changed.wait(0.005)
            clock.changed.clear()
    samples = samples[:checked]
    res = score(scenario, samples, t0, fell_at=fell_at)
    window = samples[-1].wall - samples[0].wall
    rtf = (samples[-1].sim_time - samples[0].sim_time) / window if window > 0 else math.nan
    peak = max_rate(samples)
    peak = rtf if math.isnan(peak) else peak
    return GraphRun(result=res, path="graph-realtime" if realtime else "graph-lockstep", rtf=rtf, max_rtf=peak,
                    keepalive_gap_sim=0.1 * peak, velocity_timeouts=-1, command_lateness_ms=cmd_late,
                    push_lateness_ms=push_late, truth_samples=len(samples), boot_wall_s=math.nan)


def agreement_scenarios() -> dict[str, Scenario]:
    """Short cuts of two standard scenarios (a 3 s forward walk at 0.3 m/s, 2 s of balance) on which the graph path
    is compared with the single-process bench (test/test_walk_bench_graph.py, bench/walk_graph_agreement.py). The
    gait takes ~1.5 s to reach speed, so the forward cut needs 0.4 m rather than 80 % of 0.9 m; compute time is not
    what they compare (and not measured on the graph path), so it is not a criterion."""
    std = standard_scenarios()
    fwd = dataclasses.replace(std["forward_0.3"], name="forward_0.3_3s", duration=3.0,
                              criteria=Criteria(min_along=0.4, max_abs_lateral=0.3, max_abs_heading=0.2,
                                                max_compute_p99=None))
    bal = dataclasses.replace(std["balance_60s"], name="balance_2s", duration=2.0,
                              criteria=Criteria(max_drift=0.10, max_compute_p99=None))
    return {fwd.name: fwd, bal.name: bal}


# -- command line ----------------------------------------------------------------------------------------------------
def first_domain() -> int:
    """A ROS domain for the first scenario's graph, spread by process id so parallel benches rarely meet."""
    return 1 + (os.getpid() * 7) % 150


def run(scenarios: Sequence[Scenario], *, realtime: bool, policy: str | None = None) -> int:
    """Run scenarios one graph each; print one JSON line per scenario and the bench's table. Exit 0 if all pass, 1 if
    any fails, 2 if any could not be run (the graph or the SDK session broke; the others still run)."""
    runs: list[GraphRun] = []
    skipped: list[str] = []
    errors: list[str] = []
    base = first_domain()
    for i, sc in enumerate(scenarios):
        if sc.backend_options:
            skipped.append(f"{sc.name}: needs backend options {dict(sc.backend_options)} (not a launch argument)")
            continue
        try:
            r = run_graph_scenario(sc, realtime=realtime, domain=base + i, policy=policy)
        except GraphBenchError as exc:  # the run could not be made: say so, go on with the next scenario
            print(f"vasimov bench walk --graph: {sc.name}: {exc}", file=sys.stderr, flush=True)
            errors.append(sc.name)
            continue
        runs.append(r)
        print(json.dumps(r.as_json()), flush=True)
    mode = "real time" if realtime else "lockstep"
    print(f"path: full node graph in {mode}, menlo-sdk over UDP, pushes over HTTP, scored on /api/sim/truth; "
          f"compute columns not measured (nan)")
    print(format_table([r.result for r in runs]))
    if runs:
        print("graph: " + "; ".join(f"{r.result.name} rtf {r.rtf:.2f} (max {r.max_rtf:.2f}, keepalive every "
                                    f"{r.keepalive_gap_sim:.2f} s sim), watchdog {r.velocity_timeouts}"
                                    for r in runs))
    for s in skipped:
        print(f"skipped {s}")
    if errors:
        print(f"not run (graph or SDK error, see above): {', '.join(errors)}")
        return 2
    return 0 if all(r.result.passed for r in runs) else 1
