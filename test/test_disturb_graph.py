"""Boot states, sustained forces, the push service and the event topic on the running graph, seen by the unmodified
menlo-sdk (``menlo.asimov.Robot``, the ``menlo`` CLI) and a ROS client; a scripted push lands on its tick in lockstep.

The session runs in a private network namespace (tools/run_tests.sh), so the SDK's fixed ports are this run's own.
"""

from __future__ import annotations

import json
import tempfile
import urllib.error
import urllib.request

import pytest
from harness import Graph, http_json, http_json_when_ready, run_menlo, wait_for
from harness import sim_firmware as _firmware
from harness import sim_truth_or_none as _truth_or_none
from menlo.asimov import ConnectionConfig, Mode, Robot, RobotFaultedError, UdpConfig
from rosprobe import RosProbe
from std_msgs.msg import String
from vasimov_msgs.srv import Push, Restart

from vasimov.ros import qos, topics

pytestmark = pytest.mark.graph
API = "http://127.0.0.1:3000"
FALL_FLAGS = 0x101  # bit 0 (a fault is latched) | 1 << (1 + FALL_DETECTED 7)


@pytest.fixture(scope="module")
def graph():
    g = Graph("--policy", "hold")
    try:
        g.wait_started()
        wait_for(lambda: "SDK bridge ready" in g.output() and "plant ready" in g.output(), 60, "graph start")
        wait_for(lambda: _truth_or_none() is not None, 30, "ground truth")
        yield g
    finally:
        g.stop()
        assert g.leftovers() == []


def _http(method: str, path: str, data: dict | None = None) -> tuple[int, dict]:
    body = None if data is None else json.dumps(data).encode()
    req = urllib.request.Request(f"{API}{path}", data=body, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5.0) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _restart(boot: str | None = None) -> None:
    before = http_json_when_ready(f"{API}/api/sim/truth")["epoch"]
    reply = http_json_when_ready(f"{API}/api/sim/restart", {} if boot is None else {"boot": boot})
    assert reply["boot"] == (boot or "gantry")
    wait_for(lambda: (_truth_or_none() or {}).get("epoch", -1) > before, 15, "virtual restart")
    wait_for(lambda: http_json(f"{API}/api/sim/counters")["disturbances"]["epoch"] > before, 10, "restart event")


def _robot() -> Robot:
    robot = Robot(ConnectionConfig(udp=UdpConfig("127.0.0.1")))
    robot.connect(timeout=5.0)
    return robot


def test_standing_boot_is_stand_unarmed_then_armed_and_balances(graph):
    _restart("standing")
    robot = _robot()
    try:
        state = robot.get_state()
        assert state.mode == Mode.STAND and state.error_flags == 0 and not state.alerts
        fw = _firmware()
        assert not fw["gantry_engaged"] and fw["mode"] == "STAND"
        wait_for(lambda: robot.armed, 10, "the SDK's arming hold")
        truth = _truth_or_none()
        assert truth["base_pos"][2] > 0.58, truth  # on its own feet, no hook
        robot.balance()  # straight into the walking policy: no `stand` needed, and no gantry to release
        wait_for(lambda: robot.get_state().mode == Mode.MOVE, 5, "MOVE")
        assert _firmware()["gantry_engaged"] is False
    finally:
        robot.close()
    assert http_json(f"{API}/api/sim/counters")["disturbances"]["boot"] == "standing"


@pytest.mark.parametrize("boot", ["lying_back", "lying_front"])
def test_lying_boot_is_a_latched_fall_until_a_restart(graph, boot):
    _restart(boot)
    robot = _robot()
    try:
        state = robot.get_state()
        assert state.mode == Mode.DAMP and state.error_flags & FALL_FLAGS == FALL_FLAGS
        assert [a.id for a in state.alerts] == [7]  # FALL_DETECTED
        with pytest.raises(RobotFaultedError):
            robot.stand(timeout=3)
    finally:
        robot.close()
    truth = _truth_or_none()
    assert truth["base_pos"][2] < 0.2, truth  # on the floor
    with tempfile.TemporaryDirectory(prefix="menlo-home-") as home:
        assert run_menlo("robots", "add", "sim", "--mode", "udp", "--udp", "127.0.0.1", home=home).returncode == 0
        status = json.loads(run_menlo("status", "--json", home=home).stdout)
        assert status["verdict"] == "FAULTED" and "FALL_DETECTED" in status["alerts"]
        _restart()  # only a restart recovers, as on the robot
        r = run_menlo("stand", "-y", home=home)
        assert r.returncode == 0, r.stdout + r.stderr


def test_a_sustained_force_holds_until_cleared_and_topples_a_standing_robot(graph):
    _restart("standing")
    assert _http("POST", "/api/sim/force", {"body": "waist_yaw_link", "force": [400, 0, 0]})[0] == 400
    status, reply = _http("POST", "/api/sim/force", {"body": "no_such_link", "force": [10, 0, 0]})
    assert status == 404 and "valid:" in reply["error"]
    assert _http("POST", "/api/sim/force", {"body": "waist_yaw_link", "force": [1, 0, 0], "duration": 1})[0] == 400
    robot = _robot()
    try:
        assert robot.get_state().error_flags == 0
        status, reply = _http("POST", "/api/sim/force", {"body": "waist_yaw_link", "force": [150, 0, 0]})
        assert status == 202 and reply["until"] == "cleared"
        wait_for(lambda: robot.get_state().error_flags & FALL_FLAGS == FALL_FLAGS, 10, "the fall latch")
        assert robot.get_state().mode == Mode.DAMP
    finally:
        robot.close()
    counters = http_json(f"{API}/api/sim/counters")["disturbances"]
    assert counters["sustained_forces"] == {"waist_yaw_link": [150.0, 0.0, 0.0]}
    assert http_json(f"{API}/api/sim/force")["sustained_forces"] == {"waist_yaw_link": [150.0, 0.0, 0.0]}
    status, reply = _http("DELETE", "/api/sim/force")
    assert status == 202 and reply["cleared"] == ["waist_yaw_link"]
    wait_for(lambda: http_json(f"{API}/api/sim/force")["sustained_forces"] == {}, 10, "the force cleared")
    _restart()
    assert http_json(f"{API}/api/sim/counters")["disturbances"]["sustained_forces"] == {}


def test_push_and_restart_services_answer_with_the_rules_and_every_event_is_a_topic(graph):
    _restart()
    probe = RosProbe(graph.domain)
    try:
        probe.subscribe(topics.SIM_EVENTS, String, qos.EVENTS)
        push = probe.node.create_client(Push, topics.SIM_PUSH_SERVICE)
        restart = probe.node.create_client(Restart, topics.SIM_RESTART_SERVICE)
        assert push.wait_for_service(timeout_sec=20) and restart.wait_for_service(timeout_sec=20)

        def call(client, request):
            future = client.call_async(request)
            wait_for(future.done, 10, "the service reply")
            return future.result()

        ok = call(push, Push.Request(body="pelvis_link", force=[30.0, 0.0, 0.0], duration=0.1))
        assert ok.accepted and ok.message == "push [30.0, 0.0, 0.0] N on pelvis_link for 0.1 s"
        bad = call(push, Push.Request(body="pelvis_link", force=[1000.0, 0.0, 0.0], duration=1.0))
        assert not bad.accepted and "impulse" in bad.message
        bad = call(push, Push.Request(body="nope", force=[1.0, 0.0, 0.0], duration=0.1))
        assert not bad.accepted and "unknown body 'nope'" in bad.message
        held = call(push, Push.Request(body="pelvis_link", force=[0.0, 0.0, 20.0], hold=True))
        assert held.accepted and "until cleared" in held.message
        bad = call(restart, Restart.Request(boot="sitting"))
        assert not bad.accepted and "valid: gantry, standing, lying_back, lying_front" in bad.message
        before = _truth_or_none()["epoch"]
        done = call(restart, Restart.Request(boot="lying_front"))
        assert done.accepted and done.epoch == before + 1

        def events():
            return [json.loads(m.data) for m in probe.all(topics.SIM_EVENTS)]

        wait_for(lambda: any(e["event"] == "restart" and e["boot"] == "lying_front" for e in events()), 10,
                 "the restart event")
        mine = [e for e in events() if e["epoch"] == before or e["event"] == "restart"]
        kinds = [(e["event"], e.get("source")) for e in mine if e["epoch"] >= before]
        assert kinds[-6:] == [("push", "service"), ("rejected", "service"), ("rejected", "service"),
                              ("force", "service"), ("rejected", "service"), ("restart", "service")], kinds
        force = next(e for e in mine if e["event"] == "force")
        assert force["active"] == {"pelvis_link": [0.0, 0.0, 20.0]} and force["step"] > 0
        _restart()
    finally:
        probe.close()
