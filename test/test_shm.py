"""A process that must exit abruptly (the nodes' teardown guard) removes its own Fast DDS segments first, and only
its own: it also maps the segment of every peer it reads from, and a peer that is still running keeps its files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness import graph_env, next_domain_id

CHILD = r"""
import json, os, sys, time
import rclpy
from std_msgs.msg import String
from vasimov.ros.shm import mapped_segments, own_segments, remove_own_segments, segment_files
rclpy.init()
node = rclpy.create_node("shm_probe_" + sys.argv[1])
pub = node.create_publisher(String, "/shm_probe", 10)
sub = node.create_subscription(String, "/shm_probe", lambda _m: None, 10)
if sys.argv[1] == "peer":  # publish until the test says go (a line on stdin), then go as the guard would
    import select
    while not select.select([sys.stdin], [], [], 0.0)[0]:
        pub.publish(String(data="x" * 64))
        rclpy.spin_once(node, timeout_sec=0.05)
    remove_own_segments()
    os._exit(0)
deadline = time.monotonic() + 60
while len(mapped_segments()) < 2 and time.monotonic() < deadline:  # its own, and the peer's once read
    pub.publish(String(data="x" * 64))
    rclpy.spin_once(node, timeout_sec=0.05)
mine = sorted(own_segments())
mapped = sorted(mapped_segments())
files = {n: [f for f in segment_files(n) if os.path.exists("/dev/shm/" + f)] for n in mapped}
removed = remove_own_segments()
print(json.dumps({"mine": mine, "mapped": mapped, "files": files, "removed": removed}), flush=True)
os._exit(0)  # no DDS teardown, as the guard exits
"""


def _probe(env: dict[str, str], role: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, role], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def test_an_abrupt_exit_removes_its_own_segment_files_and_leaves_a_running_peers_alone():
    env = graph_env(next_domain_id())
    peer = _probe(env, "peer", stdin=subprocess.PIPE)
    try:
        out_text, err = _probe(env, "main").communicate(timeout=90)
        assert out_text.strip(), err
        out = json.loads(out_text.strip().splitlines()[-1])
        assert len(out["mine"]) == 1, out  # one participant, one segment of its own
        assert len(out["mapped"]) == 2, f"the peer's segment was never mapped: nothing was tested: {out}"
        (own,), (other,) = out["mine"], set(out["mapped"]) - set(out["mine"])
        assert {own, f"{own}_el"} <= set(out["files"][own]), out  # segment and lock file (a semaphore, if any)
        assert sorted(out["removed"]) == sorted(out["files"][own])
        assert not [f for f in out["files"][own] if (Path("/dev/shm") / f).exists()]
        assert (Path("/dev/shm") / other).exists(), "the running peer's segment was removed"
        assert not any(n.startswith("fastdds_port") for n in out["removed"]), "a shared port segment was removed"
    finally:
        peer.stdin.close()
        peer.wait(timeout=30)
