"""A graph leaves no Fast DDS files in /dev/shm: after Ctrl-C, and after a control node is killed with SIGKILL (which
skips DDS's teardown; the supervisor must clean up after it). Each run gets a private, empty /dev/shm (a tmpfs in its
own mount namespace) and a private network namespace, so nothing another run on this machine does is counted and
nothing is attributed by guesswork: every fastdds file left there is this graph's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VASIMOV = Path(sys.executable).parent / "vasimov"

pytestmark = [
    pytest.mark.graph,
    pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                       reason="needs root for a private /dev/shm (unshare -m)"),
]

# inside the namespaces: start the graph, wait (bounded) until it is up, end it the given way, list /dev/shm
_SCRIPT = r"""
set -u
mount -t tmpfs tmpfs /dev/shm && ip link set lo up || exit 90
log=$(mktemp)
"$VASIMOV" up --policy hold foxglove_port:=0 >"$log" 2>&1 &
up=$!
for i in $(seq 1200); do
  grep -q "SDK bridge ready" "$log" && grep -q "plant ready" "$log" && grep -q "policy runner ready" "$log" && break
  sleep 0.1
done
grep -q "plant ready" "$log" || { cat "$log"; exit 91; }
sleep 1
if [ "$HOW" = kill_edge ]; then
  edge=$(pgrep -P "$up" -f edge_node)
  kill -KILL "$edge"
else
  kill -INT "$up"
fi
for i in $(seq 600); do kill -0 "$up" 2>/dev/null || break; sleep 0.1; done
wait "$up"; echo "exit code $?"
echo "LEFT:"; ls -1 /dev/shm | grep -i fastdds || true
"""


def _run(how: str) -> str:
    env = dict(os.environ, HOW=how, VASIMOV=str(VASIMOV), ROS_DOMAIN_ID="7")
    env.pop("VASIMOV_IN_NETNS", None)
    r = subprocess.run(["unshare", "-m", "-n", "--propagation", "private", "bash", "-c", _SCRIPT], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, f"{how}: rc {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-2000:]}"
    return r.stdout


@pytest.mark.parametrize("how", ["ctrl_c", "kill_edge"])
def test_a_graph_leaves_no_fastdds_files(how: str) -> None:
    out = _run(how)
    left = out.split("LEFT:", 1)[1].split()
    assert left == [], f"{how}: Fast DDS files left in /dev/shm: {left}\n{out[-2000:]}"
