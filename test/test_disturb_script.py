"""A command script's push and sustained force reach the plant through the edge and act on the tick they name: in
lockstep, the same physics step in every run (told on /vasimov/sim/events)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import Graph, wait_for
from rosprobe import RosProbe
from std_msgs.msg import String

from vasimov.ros import qos, topics

pytestmark = pytest.mark.graph


def test_a_scripted_push_lands_on_its_tick_in_lockstep(tmp_path: Path):
    """A script's push at t = 1.0 s acts from the control period of tick 50 (physics step 200) -- in every run."""
    script = tmp_path / "push.yaml"
    script.write_text("- {t: 0.1, cmd: stand}\n"
                      "- {t: 1.0, cmd: push, body: pelvis_link, force: [80, 0, 0], duration: 0.15}\n"
                      "- {t: 1.5, cmd: force, body: left_elbow_link, force: [0, 0, -20]}\n")
    g = Graph("--lockstep", "--duration", "4", "--policy", "hold", "--script", str(script), "foxglove:=false")
    probe = RosProbe(g.domain)
    try:
        probe.subscribe(topics.SIM_EVENTS, String, qos.EVENTS)
        wait_for(lambda: len(probe.all(topics.SIM_EVENTS)) >= 2, 120, "the scripted events")
        events = [json.loads(m.data) for m in probe.all(topics.SIM_EVENTS)]
        push = next(e for e in events if e["event"] == "push")
        assert (push["source"], push["step"], push["sim_time"]) == ("script", 200, 1.0), push
        force = next(e for e in events if e["event"] == "force")
        assert (force["step"], force["body"]) == (300, "left_elbow_link"), force
        assert g.proc.wait(timeout=120) == 0, g.output()[-3000:]
    finally:
        probe.close()
        g.stop()
