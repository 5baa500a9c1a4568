"""A flaky SDK link on the running twin, through the real menlo-sdk: launch arguments, /api/sim/link, the SDK's and
the firmware's reactions (issue 12, part 5).

The graph starts with ``link_state_loss:=0.5`` (the start-up path); later tests change the link over HTTP. Rates are
ratios of samples the SDK accepted to frames the robot sent in the same window, so a slow machine (RTF < 1) changes
neither side of the comparison.
"""

from __future__ import annotations

import json
import math
import threading
import time
import urllib.error
import urllib.request

import pytest
from harness import Graph, http_json, run_menlo, sim_post, sim_restart, wait_for
from harness import sim_firmware as _firmware
from harness import sim_truth_or_none as _truth_or_none
from menlo.asimov import ConnectionConfig, LinkLostError, Mode, Robot, UdpConfig

from vasimov import joints, motor_space

pytestmark = pytest.mark.graph
API = "http://127.0.0.1:3000"
LINK = f"{API}/api/sim/link"


def _post(body: object) -> tuple[int, dict]:
    return sim_post("/api/sim/link", body)
STAND_STATE = tuple(float(v) for v in motor_space.joint_to_state(joints.DEFAULT_POS))


@pytest.fixture(scope="module")
def graph():
    g = Graph("--policy", "hold", "link_state_loss:=0.5", "seed:=5")
    try:
        g.wait_started()
        wait_for(lambda: "SDK bridge ready" in g.output() and "plant ready" in g.output(), 60, "graph start")
        wait_for(lambda: _truth_or_none() is not None, 30, "ground truth")
        yield g
    finally:
        g.stop()
        assert g.leftovers() == []




def _robot() -> Robot:
    robot = Robot(ConnectionConfig(udp=UdpConfig("127.0.0.1")))
    robot.connect(timeout=5.0)
    return robot




class _Accepted:
    def __init__(self, robot: Robot) -> None:
        self.n = 0
        self._lock = threading.Lock()
        robot.on_state = self._seen

    def _seen(self, _s: object) -> None:
        with self._lock:
            self.n += 1


def _share(counter: _Accepted, seconds: float) -> tuple[float, float]:
    """(samples the SDK accepted / frames the robot sent, the SDK's rate in Hz) over a window of `seconds`."""
    def sent() -> int:
        return int(http_json(f"{API}/api/sim/counters")["state_frames_sent"])

    s0, n0, t0 = sent(), counter.n, time.monotonic()
    time.sleep(seconds)  # a measurement window, not a wait for a condition
    s1, n1, t1 = sent(), counter.n, time.monotonic()
    return (n1 - n0) / max(1, s1 - s0), (n1 - n0) / (t1 - t0)


def test_start_arguments_halve_the_state_the_sdk_accepts_and_clearing_restores_it(graph):
    assert http_json(LINK) == {
        "state": {"loss": 0.5, "delay_ms": 0.0, "jitter_ms": 0.0, "duplicate": 0.0, "reorder": 0.0},
        "command": {"loss": 0.0, "delay_ms": 0.0, "jitter_ms": 0.0, "duplicate": 0.0, "reorder": 0.0},
        "seed": 5,
    }
    assert "link (start-up parameters): state: loss 0.5; command: perfect" in graph.output()
    robot = _robot()
    try:
        counter = _Accepted(robot)
        lossy, lossy_hz = _share(counter, 3.0)
        status, body = _post({})
        assert status == 200 and body["state"]["loss"] == 0.0
        clean, clean_hz = _share(counter, 3.0)
        print(f"SDK accepted {lossy:.3f} of the frames sent at loss 0.5 ({lossy_hz:.0f} Hz), {clean:.3f} unimpaired "
              f"({clean_hz:.0f} Hz): ratio {lossy / clean:.3f}")
        assert clean >= 0.95
        assert 0.40 <= lossy / clean <= 0.60
    finally:
        robot.close()
    c = http_json(f"{API}/api/sim/counters")["link"]["state"]
    assert c["lost"] > 0 and c["lost"] + c["released"] + c["queued"] == c["offered"]


@pytest.mark.parametrize("body,field", [
    ({"direction": "state", "loss": 1.5}, "loss"),
    ({"direction": "state", "delay_ms": -1}, "delay_ms"),
    ({"direction": "command", "jitter_ms": "a lot"}, "jitter_ms"),
    ({"direction": "sideways", "loss": 0.1}, "direction"),
    ({"loss": 0.1}, "direction"),
    ({"direction": "both", "lossy": 0.1}, "lossy"),
    ([0.5], None),
])
def test_bad_link_requests_are_400_naming_the_field_and_change_nothing(graph, body, field):
    before = http_json(LINK)
    status, answer = _post(body)
    assert status == 400, answer
    assert answer.get("field") == field and (field is None or field in answer["error"])
    assert http_json(LINK) == before


def test_non_finite_values_are_refused(graph):
    req = urllib.request.Request(LINK, data=b'{"direction": "state", "delay_ms": NaN}', method="POST")
    with pytest.raises(urllib.error.HTTPError) as exc:
        urllib.request.urlopen(req, timeout=5)
    assert exc.value.code == 400
    assert json.loads(exc.value.read())["field"] == "delay_ms"


def test_set_read_back_and_clear(graph):
    status, body = _post({"direction": "both", "delay_ms": 20, "jitter_ms": 5, "duplicate": 0.1, "reorder": 0.05})
    assert status == 200
    expected = {"loss": 0.0, "delay_ms": 20.0, "jitter_ms": 5.0, "duplicate": 0.1, "reorder": 0.05}
    assert http_json(LINK)["state"] == expected == http_json(LINK)["command"] == body["command"]
    assert _post({"direction": "command"})[1]["command"]["delay_ms"] == 0.0  # one direction, replaced whole
    assert http_json(LINK)["state"] == expected
    assert _post({})[0] == 200
    assert all(not any(v for v in http_json(LINK)[d].values()) for d in ("state", "command"))


def test_a_three_second_blackout_raises_link_lost_and_clearing_restores_the_stream(graph, tmp_path):
    robot = _robot()
    lost: list[float] = []
    try:
        robot.on_link_lost = lambda _exc: lost.append(time.monotonic())
        start = time.monotonic()
        assert _post({"direction": "state", "loss": 1.0})[0] == 200
        wait_for(lambda: lost, 4.0, "the SDK's LinkLostError")
        assert 2.0 <= lost[0] - start <= 3.0, lost[0] - start
        with pytest.raises(LinkLostError):
            robot.stand(wait=False)
        wait_for(lambda: time.monotonic() - start >= 3.0, 2.0, "the end of the 3 s blackout")
        assert _post({})[0] == 200
    finally:
        robot.close()
    r = run_menlo("robots", "add", "sim", "--mode", "udp", "--udp", "127.0.0.1", home=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    status = json.loads(run_menlo("status", "--json", home=str(tmp_path)).stdout)
    assert status["fresh"] and status["verdict"] == "READY", status
    assert "link (POST /api/sim/link from 127.0.0.1): state: loss 1; command: perfect" in graph.output()


def test_commands_delayed_past_the_trajectory_watchdog_damp_the_robot(graph):
    """Edge's trajectory session timeout: 2 s without a setpoint -> DAMP. A 2.5 s command delay opens exactly such a
    gap in the SDK's 10 Hz hold, so the firmware damps the robot, and the late setpoints find it in DAMP."""
    _post({})
    sim_restart()
    robot = _robot()
    try:
        robot.stand(timeout=10)
        robot.set_joints(STAND_STATE, duration=0.5, tolerance=0.05)  # MOVE/TRAJECTORY, held at 10 Hz
        assert robot.get_state().mode == Mode.MOVE
        before = http_json(f"{API}/api/sim/counters")["firmware"]
        start = time.monotonic()
        assert _post({"direction": "command", "delay_ms": 2500})[0] == 200
        wait_for(lambda: robot.get_state().mode == Mode.DAMP, 6, "the trajectory watchdog's DAMP, seen by the SDK")
        assert time.monotonic() - start >= 1.9
        after = http_json(f"{API}/api/sim/counters")
        assert after["firmware"]["trajectory_timeouts"] == before.get("trajectory_timeouts", 0) + 1
        assert after["link"]["command"]["delayed"] > 0
        assert math.isclose(http_json(LINK)["command"]["delay_ms"], 2500.0)
        # the held setpoints still arrive, 2.5 s late, into DAMP: dropped, the robot stays damped
        wait_for(lambda: http_json(f"{API}/api/sim/counters")["firmware"].get("trajectory_in_damp", 0)
                 > before.get("trajectory_in_damp", 0), 5, "the late setpoints, dropped in DAMP")
        assert _firmware()["mode"] == "DAMP"
    finally:
        robot.close()
        _post({})
