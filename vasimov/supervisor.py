"""Starts the graph's nodes as separate processes and owns their lifetime (the pip-only stand-in for `ros2 launch`).

Guarantees: one process per node; Ctrl-C / SIGTERM stop every node cleanly (SIGINT first so rclpy and Fast DDS
release their shared-memory segments, SIGKILL only after a grace period); children die with the supervisor even if
it is killed hard (PR_SET_PDEATHSIG); a node that dies on its own stops the graph with a clear message and a
non-zero exit, except the node named `primary`, whose clean exit is the normal end of a bounded run.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from vasimov.launch_file import LaunchDescription, NodeSpec, share_directory
from vasimov.stop_signals import stop_on_signals

_PR_SET_PDEATHSIG = 1
# A node's output line that starts with this is also repeated in the summary `vasimov up` prints at exit (the
# plant's achieved real-time factor, for instance), where it is not lost among the nodes' logs.
SUMMARY_TAG = "summary for vasimov up: "


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


def graph_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for the nodes: loopback-only discovery and the fast-discovery profile unless the user chose."""
    env = dict(os.environ if base is None else base)
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    profile = share_directory("vasimov") / "config" / "fastdds_localhost.xml"
    if profile.is_file():
        env.setdefault("FASTDDS_DEFAULT_PROFILES_FILE", str(profile))
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


@dataclass
class _Child:
    spec: NodeSpec
    proc: subprocess.Popen[bytes]
    pump: threading.Thread | None = None


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
        self.summaries: dict[str, str] = {}  # node name -> its last SUMMARY_TAG line

    # -- lifecycle -------------------------------------------------------------------------------------------
    def start(self) -> None:
        for spec in self.launch.nodes:
            cmd = [resolve_executable(spec.executable), *spec.extra_args, *spec.ros_args()]
            proc = subprocess.Popen(cmd, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, process_group=0, preexec_fn=_die_with_parent)
            child = _Child(spec, proc)
            child.pump = threading.Thread(target=self._pump, args=(child,), daemon=True, name=f"out-{spec.name}")
            child.pump.start()
            self._children.append(child)
            self._say(f"started node '{spec.name}' (pid {proc.pid})")

    def run(self) -> int:
        """Start everything, wait until a stop is requested or a node exits, stop the rest; return the exit code."""
        with stop_on_signals(self._stop):
            try:
                self.start()
                code = self._watch()
            finally:
                self.stop_all()
                for name, text in self.summaries.items():
                    self._say(f"{name}: {text}")
        return code

    def _watch(self) -> int:
        while not self._stop.wait(0.05):
            for child in self._children:
                rc = child.proc.poll()
                if rc is None:
                    continue
                if child.spec.name == self.primary and rc == 0:
                    self._say(f"node '{child.spec.name}' finished; stopping the graph")
                    return 0
                self._say(f"node '{child.spec.name}' exited unexpectedly with code {rc}; stopping the graph",
                          error=True)
                return rc if rc > 0 else 1
        self._say("stop requested; shutting the graph down")
        return 0

    def stop_all(self) -> None:
        alive = [c for c in self._children if c.proc.poll() is None]
        for c in alive:
            self._signal(c, signal.SIGINT)
        deadline = time.monotonic() + self.grace_s
        for c in alive:
            try:
                c.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self._say(f"node '{c.spec.name}' ignored SIGINT for {self.grace_s:.0f} s; killing it", error=True)
                self._signal(c, signal.SIGKILL)
                c.proc.wait()
                self._killed_hard = True
        for c in self._children:
            if c.pump is not None:
                c.pump.join(timeout=2.0)
        if self._killed_hard:
            clean_shared_memory()

    # -- helpers ---------------------------------------------------------------------------------------------
    def pids(self) -> dict[str, int]:
        return {c.spec.name: c.proc.pid for c in self._children}

    @staticmethod
    def _signal(child: _Child, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.proc.pid, sig)

    def _pump(self, child: _Child) -> None:
        assert child.proc.stdout is not None
        for raw in iter(child.proc.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
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
    """Remove Fast DDS shared-memory segments left by processes that no longer exist (only those)."""
    script = Path(sys.executable).parent.parent / "tools" / "fastdds" / "fastdds.py"
    if script.is_file():
        subprocess.run([sys.executable, str(script), "shm", "clean"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False, timeout=30)
