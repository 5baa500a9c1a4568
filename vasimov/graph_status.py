"""The supervisor's view of the graph's processes, shared with the nodes through one small JSON file.

`vasimov up` (vasimov_tools.supervisor) knows what no node can see from inside: which process died, with which exit
code, and whether it was restarted. It writes that here whenever it changes and names the file in the nodes'
environment (``VASIMOV_GRAPH_STATUS``), so the SDK bridge can show it at ``GET /api/sim/counters`` next to its own
counters. Under ``ros2 launch`` the variable is unset and there is nothing to show (``read()`` is None).

The file is replaced atomically (write, then rename), so a reader never sees half a document.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

#: A node prints one line starting with this at exit; `vasimov up` collects it into its exit summary.
SUMMARY_TAG = "summary for vasimov up: "

#: A node prints this line once its ROS entities exist (rclpy's context, publishers, subscriptions): from then on it
#: may have told the graph something, so `vasimov up` never starts it again behind the graph's back. A native crash
#: before this line (seen in CI: SIGSEGV inside Fast DDS's create_publisher while several nodes start at once) is
#: a start-up crash, which `vasimov up` answers by starting the node again (vasimov_tools.supervisor).
STARTED_TAG = "vasimov node started"

ENV_VAR = "VASIMOV_GRAPH_STATUS"

#: Signals of a crash in the process itself; a kill from outside (SIGKILL, SIGTERM, SIGINT) is someone's intent.
CRASH_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGILL, signal.SIGFPE})


def announce_started() -> None:
    """Say on stdout that this node's ROS entities exist (``STARTED_TAG``); the supervisor takes the line out of the
    graph's output. Printed under ``ros2 launch`` too, where it is one harmless log line."""
    sys.stdout.write(STARTED_TAG + "\n")  # one write: a log line from another thread cannot split it
    sys.stdout.flush()


def is_crash(code: int) -> bool:
    """Popen's return code says the process died of a crash signal (``-11`` is SIGSEGV)."""
    return code < 0 and -code in CRASH_SIGNALS  # Signals is an IntEnum: 11 == SIGSEGV


def describe_exit(code: int) -> str:
    """``-9`` -> ``killed by SIGKILL``; ``3`` -> ``exit code 3`` (Popen reports a signal as a negative code)."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def write(path: Path, status: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(status, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def read(environ: dict[str, str] | None = None) -> dict[str, Any] | None:
    """The latest status, or None when no supervisor publishes one (or it cannot be read right now)."""
    path = (os.environ if environ is None else environ).get(ENV_VAR)
    if not path:
        return None
    with contextlib.suppress(OSError, ValueError):
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        if isinstance(doc, dict):
            return doc
    return None
