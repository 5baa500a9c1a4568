"""The SDK bridge node alone, in real time, with the test as its plant and firmware and as the SDK on the wire.

Plant and firmware states in, RobotState datagrams out (decoded with the SDK's own decoder, menlo-sdk over
asimov-protocol); SDK command datagrams (encoded with the SDK's own encoder) in, /vasimov/command out; the HTTP API
(`/api/version`, `/api/sim/*`) answering from the states and asking the plant through /vasimov/sim/control.
"""

from __future__ import annotations

import json
import math
import re
import socket
import urllib.error
import urllib.request
from typing import Any

import numpy as np
import pytest
from harness import UdpListener, wait_for
from menlo.asimov import Mode
from menlo.asimov._command import ModeCommand, Velocity
from menlo.asimov.transport._wire import decode_state, encode_command
from node_harness import TEMPERATURES, FakeRobot, Repeater, publishers_matched, run_to_exit
from rosprobe import RosProbe
from vasimov_msgs.msg import PlantFault, SimControl
from vasimov_msgs.msg import RobotCommand as RobotCommandMsg

from vasimov import joints, motor_space
from vasimov.alerts import ALERT_FIRMWARE_STALL
from vasimov.ros import node_names, qos, topics

pytestmark = pytest.mark.node

DT = 0.005
DECIMATION = 4
HOST = "127.0.0.1"
READY = re.compile(r"SDK bridge ready: commands on udp \('127\.0\.0\.1', (\d+)\).* http on \('127\.0\.0\.1', (\d+)\)")
ANKLE_SLOTS = {i for pair in joints.ANKLE_PAIRS for i in pair}


def http(method: str, url: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture
def bridge(node_factory):
    receiver = UdpListener(decode_state)  # the SDK's own decoder
    node = node_factory("sdk_bridge_node", {"lockstep": False, "command_port": 0, "http_port": 0,
                                            "state_port": receiver.port, "robot_os_version": "0.2.7"},
                        config="sdk_bridge")
    probe = RosProbe(node.domain, name=node_names.EDGE)  # the test reads commands as the firmware does
    try:
        m = node.wait_log(READY.pattern)
        yield node, probe, receiver, int(m.group(1)), f"http://{HOST}:{m.group(2)}"
    finally:
        probe.close()
        receiver.close()


def test_states_in_sdk_frames_out(bridge):
    _node, probe, receiver, _cmd_port, api = bridge
    fake = FakeRobot(probe)
    wait_for(lambda: publishers_matched(fake.samples, fake.firmware), 40, "the bridge's topics to match")
    with Repeater(fake.publish_once):
        frames = wait_for(lambda: len(f := receiver.all()) >= 40 and f, 30, "40 state frames")
        seqs = [f.sequence for f in frames]
        assert seqs == list(range(1, len(seqs) + 1)), "one frame per plant state, sequence from 1"
        # the two topics race: samples that beat the first firmware state go out as the robot boots (DAMP, no part)
        booting = next(i for i, f in enumerate(frames) if f.mode == Mode.STAND)
        assert all(f.mode == Mode.DAMP and f.error_flags == 0 for f in frames[:booting]) and booting < 8
        frames = frames[booting:]
        for f in frames:
            step = round(f.fw_timestamp_us / (DT * 1e6))
            assert f.fw_timestamp_us == step * 5000, "firmware timestamp = simulated time of the sample (us)"
            sent = fake.sent[(0, step)]
            assert f.mode == Mode.STAND and f.error_flags == 2
            pos = [j.pos for j in f.joints]
            expected = motor_space.joint_to_state(sent.position)
            for i in range(joints.NUM_JOINTS):
                if i not in ANKLE_SLOTS:
                    assert pos[i] == np.float32(sent.position[i]), f"joint {i} in firmware order, unchanged"
            np.testing.assert_allclose(pos, expected, atol=1e-6, err_msg="ankle pairs in motor space (float32)")
            assert [j.temp for j in f.joints] == TEMPERATURES
            assert f.gyro == pytest.approx((0.1, -0.2, 0.3), abs=1e-7) and f.quat == (1.0, 0.0, 0.0, 0.0)
            assert f.gravity == (0.0, 0.0, -1.0)
            assert [(a.id, a.severity, a.value, a.threshold, a.first_set_us) for a in f.alerts] == [(0, 1, 7, 5, 1000)]

        # the HTTP side reads the same states
        status, version = http("GET", f"{api}/api/version")
        assert status == 200 and version == {"robot_model": "asimov_1", "robot_os_version": "0.2.7"}
        status, fw = http("GET", f"{api}/api/sim/firmware")
        assert status == 200 and (fw["mode"], fw["armed"], fw["control_source"]) == ("STAND", True, "UDP")
        assert fw["alerts"] == [{"id": 0, "name": "test", "severity": 1}] and fw["plant_fault"] is None
        status, truth = http("GET", f"{api}/api/sim/truth")
        assert status == 200 and truth["base_pos"] == [1.0, 2.0, 0.7] and truth["epoch"] == 0
        np.testing.assert_allclose(truth["base_lin_vel"], [0.0, 0.5, 0.0], atol=1e-12,
                                   err_msg="world-frame velocity, as the plant's truth has it")
        assert truth["base_yaw"] == pytest.approx(math.pi / 2)

        # a virtual restart: the stream starts again (sequence and firmware clock from the new life's start)
        fake.restart()
        restarted = wait_for(lambda: [f for f in receiver.all() if f.fw_timestamp_us <= 20_000 and
                                      f.sequence <= 4 and f.received_at > frames[-1].received_at], 20,
                             "the new life's first frames")
        assert restarted[0].sequence == 1 and restarted[0].fw_timestamp_us == 5000


def test_sdk_commands_in_robot_commands_out_and_sim_requests(bridge):
    node, probe, _receiver, cmd_port, api = bridge
    subs = [probe.subscribe(topics.ROBOT_COMMAND, RobotCommandMsg, qos.COMMANDS),
            probe.subscribe(topics.SIM_CONTROL, SimControl, qos.COMMANDS)]
    fault = probe.publisher(topics.PLANT_FAULT, PlantFault, qos.LATCHED)
    wait_for(lambda: publishers_matched(*subs), 40, "the bridge's command topics to match")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sdk:
        # the probe's reader sees the bridge's writer before that writer may have matched the reader (a volatile
        # message published in between is lost), so STAND is sent until one arrives, as an SDK's retry would
        sequence = iter(range(1, 1000))

        def stand_arrived() -> bool:
            if probe.count(topics.ROBOT_COMMAND):
                return True
            sdk.sendto(encode_command(ModeCommand("stand"), next(sequence)), (HOST, cmd_port))
            return False

        wait_for(stand_arrived, 20, "a STAND on /vasimov/command", poll=0.2)
        sdk.sendto(encode_command(Velocity(0.2, -0.1, 0.3), 1000), (HOST, cmd_port))
        sdk.sendto(b"\xff\x00 not a protobuf", (HOST, cmd_port))
        wait_for(lambda: any(m.kind == RobotCommandMsg.KIND_VELOCITY for m in probe.all(topics.ROBOT_COMMAND)), 20,
                 "the velocity command")
        got = probe.all(topics.ROBOT_COMMAND)
        stand, velocity = got[0], got[-1]
        assert (stand.source, stand.kind) == (RobotCommandMsg.SOURCE_UDP, RobotCommandMsg.KIND_STAND)
        assert all(m.kind == RobotCommandMsg.KIND_STAND for m in got[:-1])
        assert (velocity.source, velocity.kind, velocity.sequence) == (RobotCommandMsg.SOURCE_UDP,
                                                                       RobotCommandMsg.KIND_VELOCITY, 1000)
        assert (velocity.vx, velocity.vy, velocity.vyaw) == pytest.approx((0.2, -0.1, 0.3))

        def rejected() -> int:
            return sum(http("GET", f"{api}/api/sim/counters")[1]["udp_rejections"].values())

        wait_for(lambda: rejected() == 1, 20, "the garbage datagram counted")
    assert probe.last(topics.ROBOT_COMMAND).kind == RobotCommandMsg.KIND_VELOCITY, "garbage reached the graph"

    # a sim request is refused (503, retry) until the node that acts on it has matched: this probe's reader is not it
    push_body = {"body": "pelvis_link", "force": [30, 0, -5], "duration": 0.2}
    status, reply = http("POST", f"{api}/api/sim/push", push_body)
    assert status == 503 and "plant is not connected" in reply["error"], reply
    plant = RosProbe(node.domain, name=node_names.PLANT)
    try:
        plant_sub = plant.subscribe(topics.SIM_CONTROL, SimControl, qos.COMMANDS)
        wait_for(lambda: publishers_matched(plant_sub), 40, "the plant's sim-control reader to match")
        # the bridge's writer may see the reader a moment after the reader sees it: retry through 503, as clients do
        status, reply = wait_for(lambda: (r := http("POST", f"{api}/api/sim/push", push_body))[0] != 503 and r, 20,
                                 "the push accepted")
        # simulator requests become sim-control messages for the plant; bad ones are answered with the rule broken
        assert status == 202 and reply["pushing"], reply
        status, reply = http("POST", f"{api}/api/sim/push", {"body": "tail_link", "force": [30, 0, 0], "duration": 0.2})
        assert status == 404 and "pelvis_link" in json.dumps(reply), reply
        status, reply = http("POST", f"{api}/api/sim/push", {"body": "pelvis_link", "force": [1e4, 0, 0],
                                                             "duration": 0.2})
        assert status == 400, reply
        status, _ = http("POST", f"{api}/api/sim/restart", {})
        assert status == 202
        sims = wait_for(lambda: len(m := probe.all(topics.SIM_CONTROL)) >= 2 and m, 20, "two sim-control messages")
        push, restart = sims
        assert (push.action, push.body, list(push.force), push.duration) == (SimControl.ACTION_PUSH, "pelvis_link",
                                                                           [30.0, 0.0, -5.0], 0.2)
        assert restart.action == SimControl.ACTION_RESTART

        # a physics fault of this life: pushes and injections are refused (409) until a restart
        fault.publish(PlantFault(step=12, kind="non_finite", message="qpos is NaN", epoch=0))
        wait_for(lambda: http("GET", f"{api}/api/sim/counters")[1]["plant_fault"], 20, "the fault in the counters")
        status, reply = http("POST", f"{api}/api/sim/inject", {"fault": "non_finite"})
        assert status == 409 and "non_finite" in json.dumps(reply), reply
        assert probe.count(topics.SIM_CONTROL) == 2
        node.wait_log(r"plant fault in life 0: non_finite: qpos is NaN", 10)
    finally:
        plant.close()


def test_a_late_firmware_part_of_an_answered_tick_is_never_reported_as_a_stall(bridge):
    """The firmware states trail the plant's by 10 control ticks on the wire (a loaded machine starving the bridge),
    but every plant sample says the edge answered its tick (command_tick): frames wait for their firmware part and
    never report FIRMWARE_STALL -- which the SDK reads as a latched fault (`stand()` raised RobotFaultedError).
    When the plant steps on without answers (its watchdog), the same lag is a stall: DAMP with the alert."""
    _node, probe, receiver, _cmd_port, api = bridge
    fake = FakeRobot(probe)
    fake.firmware_lag = 10
    wait_for(lambda: publishers_matched(fake.samples, fake.firmware), 40, "the bridge's topics to match")
    stall_flag = 1 << (1 + ALERT_FIRMWARE_STALL)
    with Repeater(fake.publish_once):
        frames = wait_for(lambda: len(f := receiver.all()) >= 120 and f, 30, "120 state frames")
        assert not [f for f in frames if f.error_flags & stall_flag], "a late firmware part reported as a stall"
        first = next(i for i, f in enumerate(frames) if f.mode == Mode.STAND)  # before: booting, no firmware part
        assert all(f.mode == Mode.STAND for f in frames[first:])
        counters = http("GET", f"{api}/api/sim/counters")[1]
        assert counters["state_frames_held_for_firmware"] > 0 and counters["state_frames_stale_firmware"] == 0
        fake.answered = False  # the plant's watchdog: steps driven by an old answer, the firmware 10 ticks behind
        n = len(receiver.all())
        wait_for(lambda: any(f.error_flags & stall_flag for f in receiver.all()[n:]), 30, "the stall reported")
    assert http("GET", f"{api}/api/sim/counters")[1]["state_frames_stale_firmware"] > 0


def test_a_command_sent_before_the_firmware_reads_is_delivered_once_it_does(bridge):
    """`menlo stand` typed the moment the bridge answers: the firmware's reader has not matched the command writer yet.
    The one STAND (no SDK retry here) waits in the bridge and arrives, in order with what follows, once it has."""
    _node, probe, _receiver, cmd_port, api = bridge
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sdk:
        sdk.sendto(encode_command(ModeCommand("stand"), 1), (HOST, cmd_port))
        sdk.sendto(encode_command(Velocity(0.1, 0.0, 0.0), 2), (HOST, cmd_port))
        wait_for(lambda: http("GET", f"{api}/api/sim/counters")[1]["commands_held_until_firmware_matched"] == 2, 20,
                 "both commands held while nobody reads them")
        probe.subscribe(topics.ROBOT_COMMAND, RobotCommandMsg, qos.COMMANDS)  # the firmware arrives
        got = wait_for(lambda: len(m := probe.all(topics.ROBOT_COMMAND)) >= 2 and m, 20, "the held commands")
    assert [(m.kind, m.sequence) for m in got] == [(RobotCommandMsg.KIND_STAND, 1), (RobotCommandMsg.KIND_VELOCITY, 2)]
    assert http("GET", f"{api}/api/sim/counters")[1]["commands_dropped_before_firmware_matched"] == 0


def test_state_rate_must_divide_the_physics_rate():
    code, out = run_to_exit("sdk_bridge_node", {"state_rate_hz": 150.0, "command_port": 0, "http_port": 0})
    assert code == 2, out[-2000:]
    assert "sdk_bridge: cannot start: state_rate_hz=150.0 must divide the physics rate 200 Hz" in out, out[-2000:]
