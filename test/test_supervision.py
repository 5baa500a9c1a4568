"""Which node's death stops the graph and which is restarted: the supervisor with stand-in processes (no ROS).

The launch entries say it in launch's own words (`on_exit: shutdown`, `respawn`, `respawn_delay`,
`respawn_max_retries`); here each node is a tiny script, so exits, restarts and backoff are exact and fast.
"""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import threading
from pathlib import Path

import pytest
from harness import wait_for

from vasimov import graph_status
from vasimov_tools import launch_file
from vasimov_tools.launch_file import LaunchDescription, NodeSpec
from vasimov_tools.supervisor import (
    EXIT_KILLED_WITH_DATA,
    EXIT_OBSERVER_FAILED,
    MAX_BACKOFF_S,
    Supervisor,
    restart_delay,
)

ROOT = Path(__file__).resolve().parent.parent
LAUNCH = ROOT / "launch" / "bringup.launch.yaml"
CONTROL = ("plant", "edge", "policy", "sdk_bridge")
OBSERVERS = ("foxglove_bridge", "binary_stream")


def _script(tmp_path: Path, name: str, body: str) -> str:
    """An executable that records its pid in tmp_path/<name>.pids, then runs `body` (a shell snippet)."""
    path = tmp_path / f"{name}.sh"
    path.write_text(f"#!/bin/sh\necho $$ >> {tmp_path / (name + '.pids')}\n{body}\n")
    path.chmod(0o755)
    return str(path)


def _pids(tmp_path: Path, name: str) -> list[int]:
    f = tmp_path / f"{name}.pids"
    return [int(x) for x in f.read_text().split()] if f.is_file() else []


class _Run:
    """A supervisor on its own thread, its output captured."""

    def __init__(self, nodes: list[NodeSpec]) -> None:
        self.out = io.StringIO()
        self.sup = Supervisor(LaunchDescription(args={}, arg_descriptions={}, nodes=tuple(nodes)), out=self.out,
                              grace_s=5.0)
        self.code: int | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        wait_for(self.sup.status_path.is_file, 10, "the first status file")

    def _run(self) -> None:
        self.code = self.sup.run_until_stopped()

    def status(self) -> dict:
        return json.loads(self.sup.status_path.read_text())

    def stop(self) -> int:
        self.sup.request_stop()
        self.thread.join(timeout=20)
        assert not self.thread.is_alive()
        assert self.code is not None
        return self.code


def _node(name: str, exe: str, **kw) -> NodeSpec:
    return NodeSpec(name=name, package="vasimov", executable=exe, **kw)


def test_the_launch_file_marks_control_nodes_and_observers():
    desc = launch_file.load(LAUNCH)
    by_name = {n.name: n for n in desc.nodes}
    for name in CONTROL:
        assert by_name[name].shutdown_on_exit and not by_name[name].respawn, name
    for name in OBSERVERS:
        spec = by_name[name]
        assert spec.respawn and not spec.shutdown_on_exit, name
        assert spec.respawn_delay > 0 and 0 < spec.respawn_max_retries <= 10, name


def test_the_recorder_up_adds_is_an_observer_that_is_not_restarted(tmp_path):
    from vasimov_tools.cli import with_recorder

    desc = with_recorder(launch_file.load(LAUNCH), LAUNCH, {}, tmp_path / "bag")
    rec = desc.nodes[-1]
    assert rec.name == "recorder" and not rec.shutdown_on_exit and not rec.respawn


@pytest.mark.parametrize("body,message", [
    ("on_exit: restart", "only 'shutdown'"),
    ("respawn: maybe", "not a boolean"),
    ("respawn_delay: -1.0", "respawn_delay must be >= 0"),
    ("respawn_max_retries: 2.5", "must be an integer"),
])
def test_bad_exit_attributes_are_refused(tmp_path, body, message):
    f = tmp_path / "l.yaml"
    f.write_text(f"launch:\n- node:\n    pkg: vasimov\n    exec: x\n    {body}\n")
    with pytest.raises(launch_file.LaunchFileError, match=message):
        launch_file.load(f)


def test_backoff_doubles_and_is_capped():
    spec = _node("o", "x", respawn=True, respawn_delay=0.5, respawn_max_retries=5)
    assert [restart_delay(spec, k) for k in range(4)] == [0.5, 1.0, 2.0, 4.0]
    assert restart_delay(spec, 20) == MAX_BACKOFF_S


def test_a_killed_observer_is_restarted_and_the_control_node_keeps_running(tmp_path, capsys):
    run = _Run([_node("plant", _script(tmp_path, "plant", "exec sleep 60"), shutdown_on_exit=True),
                _node("foxglove_bridge", _script(tmp_path, "fox", "exec sleep 60"), respawn=True,
                      respawn_delay=0.05, respawn_max_retries=3)])
    try:
        first = wait_for(lambda: _pids(tmp_path, "fox"), 10, "the observer to start")[0]
        os.kill(first, signal.SIGKILL)
        pids = wait_for(lambda: len(_pids(tmp_path, "fox")) == 2 and _pids(tmp_path, "fox"), 10, "the restart")
        assert pids[1] != first
        st = wait_for(lambda: run.status()["nodes"]["foxglove_bridge"]["restarts"] == 1 and run.status(), 5,
                      "the status file to show the restart")
        assert st["nodes"]["foxglove_bridge"] == {"role": "observer", "state": "running", "pid": pids[1],
                                                  "exits": 1, "restarts": 1, "last_exit": "killed by SIGKILL",
                                                  "startup_crashes": 0}
        assert st["nodes"]["plant"]["state"] == "running" and st["observer_exits"] == 1
        assert _pids(tmp_path, "plant") and run.thread.is_alive()
        assert os.environ.get(graph_status.ENV_VAR) is None  # the nodes get it, not this process
        assert run.sup.env[graph_status.ENV_VAR] == str(run.sup.status_path)
    finally:
        code = run.stop()
    assert code == EXIT_OBSERVER_FAILED  # otherwise a normal end, but an observer died on the way
    text = run.out.getvalue() + capsys.readouterr().err
    assert "observer 'foxglove_bridge' died (killed by SIGKILL); the robot keeps running; restarting it" in text
    assert "restarted observer 'foxglove_bridge'" in text


def test_restarts_are_bounded(tmp_path, capsys):
    run = _Run([_node("plant", _script(tmp_path, "plant", "exec sleep 60"), shutdown_on_exit=True),
                _node("binary_stream", _script(tmp_path, "bin", "exit 3"), respawn=True, respawn_delay=0.01,
                      respawn_max_retries=2)])
    try:
        wait_for(lambda: run.status()["nodes"]["binary_stream"]["state"] == "down", 10, "the retries to run out")
        st = run.status()["nodes"]["binary_stream"]
        assert (st["exits"], st["restarts"], st["last_exit"]) == (3, 2, "exit code 3")
        assert len(_pids(tmp_path, "bin")) == 3 and run.thread.is_alive()
    finally:
        run.stop()
    assert "no restarts left" in capsys.readouterr().err


def test_an_observer_without_respawn_is_reported_not_restarted(tmp_path, capsys):
    run = _Run([_node("plant", _script(tmp_path, "plant", "exec sleep 60"), shutdown_on_exit=True),
                _node("recorder", _script(tmp_path, "rec", "exit 1"))])
    try:
        wait_for(lambda: run.status()["nodes"]["recorder"]["state"] == "down", 10, "the recorder's exit")
        assert len(_pids(tmp_path, "rec")) == 1 and run.thread.is_alive()
    finally:
        assert run.stop() == EXIT_OBSERVER_FAILED
    assert "not restarted (no respawn in its launch entry)" in capsys.readouterr().err


def test_a_dead_control_node_stops_the_graph_and_nothing_is_restarted(tmp_path, capsys):
    run = _Run([_node("edge", _script(tmp_path, "edge", "exec sleep 60"), shutdown_on_exit=True),
                _node("foxglove_bridge", _script(tmp_path, "fox", "exec sleep 60"), respawn=True,
                      respawn_delay=0.01, respawn_max_retries=3)])
    edge = wait_for(lambda: _pids(tmp_path, "edge"), 10, "the control node to start")[0]
    wait_for(lambda: _pids(tmp_path, "fox"), 10, "the observer to start")
    os.kill(edge, signal.SIGKILL)
    run.thread.join(timeout=20)
    assert run.code == 1  # killed by a signal: a plain failure code
    assert "node 'edge' exited unexpectedly" in capsys.readouterr().err
    assert len(_pids(tmp_path, "fox")) == 1  # stopped with the graph, not restarted


def test_status_reader_without_a_supervisor():
    assert graph_status.read({}) is None
    assert graph_status.describe_exit(-9) == "killed by SIGKILL" and graph_status.describe_exit(2) == "exit code 2"


if sys.platform != "linux":  # PR_SET_PDEATHSIG and /proc are Linux-only
    pytestmark = pytest.mark.skip("Linux only")


def test_an_observer_with_a_configuration_error_is_not_restarted(tmp_path, capsys):
    from vasimov.ros.spin import EXIT_CONFIG
    from vasimov_tools.supervisor import EXIT_CONFIG as SUPERVISOR_EXIT_CONFIG

    assert SUPERVISOR_EXIT_CONFIG == EXIT_CONFIG
    run = _Run([_node("plant", _script(tmp_path, "plant", "exec sleep 60"), shutdown_on_exit=True),
                _node("foxglove_bridge", _script(tmp_path, "fox", f"exit {EXIT_CONFIG}"), respawn=True,
                      respawn_delay=0.01, respawn_max_retries=3)])
    try:
        wait_for(lambda: run.status()["nodes"]["foxglove_bridge"]["state"] == "down", 10, "the observer down")
        assert len(_pids(tmp_path, "fox")) == 1 and run.thread.is_alive()
    finally:
        run.stop()
    assert "its configuration is wrong" in capsys.readouterr().err


def test_a_node_that_writes_out_at_the_stop_gets_its_own_grace(tmp_path, capsys):
    """The recorder closes its bag after SIGINT; on a busy machine that took longer than the supervisor's default
    grace, and a kill left an unreadable bag behind a run that exited 0. Its spec carries a longer grace, and a kill
    that loses data is an exit code of its own."""
    slow_close = "trap 'sleep 2; touch {done}; exit 0' INT\nwhile true; do sleep 0.1; done"
    run = _Run([_node("plant", _script(tmp_path, "plant", "exec sleep 60"), shutdown_on_exit=True),
                _node("recorder", _script(tmp_path, "rec", slow_close.format(done=tmp_path / "rec.done")),
                      stop_grace_s=8.0, kill_loses_data=True)])
    run.sup.grace_s = 1.0  # shorter than the recorder's close: its own grace must apply
    wait_for(lambda: _pids(tmp_path, "rec") and _pids(tmp_path, "plant"), 10, "both nodes to start")
    assert run.stop() == 0
    assert (tmp_path / "rec.done").is_file()  # it finished writing
    assert "waiting up to 8 s for 'recorder' to finish writing" in run.out.getvalue()

    never = "trap '' INT\nwhile true; do sleep 0.1; done"
    run = _Run([_node("plant", _script(tmp_path, "plant2", "exec sleep 60"), shutdown_on_exit=True),
                _node("recorder", _script(tmp_path, "rec2", never), stop_grace_s=1.0, kill_loses_data=True)])
    wait_for(lambda: _pids(tmp_path, "rec2") and _pids(tmp_path, "plant2"), 10, "both nodes to start")
    assert run.stop() == EXIT_KILLED_WITH_DATA
    err = capsys.readouterr().err
    assert "'recorder' was killed before it finished writing: its output is incomplete" in err


def test_the_recorder_closes_its_bag_with_a_longer_grace(tmp_path):
    from vasimov_tools.cli import RECORDER_STOP_GRACE_S, with_recorder

    rec = with_recorder(launch_file.load(LAUNCH), LAUNCH, {}, tmp_path / "bag").nodes[-1]
    assert rec.stop_grace_s == RECORDER_STOP_GRACE_S > 10.0 and rec.kill_loses_data
    assert all(n.stop_grace_s is None and not n.kill_loses_data for n in launch_file.load(LAUNCH).nodes)


def _crash_first(tmp_path: Path, name: str, crashes: int, sig: str = "SEGV", after_start: bool = False) -> str:
    """A node whose first `crashes` processes die of SIG`sig`, before (or, with after_start, after) printing the
    start line; the later ones print it and run."""
    started = f"echo '{graph_status.STARTED_TAG}'"
    crash = f"if [ $(wc -l < {tmp_path / (name + '.pids')}) -le {crashes} ]; then kill -{sig} $$; sleep 5; fi"
    body = f"{started}\n{crash}\nexec sleep 60" if after_start else f"{crash}\n{started}\nexec sleep 60"
    return _script(tmp_path, name, body)


def test_a_control_node_that_crashes_while_starting_is_started_again_and_the_run_is_clean(tmp_path, capsys):
    """A SIGSEGV before the node's ROS entities exist (Fast DDS's create_publisher, seen in CI) has told the graph
    nothing: the node is started again, the graph keeps running, and the end says what happened."""
    run = _Run([_node("plant", _crash_first(tmp_path, "plant", 2), shutdown_on_exit=True),
                _node("edge", _script(tmp_path, "edge", "exec sleep 60"), shutdown_on_exit=True)])
    try:
        wait_for(lambda: len(_pids(tmp_path, "plant")) == 3, 10, "two start-up retries")
        st = wait_for(lambda: run.status()["nodes"]["plant"]["startup_crashes"] == 2 and run.status(), 5,
                      "the status file to show the crashes")
        assert st["nodes"]["plant"]["pid"] == _pids(tmp_path, "plant")[-1]
        assert st["nodes"]["plant"]["state"] == "running" and st["nodes"]["plant"]["exits"] == 0
        assert run.thread.is_alive() and len(_pids(tmp_path, "edge")) == 1
        assert graph_status.STARTED_TAG not in run.out.getvalue()  # taken out of the graph's output
    finally:
        code = run.stop()
    assert code == 0
    err = capsys.readouterr().err
    assert "node 'plant' crashed while starting (killed by SIGSEGV), before it created its ROS entities; starting " \
           "it again (start-up retry 1 of 2)" in err
    assert "node 'plant' crashed 2 time(s) while starting (killed by SIGSEGV, killed by SIGSEGV)" in err


def test_start_up_retries_are_bounded(tmp_path, capsys):
    from vasimov_tools.supervisor import MAX_STARTUP_RETRIES

    run = _Run([_node("plant", _crash_first(tmp_path, "plant", 99, sig="ABRT"), shutdown_on_exit=True)])
    run.thread.join(timeout=20)
    assert run.code == 1  # the third crash stops the graph like any control node's death
    assert len(_pids(tmp_path, "plant")) == 1 + MAX_STARTUP_RETRIES
    assert "node 'plant' exited unexpectedly with code -6" in capsys.readouterr().err


@pytest.mark.parametrize("crash", ["after_start", "sigkill"])
def test_a_crash_after_the_start_or_a_kill_is_not_retried(tmp_path, capsys, crash):
    """After the start line the node may have published: starting it again behind the graph's back would be a
    silent state change. A SIGKILL before it is someone's intent (the OOM killer, a user), not a crash."""
    if crash == "after_start":
        exe = _crash_first(tmp_path, "edge", 1, after_start=True)
    else:
        exe = _crash_first(tmp_path, "edge", 1, sig="KILL")
    run = _Run([_node("plant", _script(tmp_path, "plant", "exec sleep 60"), shutdown_on_exit=True),
                _node("edge", exe, shutdown_on_exit=True)])
    run.thread.join(timeout=20)
    assert run.code == 1 and len(_pids(tmp_path, "edge")) == 1
    err = capsys.readouterr().err
    assert "node 'edge' exited unexpectedly" in err and "while starting" not in err
