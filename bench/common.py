"""What the benchmark scripts share: the repository root and an isolated environment for a graph run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent


def graph_env(domain: int) -> dict[str, str]:
    """Loopback-only discovery in its own domain; no field checks (they slow message building; tests use them)."""
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE="SYSTEM_DEFAULT",
               FASTDDS_DEFAULT_PROFILES_FILE=str(ROOT / "config" / "fastdds_localhost.xml"),
               ROS_LOG_DIR=str(ROOT / ".ros_log"))
    env.pop("ROS_PYTHON_CHECK_FIELDS", None)
    return env


class CpuSampler:
    """CPU seconds per process of a running graph, by node executable name, sampled until ``stop()`` (a node's
    last sample before it exits is what counts, so the figures miss at most one sampling period)."""

    def __init__(self, pid: int, period: float = 0.2) -> None:
        import threading

        import psutil

        self._root = psutil.Process(pid)
        self._period = period
        self.cpu: dict[str, float] = {}
        self.pids: dict[str, int] = {}  # node executable name -> pid (the newest process of that name)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psutil

        while not self._stop.wait(self._period):
            if not self._root.is_running():
                return
            try:
                procs = [self._root, *self._root.children(recursive=True)]
            except psutil.Error:
                continue  # a child left between listing and reading
            for p in procs:
                try:
                    cmd = p.cmdline()
                    t = p.cpu_times()
                except psutil.Error:
                    continue
                if not cmd:
                    continue  # a zombie has no command line
                script = len(cmd) > 1 and Path(cmd[0]).name.startswith("python")
                name = Path(cmd[1] if script else cmd[0]).name
                self.cpu[name] = t.user + t.system
                self.pids[name] = p.pid

    def snapshot(self) -> dict[str, float]:
        """CPU seconds per process so far (as of the last sample)."""
        return dict(self.cpu)

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join(timeout=5)
        return {k: round(v, 2) for k, v in sorted(self.cpu.items())}
