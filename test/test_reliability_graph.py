"""Issue 10 on the real graph: every socket on loopback, observers that die without taking the robot down.

One graph for the module (`vasimov up --record DIR`, every server on a free or fixed loopback port). The tests run
in file order and the last one ends the graph: a recorder that died makes the whole run exit with
EXIT_OBSERVER_FAILED, not 0.
"""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
from dataclasses import dataclass
from typing import Any

import pytest
from harness import Graph, child_pids, cmdline, http_json, http_json_when_ready, wait_for

from vasimov_tools.supervisor import EXIT_OBSERVER_FAILED

pytestmark = pytest.mark.graph

COUNTERS = "http://127.0.0.1:3000/api/sim/counters"
FOXGLOVE_PORT = re.compile(r"foxglove server on ([0-9.]+):(\d+)")
BINARY_PORT = re.compile(r"binary stream ready: ws://([0-9.]+):(\d+)")
LOOPBACK = ("127.0.0.1:", "[::1]:", "[::ffff:127.0.0.1]:")


@dataclass
class Run:
    graph: Graph


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    bag = tmp_path_factory.mktemp("reliability") / "bag"
    g = Graph("--policy", "hold", "foxglove_port:=0", "binary_port:=0", "--record", str(bag))
    try:
        wait_for(lambda: (FOXGLOVE_PORT.search(g.output()) and BINARY_PORT.search(g.output())
                          and "recording" in g.output().lower()) or g.proc.poll() is not None, 60,
                 "the servers' port lines and the recorder")
        assert g.proc.poll() is None, g.output()[-3000:]
        g.wait_started(n_nodes=7)
        http_json_when_ready(COUNTERS, timeout=30)
        yield Run(g)
    finally:
        g.stop()


def _pid(g: Graph, executable: str) -> int:
    """The node's current process (a restarted observer has a new one)."""
    return next(p for p in child_pids(g.proc.pid) if executable in cmdline(p))


def _sockets(kind: str, pids: set[int]) -> list[tuple[str, int]]:
    """(local address, pid) of every listening socket of `pids`: kind 'u' = UDP, 't' = TCP listeners."""
    out = subprocess.run(["ss", f"-l{kind}npH"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        cols = line.split()
        for pid in (int(m) for m in re.findall(r"pid=(\d+)", line)):
            if pid in pids:
                found.append((cols[3], pid))
    return found


def _counters() -> dict[str, Any]:
    return http_json(COUNTERS)


def test_every_socket_of_the_graph_listens_on_loopback_only(run):
    """DDS (Fast DDS profile config/fastdds_localhost.xml) and every server: nothing on 0.0.0.0 / [::]."""
    def snapshot() -> tuple[dict[int, str], list, list] | None:
        """The graph's processes now and their sockets, once every one has opened its DDS sockets (a process
        started a moment ago, e.g. an observer restarted on a loaded machine, may not have yet)."""
        names: dict[int, str] = {}
        for p in child_pids(run.graph.proc.pid):
            with contextlib.suppress(OSError):
                argv = cmdline(p).split()
                if argv:  # an empty command line: a process that has exited and is not reaped yet
                    names[p] = argv[0].rsplit("/", 1)[-1]
        udp, tcp = _sockets("u", set(names)), _sockets("t", set(names))
        return (names, udp, tcp) if names and {pid for _, pid in udp} == set(names) else None

    # not vacuous: every node has its DDS sockets (the servers are checked below)
    names, udp, tcp = wait_for(snapshot, 30, "every process of the graph with its DDS sockets")
    exposed = [(addr, names[pid]) for addr, pid in udp + tcp if not addr.startswith(LOOPBACK)]
    assert exposed == [], f"sockets beyond loopback: {exposed}"
    addrs = {a for a, _ in udp + tcp}
    assert {"127.0.0.1:3000", "127.0.0.1:8850"} <= addrs, sorted(addrs)


def _frames() -> int:
    return int(_counters()["state_frames_sent"])


@pytest.mark.parametrize("executable,node", [("foxglove_bridge_node", "foxglove_bridge"),
                                             ("binary_stream_node", "binary_stream")])
def test_a_killed_observer_is_restarted_and_the_robot_keeps_streaming(run, executable, node):
    g = run.graph
    victim = _pid(g, executable)
    port_lines = len((FOXGLOVE_PORT if node == "foxglove_bridge" else BINARY_PORT).findall(g.output()))
    subprocess.run(["kill", "-9", str(victim)], check=True)
    st = wait_for(lambda: (_counters().get("graph") or {}).get("nodes", {}).get(node, {}).get("restarts") == 1
                  and _counters()["graph"]["nodes"][node], 30, f"{node}'s restart in /api/sim/counters")
    assert st["role"] == "observer" and st["exits"] == 1 and st["last_exit"] == "killed by SIGKILL"
    assert st["pid"] != victim
    # the restarted server is back (its port line again), and the SDK state stream never stopped
    wait_for(lambda: len((FOXGLOVE_PORT if node == "foxglove_bridge" else BINARY_PORT).findall(g.output()))
             > port_lines, 60, f"the restarted {node} serving again")
    before = _frames()
    wait_for(lambda: _frames() > before + 50, 30, "SDK state frames after the restart")
    assert g.proc.poll() is None
    assert f"observer '{node}' died (killed by SIGKILL); the robot keeps running" in g.output()
    for control in ("plant", "edge", "policy", "sdk_bridge"):
        assert _counters()["graph"]["nodes"][control]["state"] == "running"


def test_a_dead_recorder_is_reported_not_restarted_and_the_run_exits_non_zero(run):
    g = run.graph
    recorder = _pid(g, "recorder_node")
    subprocess.run(["kill", "-9", str(recorder)], check=True)
    wait_for(lambda: _counters()["graph"]["nodes"]["recorder"]["state"] == "down", 30, "the recorder reported down")
    before = _frames()
    wait_for(lambda: _frames() > before + 50, 30, "SDK state frames after the recorder's death")
    assert g.proc.poll() is None
    assert g.stop(signal.SIGINT) == EXIT_OBSERVER_FAILED, g.output()[-3000:]
    out = g.output()
    assert "observer 'recorder' died (killed by SIGKILL); the robot keeps running; not restarted" in out
    assert "observer 'recorder' exited 1 time(s) during the run" in out
