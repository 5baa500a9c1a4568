"""What the benchmark scripts share: the repository root and an isolated environment for a graph run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent


def graph_env(domain: int) -> dict[str, str]:
    """Loopback-only discovery in its own domain; no field checks (they slow message building; tests use them)."""
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
               FASTDDS_DEFAULT_PROFILES_FILE=str(ROOT / "config" / "fastdds_localhost.xml"),
               ROS_LOG_DIR=str(ROOT / ".ros_log"))
    env.pop("ROS_PYTHON_CHECK_FIELDS", None)
    return env
