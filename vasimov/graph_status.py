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
from pathlib import Path
from typing import Any

#: A node prints one line starting with this at exit; `vasimov up` collects it into its exit summary.
SUMMARY_TAG = "summary for vasimov up: "

ENV_VAR = "VASIMOV_GRAPH_STATUS"


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
