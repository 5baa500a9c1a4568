"""`vasimov topics` and `vasimov echo` against a running graph, plus the formatting they share (no ROS needed)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml
from harness import VENV_BIN, Graph, wait_for

from vasimov_tools import introspect


def _run(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(VENV_BIN / "vasimov"), *args], env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def test_yaml_and_json_formatting_of_a_message():
    from vasimov_msgs.msg import Alert, FirmwareState

    fw = FirmwareState(mode=1, mode_name="STAND", armed=True, alerts=[Alert(id=3, name="x: y")])
    fw.velocity_command = [0.1, float("nan"), 0.0]
    plain = introspect.to_plain(fw)
    assert plain["mode_name"] == "STAND" and plain["alerts"][0]["id"] == 3
    assert plain["stamp"] == {"sec": 0, "nanosec": 0}
    text = introspect.format_yaml(plain)
    back = yaml.safe_load(text)
    assert back["mode"] == 1 and back["armed"] is True and back["alerts"][0]["name"] == "x: y"
    assert back["velocity_command"][0] == 0.1 and back["counter_names"] == []
    line = introspect.format_json(plain)
    assert json.loads(line)["velocity_command"] == [0.1, None, 0.0]


def test_rate_needs_two_messages():
    r = introspect.TopicRate("/t", ["std_msgs/msg/String"], 1, 0)
    assert r.rate_hz is None
    r.count, r.first, r.last = 11, 1.0, 2.0
    assert r.rate_hz == pytest.approx(10.0)
    assert "/t" in introspect.format_table([r], 2.0)


def test_message_class_errors_name_the_problem():
    assert introspect.message_class("sensor_msgs/msg/JointState").__name__ == "JointState"
    with pytest.raises(introspect.IntrospectError, match="not a message type"):
        introspect.message_class("std_srvs/srv/Trigger")
    with pytest.raises(introspect.IntrospectError, match="not importable"):
        introspect.message_class("no_pkg/msg/Nothing")


@pytest.mark.graph
def test_topics_and_echo_against_a_running_graph(graph_factory):
    g: Graph = graph_factory("--policy", "hold", "foxglove:=false", "binary_port:=0")
    wait_for(lambda: "plant ready" in g.output() and "SDK bridge ready" in g.output()
             and "policy runner ready" in g.output(), 60, "graph start")

    r = _run("topics", "--window", "2", env=g.env)
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line.split() for line in r.stdout.splitlines() if line.startswith("/")}
    assert rows["/vasimov/plant/state"][1] == "vasimov_msgs/msg/PlantState"
    assert rows["/vasimov/firmware/state"][1] == "vasimov_msgs/msg/FirmwareState"
    state_hz = float(rows["/vasimov/plant/state"][4])
    tick_hz = float(rows["/vasimov/plant/tick"][4])
    # 200 Hz physics and 50 Hz control at a real-time factor of 1; a loaded machine slows simulated time (the twin
    # never drops a tick), so judge the measured rates by each other and against the ceiling, not a wall-clock floor
    assert 20 <= state_hz <= 230 and 5 <= tick_hz <= 60, r.stdout
    assert 3.0 <= state_hz / tick_hz <= 5.0, r.stdout  # four physics steps per control tick
    assert re.search(r"rates measured over 2 s", r.stdout)
    # discovery settled before reading the graph: every plant topic is listed, latched ones without a fake rate
    for topic in ("/clock", "/joint_states", "/imu", "/vasimov/ground_truth/feet", "/vasimov/sdk/datagrams"):
        assert topic in rows, f"{topic} missing:\n{r.stdout}"
    assert rows["/robot_description"][4] == "latched"

    r = _run("echo", "/vasimov/firmware/state", "--once", env=g.env)
    assert r.returncode == 0, r.stderr
    doc = yaml.safe_load(r.stdout.split("\n---")[0])
    assert doc["mode_name"] == "DAMP" and len(doc["motor_temperature"]) == 25
    assert r.stdout.rstrip().endswith("---")

    r = _run("echo", "/joint_states", "--json", "--count", "3", env=g.env)
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(lines) == 3 and len(lines[0]["position"]) == 25 and lines[0]["name"][0]
    stamps = [m["header"]["stamp"]["sec"] * 10**9 + m["header"]["stamp"]["nanosec"] for m in lines]
    assert stamps == sorted(stamps)

    # 3 s: the error lists what a fresh participant discovered meanwhile; 1 s missed topics on a loaded CI machine
    r = _run("echo", "/no/such/topic", "--wait", "3", env=g.env)
    assert r.returncode == 1 and "no publisher of /no/such/topic" in r.stderr
    assert "/vasimov/plant/state" in r.stderr  # the error lists what exists
