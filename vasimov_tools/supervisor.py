"""Starts the graph's nodes as separate processes and owns their lifetime (the pip-only stand-in for `ros2 launch`).

Guarantees: one process per node; Ctrl-C / SIGTERM stop every node cleanly (SIGINT first so rclpy and Fast DDS
release their shared-memory segments, SIGKILL only after a grace period); children die with the supervisor even if
it is killed hard (PR_SET_PDEATHSIG).

A node that exits on its own is handled as its launch entry says (launch's attributes, see vasimov_tools.launch_file):

* `on_exit: shutdown` (the control nodes: plant, edge, policy, SDK bridge): the graph stops with a clear message
  and the node's exit code, except the node named `primary`, whose clean exit is the normal end of a bounded run;
* `respawn` (the observers: Foxglove bridge, binary stream): reported, then started again after
  `respawn_delay` x 2^(restarts so far) seconds (capped at MAX_BACKOFF_S), at most `respawn_max_retries` times;
* neither (the recorder `vasimov up --record` adds: a second bag in the same directory would not be safe): reported,
  not restarted; the robot keeps running.

Any node, control or observer, that dies of a crash signal (SIGSEGV, SIGABRT, ...) *before* it said its ROS
entities exist (``graph_status.STARTED_TAG``) is started again at once, up to MAX_STARTUP_RETRIES times: it has
published nothing, so the graph cannot tell, and a lockstep run waits for it as for any late node. Seen in CI: a
SIGSEGV inside Fast DDS's create_publisher while the graph's nodes started together on a loaded 2-core machine
(ros2/rmw_fastrtps#860 looks like it). Each such crash is an error line and a line in the summary at exit, but not
a failed run; a crash after the line is handled as below.

Every observer exit is a log line, a row in the status file the SDK bridge serves at `GET /api/sim/counters`
(vasimov.graph_status) and a line in the summary at exit; a run that otherwise ended normally then exits with
EXIT_OBSERVER_FAILED instead of 0, so a bounded run with a lost recording does not look clean.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from vasimov import graph_status
from vasimov.graph_status import STARTED_TAG, SUMMARY_TAG
from vasimov.stop_signals import stop_on_signals
from vasimov_tools.launch_file import LaunchDescription, NodeSpec, share_directory

_PR_SET_PDEATHSIG = 1
# A node's output line that starts with this is also repeated in the summary `vasimov up` prints at exit (the
# plant's achieved real-time factor, for instance), where it is not lost among the nodes' logs.
EXIT_OBSERVER_FAILED = 7  # the run ended normally, but an observer died on the way (restarted or not)
EXIT_KILLED_WITH_DATA = 8  # the run ended, but a node that was still writing out data had to be killed (NodeSpec)
MAX_BACKOFF_S = 30.0  # longest wait before an observer's restart
MAX_STARTUP_RETRIES = 2  # a node that crashes before it has started is started again at most this many times
# A node's exit code for a configuration error (vasimov.ros.spin.EXIT_CONFIG; not imported here, it pulls in rclpy):
# starting it again with the same configuration cannot help, so such an observer is not restarted.
EXIT_CONFIG = 2


def _die_with_parent() -> None:
    """Runs in the child between fork and exec: ask the kernel to SIGTERM us when the supervisor dies."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


def resolve_executable(name: str) -> str:
    """Where the node's executable is: beside this interpreter (pip: the venv's bin/), else in an ament prefix's
    lib/vasimov (colcon: where `ros2 run` looks; `vasimov` itself is there too), else on PATH."""
    places = [Path(sys.executable).parent]
    places += [Path(p) / "lib" / "vasimov" for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    for place in places:
        candidate = place / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"executable {name!r} not found beside {sys.executable}, in an ament prefix's "
                                "lib/vasimov or on PATH; run `make setup` (or colcon build and source the install)")
    return found


LOOPBACK_PROFILE = "fastdds_localhost.xml"  # in config/ of the package's share directory (or this checkout)
NETWORK_PROFILE = "fastdds_network.xml"
DDS_MODE_VAR = "VASIMOV_DDS"  # "loopback" (default) or "network": the user's opt-in to DDS beyond this host


def dds_profile(name: str) -> Path:
    return share_directory("vasimov") / "config" / name


def is_loopback_profile(path: str) -> bool:
    """The file is our loopback profile (this checkout's, an installed copy, or any byte-identical copy)."""
    try:
        return Path(path).read_bytes() == dds_profile(LOOPBACK_PROFILE).read_bytes()
    except OSError:
        return False


def graph_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for the nodes: DDS on loopback only unless the user opts into the network (VASIMOV_DDS=network)
    or brings their own Fast DDS profile (FASTDDS_DEFAULT_PROFILES_FILE), which is then left alone.

    With the loopback profile, ROS_AUTOMATIC_DISCOVERY_RANGE is set to SYSTEM_DEFAULT whatever the shell says:
    rmw_fastrtps answers LOCALHOST by adding its own UDP transport bound to every interface (0.0.0.0) next to the
    profile's, which is exactly the exposure the profile removes."""
    env = dict(os.environ if base is None else base)
    mode = env.get(DDS_MODE_VAR, "loopback") or "loopback"
    if mode not in ("loopback", "network"):
        raise ValueError(f"{DDS_MODE_VAR}={mode!r}: expected 'loopback' (the default) or 'network'")
    default_profile = dds_profile(LOOPBACK_PROFILE if mode == "loopback" else NETWORK_PROFILE)
    if default_profile.is_file():
        env.setdefault("FASTDDS_DEFAULT_PROFILES_FILE", str(default_profile))
    profile = env.get("FASTDDS_DEFAULT_PROFILES_FILE", "")
    if profile and is_loopback_profile(profile):
        env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "SYSTEM_DEFAULT"
    else:
        env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST" if mode == "loopback" else "SUBNET")
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def restart_delay(spec: NodeSpec, restarts_so_far: int) -> float:
    """Backoff before the next restart: respawn_delay doubled per restart already made, capped."""
    return min(MAX_BACKOFF_S, spec.respawn_delay * (2.0 ** restarts_so_far))


def may_restart(spec: NodeSpec, restarts_so_far: int) -> bool:
    return spec.respawn and (spec.respawn_max_retries < 0 or restarts_so_far < spec.respawn_max_retries)


@dataclass
class _Child:
    spec: NodeSpec
    proc: subprocess.Popen[bytes]
    pump: threading.Thread | None = None
    state: str = "running"  # running | restarting | down
    exits: int = 0  # unexpected exits of this node
    restarts: int = 0
    last_exit: str = ""
    restart_at: float = 0.0  # monotonic time of the pending restart
    started: bool = False  # the current process printed graph_status.STARTED_TAG
    startup_crashes: list[str] = field(default_factory=list)  # how each start-up crash ended, in order

    def status(self) -> dict[str, object]:
        role = "control" if self.spec.shutdown_on_exit else "observer"
        return {"role": role, "state": self.state, "pid": self.proc.pid, "exits": self.exits,
                "restarts": self.restarts, "last_exit": self.last_exit, "startup_crashes": len(self.startup_crashes)}


class Supervisor:
    def __init__(self, launch: LaunchDescription, *, primary: str | None = None, grace_s: float = 10.0,
                 env: dict[str, str] | None = None, out: TextIO | None = None) -> None:
        self.launch = launch
        self.primary = primary
        self.grace_s = grace_s
        self.env = graph_environment(env)
        self.out = out or sys.stdout
        self._children: list[_Child] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._killed_hard = False
        self.killed_with_data: list[str] = []  # nodes killed during the stop before they finished writing
        self.summaries: dict[str, str] = {}  # node name -> its last SUMMARY_TAG line
        self._status_dir = Path(tempfile.mkdtemp(prefix="vasimov-graph-"))
        self.status_path = self._status_dir / "status.json"
        self.env[graph_status.ENV_VAR] = str(self.status_path)

    # -- lifecycle -------------------------------------------------------------------------------------------
    def _spawn(self, spec: NodeSpec) -> subprocess.Popen[bytes]:
        cmd = [resolve_executable(spec.executable), *spec.extra_args, *spec.ros_args()]
        return subprocess.Popen(cmd, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, process_group=0, preexec_fn=_die_with_parent)

    def _start_pump(self, child: _Child) -> None:
        child.started = False  # the new process has not said so yet
        child.pump = threading.Thread(target=self._pump, args=(child, child.proc), daemon=True,
                                      name=f"out-{child.spec.name}")
        child.pump.start()

    def start(self) -> None:
        for spec in self.launch.nodes:
            child = _Child(spec, self._spawn(spec))
            self._start_pump(child)
            self._children.append(child)
            self._say(f"started node '{spec.name}' (pid {child.proc.pid})")
        self._write_status()

    def run(self) -> int:
        """Start everything, wait until a stop is requested or a node exits, stop the rest; return the exit code."""
        with stop_on_signals(self._stop):
            return self.run_until_stopped()

    def run_until_stopped(self) -> int:
        """`run` without taking over SIGINT/SIGTERM: for a caller that stops the graph with `request_stop`."""
        code = 1
        try:
            self.start()
            code = self._watch()
        finally:
            self.stop_all()
            for name, text in self.summaries.items():
                self._say(f"{name}: {text}")
            for c in self._children:
                if c.startup_crashes:
                    self._say(f"node '{c.spec.name}' crashed {len(c.startup_crashes)} time(s) while starting "
                              f"({', '.join(c.startup_crashes)}) and was started again", error=True)
            lost = [c for c in self._children if c.exits]
            for c in lost:
                self._say(f"observer '{c.spec.name}' exited {c.exits} time(s) during the run, restarted "
                          f"{c.restarts} time(s), last {c.last_exit}; {c.state} at the end", error=True)
            shutil.rmtree(self._status_dir, ignore_errors=True)
        if code == 0 and self.killed_with_data:
            return EXIT_KILLED_WITH_DATA
        return EXIT_OBSERVER_FAILED if code == 0 and lost else code

    def request_stop(self) -> None:
        self._stop.set()

    def _watch(self) -> int:
        while not self._stop.wait(0.05):
            now = time.monotonic()
            for child in self._children:
                if child.state == "restarting":
                    if now >= child.restart_at:
                        self._restart(child)
                    continue
                if child.state != "running":
                    continue
                rc = child.proc.poll()
                if rc is None:
                    continue
                if self._startup_crash(child, rc):
                    continue
                if child.spec.name == self.primary and rc == 0:
                    self._say(f"node '{child.spec.name}' finished; stopping the graph")
                    return 0
                if child.spec.shutdown_on_exit:
                    self._say(f"node '{child.spec.name}' exited unexpectedly with code {rc}; stopping the graph",
                              error=True)
                    return rc if rc > 0 else 1
                self._observer_exited(child, rc, now)
        self._say("stop requested; shutting the graph down")
        return 0

    def _startup_crash(self, child: _Child, rc: int) -> bool:
        """A crash before the node said it started: start it again at once (bounded), and say so. True if handled."""
        if child.started or not graph_status.is_crash(rc) or len(child.startup_crashes) >= MAX_STARTUP_RETRIES:
            return False
        if child.pump is not None:
            child.pump.join(timeout=2.0)  # its last lines (faulthandler's stack of the crash) are in the output
            if child.started:  # the tag was still in the pipe: it had started, so this is a run-time crash
                return False
        how = graph_status.describe_exit(rc)
        child.startup_crashes.append(how)
        self._killed_hard = True  # its shared-memory segments are left behind: clean them at the end
        n = len(child.startup_crashes)
        self._say(f"node '{child.spec.name}' crashed while starting ({how}), before it created its ROS entities; "
                  f"starting it again (start-up retry {n} of {MAX_STARTUP_RETRIES})", error=True)
        try:
            child.proc = self._spawn(child.spec)
        except OSError as exc:
            self._say(f"node '{child.spec.name}' could not be started again: {exc}", error=True)
            return False
        self._start_pump(child)
        self._say(f"started node '{child.spec.name}' again (pid {child.proc.pid})")
        self._write_status()
        return True

    def _observer_exited(self, child: _Child, rc: int, now: float) -> None:
        """An observer died: the robot keeps running; restart it if its launch entry says so and budget is left."""
        child.exits += 1
        child.last_exit = graph_status.describe_exit(rc)
        if rc < 0:
            self._killed_hard = True  # its shared-memory segments are left behind: clean them at the end
        name = child.spec.name
        if rc == EXIT_CONFIG:
            child.state = "down"
            self._say(f"observer '{name}' died ({child.last_exit}: its configuration is wrong, see its log); the robot "
                      f"keeps running; not restarted", error=True)
        elif may_restart(child.spec, child.restarts):
            delay = restart_delay(child.spec, child.restarts)
            child.state, child.restart_at = "restarting", now + delay
            limit = "unlimited" if child.spec.respawn_max_retries < 0 else str(child.spec.respawn_max_retries)
            self._say(f"observer '{name}' died ({child.last_exit}); the robot keeps running; restarting it in "
                      f"{delay:.1f} s (restart {child.restarts + 1} of {limit})", error=True)
        else:
            child.state = "down"
            why = "no restarts left" if child.spec.respawn else "not restarted (no respawn in its launch entry)"
            self._say(f"observer '{name}' died ({child.last_exit}); the robot keeps running; {why}", error=True)
        self._write_status()

    def _restart(self, child: _Child) -> None:
        if child.pump is not None:
            child.pump.join(timeout=2.0)  # the old process's output is drained (its pipe closed at exit)
        try:
            child.proc = self._spawn(child.spec)
        except OSError as exc:
            child.state = "down"
            self._say(f"observer '{child.spec.name}' could not be restarted: {exc}", error=True)
        else:
            child.state = "running"
            child.restarts += 1
            self._start_pump(child)
            self._say(f"restarted observer '{child.spec.name}' (pid {child.proc.pid}, restart {child.restarts})")
        self._write_status()

    def _write_status(self) -> None:
        doc = {"nodes": {c.spec.name: c.status() for c in self._children},
               "observer_exits": sum(c.exits for c in self._children),
               "observer_restarts": sum(c.restarts for c in self._children)}
        try:
            graph_status.write(self.status_path, doc)
        except OSError as exc:
            self._say(f"cannot write the graph status file {self.status_path}: {exc}", error=True)

    def stop_all(self) -> None:
        for c in self._children:
            if c.state == "restarting":
                c.state = "down"  # a pending restart is cancelled by the stop
        alive = [c for c in self._children if c.proc.poll() is None]
        for c in alive:
            self._signal(c, signal.SIGINT)
        start = time.monotonic()
        told = False
        # the nodes with the longest grace last: the others are waited for (and killed) first
        for c in sorted(alive, key=self._grace):
            grace = self._grace(c)
            if not told and grace > self.grace_s and c.proc.poll() is None:
                told = True
                self._say(f"waiting up to {grace:.0f} s for '{c.spec.name}' to finish writing")
            try:
                c.proc.wait(timeout=max(0.0, start + grace - time.monotonic()))
            except subprocess.TimeoutExpired:
                self._say(f"node '{c.spec.name}' ignored SIGINT for {grace:.0f} s; killing it", error=True)
                self._signal(c, signal.SIGKILL)
                c.proc.wait()
                self._killed_hard = True
                if c.spec.kill_loses_data:
                    self.killed_with_data.append(c.spec.name)
                    self._say(f"'{c.spec.name}' was killed before it finished writing: its output is incomplete",
                              error=True)
        for c in self._children:
            if c.pump is not None:
                c.pump.join(timeout=2.0)
        # a child that died by a signal (killed from outside, OOM, a crash) skipped Fast DDS's teardown, like one
        # killed here: its shared-memory segments and port files stay behind unless removed
        died_hard = any(c.proc.returncode is not None and c.proc.returncode < 0 for c in self._children)
        if self._killed_hard or died_hard:
            clean_shared_memory()

    # -- helpers ---------------------------------------------------------------------------------------------
    def _grace(self, child: _Child) -> float:
        """Seconds between SIGINT and SIGKILL for ``child`` at the stop."""
        g = child.spec.stop_grace_s
        return self.grace_s if g is None else max(g, 0.0)

    def pids(self) -> dict[str, int]:
        return {c.spec.name: c.proc.pid for c in self._children}

    @staticmethod
    def _signal(child: _Child, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.proc.pid, sig)

    def _pump(self, child: _Child, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for raw in iter(proc.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line == STARTED_TAG:
                child.started = True
                continue
            if line.startswith(SUMMARY_TAG):  # printed once, at exit
                self.summaries[child.spec.name] = line[len(SUMMARY_TAG):]
                continue
            with self._lock:
                self.out.write(f"[{child.spec.name}] {line}\n")
                self.out.flush()

    def _say(self, text: str, *, error: bool = False) -> None:
        with self._lock:
            stream = sys.stderr if error else self.out
            stream.write(f"vasimov: {text}\n")
            stream.flush()


def clean_shared_memory() -> None:
    """Remove Fast DDS shared-memory segments left by processes that no longer exist (only those): Fast DDS's own
    ``shm clean`` (unlocked participant segments and ports), then the port segments no listener owns any more,
    which that tool cannot see (``vasimov.ros.shm.remove_orphan_ports``)."""
    from vasimov.ros.shm import remove_orphan_ports

    script = Path(sys.executable).parent.parent / "tools" / "fastdds" / "fastdds.py"
    if script.is_file():
        subprocess.run([sys.executable, str(script), "shm", "clean"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False, timeout=30)
    remove_orphan_ports(min_age_s=0.5)
