"""The recovery chain as the vendor's CLI meets it, in real time (issue 21: "the SDK flow ... in real time"):
`vasimov up --recovery boot:=lying_front`, then `menlo stand -y` as a user types it. The fall alert is raised but
nothing is latched, so the CLI must not call the robot faulted: before the chain's alert became a WARNING, `menlo
stand -y` gave up after 0.6 s with exit code 3 ("the firmware latched DAMP (FALL_DETECTED); it stays latched until
the firmware restarts") while the firmware had accepted STAND and was getting up."""

from __future__ import annotations

import pytest
from harness import Graph, menlo_status, run_menlo, sim_firmware, sim_truth_or_none, wait_for

pytestmark = pytest.mark.graph


def test_menlo_stand_from_a_lying_boot_starts_the_get_up_without_a_latched_fault(home):
    g = Graph("--recovery", "boot:=lying_front", "foxglove:=false")
    try:
        g.wait_started()
        wait_for(lambda: "SDK bridge ready" in g.output() and "plant ready" in g.output(), 60, "graph start")
        wait_for(lambda: sim_truth_or_none() is not None, 30, "ground truth")
        r = run_menlo("robots", "add", "sim", "--mode", "udp", "--udp", "127.0.0.1", home=home)
        assert r.returncode == 0, r.stdout + r.stderr
        # lying face down: limp, the fall alert raised, nothing latched -- and the SDK says so
        s = wait_for(lambda: (st := menlo_status(home)) and "FALL_DETECTED" in st["alerts"] and st, 15,
                     "the fall alert")
        assert s["robot_mode"] == "DAMP" and s["faults"] == [] and s["verdict"] != "FAULTED", s
        r = run_menlo("stand", "-y", home=home)
        # the CLI waits (up to its 10 s) for the robot to arm: it stands up (0) or is not up yet (3, "not armed"),
        # but it never reports a latch
        assert r.returncode in (0, 3), r.stdout + r.stderr
        assert "latched" not in r.stdout + r.stderr, r.stdout + r.stderr
        if r.returncode == 3:
            assert "not armed" in r.stdout + r.stderr, r.stdout + r.stderr
        fw = sim_firmware()
        assert fw["mode"] == "STAND" and fw["error_flags"] == 0, fw
        s = menlo_status(home)
        assert s["robot_mode"] == "STAND" and s["faults"] == [] and s["verdict"] != "FAULTED", s
        if r.returncode == 3:  # still down: the chain is running, and says where it is
            assert fw["recovery_phase"] in ("SETTLING", "ROLLING", "GETUP_BACK", "GETUP_FRONT", "STANDING_UP"), fw
            assert "FALL_DETECTED" in s["alerts"], s
    finally:
        g.stop()
        assert g.leftovers() == []
