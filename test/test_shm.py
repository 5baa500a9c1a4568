"""A process that must exit abruptly (the nodes' teardown guard) removes its own Fast DDS segments first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness import graph_env, next_domain_id

CHILD = r"""
import json, os, sys, time
import rclpy
from vasimov.ros.shm import mapped_segments, remove_own_segments
rclpy.init()
node = rclpy.create_node("shm_probe")
pub = node.create_publisher(__import__("std_msgs.msg", fromlist=["String"]).String, "/shm_probe", 10)
deadline = time.monotonic() + 20
while not mapped_segments() and time.monotonic() < deadline:
    time.sleep(0.05)
mine = sorted(mapped_segments())
removed = remove_own_segments()
print(json.dumps({"mine": mine, "removed": removed}), flush=True)
os._exit(0)  # no DDS teardown, as the guard exits
"""


def test_an_abrupt_exit_leaves_no_segment_of_its_own():
    env = graph_env(next_domain_id())
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["mine"], "the participant mapped no segment: nothing was tested"
    assert all(name in out["removed"] for name in out["mine"])
    assert not [n for n in out["mine"] if (Path("/dev/shm") / n).exists()]
    assert not any(n.startswith("fastdds_port") for n in out["removed"]), "a shared port segment was removed"
