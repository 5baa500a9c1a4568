import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Graph

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"


@pytest.fixture
def shared_dir() -> Path:
    return SHARED


@pytest.fixture
def graph_factory():
    """Start graphs with `graph_factory(*vasimov_up_args)`; every one is stopped and checked for orphans."""
    graphs: list[Graph] = []

    def make(*args: str, **kw) -> Graph:
        g = Graph(*args, **kw)
        graphs.append(g)
        return g

    yield make
    for g in graphs:
        g.stop()
        assert g.leftovers() == [], f"processes left behind: {g.leftovers()}"


@pytest.fixture(autouse=True)
def _ros_log_dir(monkeypatch):
    monkeypatch.setenv("ROS_LOG_DIR", str(Path(__file__).resolve().parent.parent / ".ros_log"))
    os.makedirs(os.environ["ROS_LOG_DIR"], exist_ok=True)
