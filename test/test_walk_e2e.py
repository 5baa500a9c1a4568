"""`menlo walk` against the running graph with the default (built-in) controller: the robot walks forward."""

from __future__ import annotations

import json
import tempfile

import pytest
from harness import Graph, http_json, run_menlo, truth_at_rest, wait_for, walked_in_heading

pytestmark = pytest.mark.graph
API = "http://127.0.0.1:3000"


def test_menlo_walk_moves_the_robot_forward_and_leaves_it_balancing():
    g = Graph()  # default policy: builtin
    try:
        wait_for(lambda: "SDK bridge ready" in g.output() and "plant ready" in g.output(), 60, "graph start")
        with tempfile.TemporaryDirectory(prefix="menlo-home-") as home:
            assert run_menlo("robots", "add", "sim", "--mode", "udp", "--udp", "127.0.0.1", home=home).returncode == 0
            # as fast as a shell runs `menlo stand -y && menlo balance -y`: no wait for anything in between
            r = run_menlo("stand", "-y", home=home)
            assert r.returncode == 0, r.stdout + r.stderr
            r = run_menlo("balance", "-y", home=home)
            assert r.returncode == 0, r.stdout + r.stderr
            start = http_json(f"{API}/api/sim/truth")
            r = run_menlo("walk", "-y", "--vx", "0.3", "--duration", "3", home=home)
            assert r.returncode == 0, r.stdout + r.stderr
            assert "Walk done" in r.stdout
            end = truth_at_rest()
            forward, lateral = walked_in_heading(start, end)
            print(f"menlo walk: forward {forward:.3f} m, lateral {lateral:.3f} m")
            assert forward >= 0.6
            assert end["base_pos"][2] > 0.45
            status = json.loads(run_menlo("status", "--json", home=home).stdout)
            assert status["robot_mode"] == "MOVE" and status["verdict"] == "READY"
    finally:
        g.stop()
        assert g.leftovers() == []
