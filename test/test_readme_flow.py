"""The README's own command blocks, verbatim, against a real-time graph: what a new user types first.

The first block (after "With `make run` going, in another terminal:") is cut out of README.md and run by bash exactly
as written, as fast as a shell runs it -- no waits between `menlo stand -y && menlo balance -y && ...` and `menlo walk`.
A sampler reads the twin's ground truth and firmware state throughout. Once the robot has come to rest, the second
block (ground truth, then the virtual power cycle) is run verbatim too, so the next trial starts from boot; every
trial must walk and stay up.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile

import pytest
from harness import ROOT, VENV_BIN, Graph, TwinSampler, http_json, http_json_when_ready, wait_for

pytestmark = pytest.mark.graph
API = "http://127.0.0.1:3000"
TRIALS = 3


def readme_blocks() -> tuple[str, str]:
    """The two bash blocks that follow "With `make run` going"."""
    text = (ROOT / "README.md").read_text()
    marker = "With `make run` going, in another terminal:"
    assert marker in text, "the README's first command blocks moved; update this test with them"
    blocks = re.findall(r"```bash\n(.*?)```", text[text.index(marker):], re.S)
    assert len(blocks) >= 2
    return blocks[0], blocks[1]


def run_block(block: str, home: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-e", "-c", block], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL,
                          env={"HOME": home, "PATH": f"{VENV_BIN}:/usr/bin:/bin", "NO_COLOR": "1", "TERM": "dumb"})


def test_the_readme_commands_stand_balance_and_walk_the_robot_every_time():
    flow, sim_api = readme_blocks()
    assert "menlo stand -y && " in flow and "menlo walk" in flow
    assert "api/sim/truth" in sim_api and "api/sim/restart" in sim_api
    g = Graph()
    try:
        wait_for(lambda: "SDK bridge ready" in g.output() and "plant ready" in g.output(), 60, "graph start")
        for trial in range(TRIALS):
            epoch0 = int(http_json_when_ready(f"{API}/api/sim/truth")["epoch"])
            sampler = TwinSampler()
            sampler.start()
            with tempfile.TemporaryDirectory(prefix="menlo-home-") as home:
                r = run_block(flow, home)
                assert r.returncode == 0, r.stdout + r.stderr
                assert "READY" in r.stdout and "MOVE" in r.stdout, r.stdout
                # the CLI returns right after its stop command; the robot comes to rest on its own
                wait_for(lambda: abs(http_json(f"{API}/api/sim/truth")["base_lin_vel"][0]) < 0.05, 10,
                         "the robot to stop")
                api = run_block(sim_api, home)
            assert api.returncode == 0, api.stdout + api.stderr
            # the power cycle starts a new epoch: wait until the sampler has seen it
            wait_for(lambda s=sampler, e=epoch0: any(row["epoch"] != e for row in s.rows), 15, "the restart")
            sampler.halt.set()
            sampler.join(5)
            life = [row for row in sampler.rows if row["epoch"] == epoch0]
            assert life, "no samples before the restart"
            # curl prints no newline: the truth object and the restart's answer share a line
            truth = [json.JSONDecoder().raw_decode(line)[0] for line in api.stdout.splitlines()
                     if line.startswith("{") and '"base_pos"' in line]
            assert truth, api.stdout
            walked = truth[0]["base_pos"][0]
            lowest = min(row["z"] for row in life)
            print(f"trial {trial}: forward {walked:.3f} m, lowest pelvis {lowest:.3f} m, last mode "
                  f"{life[-1]['mode']}, sim {life[-1]['t']:.1f} s")
            assert all(row["flags"] == 0 for row in life), [row for row in life if row["flags"]][:3]
            assert lowest > 0.5
            assert walked >= 0.6
            assert life[-1]["mode"] == "MOVE"
        assert "motor command is" not in g.output()  # no stale command ever damped the robot
    finally:
        g.stop()
        assert g.leftovers() == []
