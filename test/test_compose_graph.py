"""Composed mode (`vasimov up --compose`, vasimov_tools.compose): every node in one process, on one executor.

The same graph must compute the same thing (lockstep, bit for bit, as test_graph checks the separate-process graph),
serve the real menlo CLI, and leave nothing behind: no process, no shared-memory segment."""

from __future__ import annotations

import json
import signal
import tempfile
from pathlib import Path

import pytest
from harness import Graph, child_pids, http_json, pid_alive, run_menlo, truth_at_rest, wait_for, walked_in_heading
from test_graph import _lockstep_run, _script, assert_run_is_the_reference_loop

from vasimov.ros.shm import mapped_segments

pytestmark = pytest.mark.graph
API = "http://127.0.0.1:3000"


def test_composed_lockstep_run_is_bit_identical_to_the_reference_loop(tmp_path):
    script = _script(tmp_path)
    ticks, fws, _, _ = _lockstep_run(tmp_path, script, up_args=("--compose",))
    assert_run_is_the_reference_loop(script, ticks, fws)


def test_menlo_stands_balances_and_walks_a_composed_twin_that_then_stops_cleanly():
    g = Graph("--compose")
    try:
        wait_for(lambda: "composed 7 nodes in one process" in g.output() or g.proc.poll() is not None, 60,
                 "the composed graph")
        wait_for(lambda: "SDK bridge ready" in g.output() and "plant ready" in g.output(), 60, "graph start")
        assert g.proc.poll() is None, g.output()[-3000:]
        assert child_pids(g.proc.pid) == [], "composed: every node in the one process"
        segments = mapped_segments(g.proc.pid)
        assert segments, "the process's Fast DDS segments are visible (the check below would prove nothing)"
        with tempfile.TemporaryDirectory(prefix="menlo-home-") as home:
            assert run_menlo("robots", "add", "sim", "--mode", "udp", "--udp", "127.0.0.1", home=home).returncode == 0
            for args in (("stand", "-y"), ("balance", "-y")):
                r = run_menlo(*args, home=home)
                assert r.returncode == 0, r.stdout + r.stderr
            start = http_json(f"{API}/api/sim/truth")
            r = run_menlo("walk", "-y", "--vx", "0.3", "--duration", "2", home=home)
            assert r.returncode == 0, r.stdout + r.stderr
            end = truth_at_rest()
            forward, _ = walked_in_heading(start, end)
            print(f"composed menlo walk: forward {forward:.3f} m")
            # 2 s at 0.3 m/s of wall time; simulated time may run slower on a loaded machine (README, Time modes)
            assert forward >= 0.15
            assert end["base_pos"][2] > 0.45
            status = json.loads(run_menlo("status", "--json", home=home).stdout)
            assert status["robot_mode"] == "MOVE" and status["verdict"] == "READY"
    finally:
        rc = g.stop(signal.SIGINT)
    assert rc == 0, g.output()[-3000:]
    assert not pid_alive(g.proc.pid)
    assert [s for s in segments if (Path("/dev/shm") / s).exists()] == []


def test_a_node_that_refuses_its_configuration_stops_the_composed_graph_with_code_2(tmp_path):
    # a file that exists (so `vasimov up`'s pre-flight spec check passes it) but is no ONNX model: only the policy
    # runner, built inside the composed process, can refuse it
    bad = tmp_path / "not_a_model.onnx"
    bad.write_bytes(b"this is not an ONNX model")
    g = Graph("--compose", "--policy", str(bad))
    rc = g.proc.wait(timeout=60)
    out = g.output()
    assert rc == 2, out[-3000:]
    assert "composed graph cannot start" in out
    assert "plant ready" in out  # built before the policy runner, then closed: the exit is not a hang
