"""The Foxglove bridge node alone, with the test as the plant and firmware and as a Foxglove client
(test/foxglove_client.py, written from the protocol spec).

States in, channels out: the CDR bytes of each topic forwarded untouched at the message's simulated time, /clock on
the time capability, /tf built from /joint_states and ground truth. Teleop in: /cmd_vel and /vasimov/teleop/mode
from the client reach the graph (source FOXGLOVE), anything else is refused with a status. Parameters: the bridge's
own and a peer's (the test's node), read and set from the client.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from foxglove_client import FoxgloveWsClient
from geometry_msgs.msg import Twist
from harness import wait_for
from node_harness import YAW_90, FakeRobot, Repeater, publishers_matched, run_to_exit
from rclpy.serialization import deserialize_message, serialize_message
from rosprobe import RosProbe
from test_foxglove_graph import _protobuf_class
from vasimov_msgs.msg import FirmwareState, PlantState
from vasimov_msgs.msg import RobotCommand as RobotCommandMsg

from vasimov.camera import HEAD_OPTICAL_FRAME
from vasimov.model.urdf import link_names
from vasimov.ros import node_names, qos, topics

pytestmark = pytest.mark.node

PORT_LINE = r"foxglove server on ([0-9.]+):(\d+)"


def _ns(stamp) -> int:
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def test_states_to_channels_teleop_and_parameters(node_factory):
    node = node_factory("foxglove_bridge_node", {"lockstep": False, "port": 0, "cpu_nice": 0,
                                                  "discovery_period": 0.2}, config="foxglove_bridge")
    probe = RosProbe(node.domain, name=node_names.EDGE)  # the test reads commands as the firmware does
    probe.node.declare_parameter("gain", 1.5)
    client = None
    try:
        host, port = node.wait_log(PORT_LINE).groups()
        fake = FakeRobot(probe)
        cmd_sub = probe.subscribe(topics.ROBOT_COMMAND, RobotCommandMsg, qos.COMMANDS)
        twist_sub = probe.subscribe(topics.CMD_VEL, Twist, qos.COMMANDS)
        with Repeater(fake.publish_once):
            client = FoxgloveWsClient(f"ws://{host}:{port}")
            state_sub = client.subscribe(topics.PLANT_STATE)
            fw_sub = client.subscribe(topics.FIRMWARE_STATE)
            tf_sub = client.subscribe(topics.FOXGLOVE_TF)
            wait_for(lambda: len(client.received(state_sub)) >= 20 and client.received(fw_sub), 30,
                     "plant and firmware states through the bridge")

            # the bytes are the topic's CDR, untouched, logged at the message's own simulated time
            for log_time, payload, _ in client.received(state_sub):
                m = deserialize_message(payload, PlantState)
                assert log_time == _ns(m.stamp)
                np.testing.assert_array_equal(m.position, fake.sent[(m.epoch, m.step)].position)
            fw = deserialize_message(client.received(fw_sub)[-1][1], FirmwareState)
            assert (fw.mode_name, fw.armed, list(fw.motor_temperature)[:2]) == ("STAND", True, [30.0, 31.0])
            # sim time on the time capability follows /clock
            wait_for(lambda: client.times, 10, "a time broadcast")
            with fake.lock:
                clocks = {_ns(m.stamp) for m in fake.sent.values()}
            assert set(client.times) <= clocks, "every broadcast time is a published /clock"

            # /tf: every link, the pelvis placed by ground truth
            ch = wait_for(lambda: client.channel(topics.FOXGLOVE_TF), 10, "the /tf channel")
            frames_cls = _protobuf_class(ch)
            payload = wait_for(lambda: client.received(tf_sub), 20, "a /tf message")[-1][1]
            tf = frames_cls.FromString(payload)
            assert {t.child_frame_id for t in tf.transforms} == set(link_names()) | {HEAD_OPTICAL_FRAME}  # + the camera
            pelvis = next(t for t in tf.transforms if t.child_frame_id == "pelvis_link")
            assert pelvis.parent_frame_id == "world"
            assert (pelvis.translation.x, pelvis.translation.y, pelvis.translation.z) == (1.0, 2.0, 0.7)
            r = pelvis.rotation
            np.testing.assert_allclose((r.w, r.x, r.y, r.z), YAW_90, atol=1e-12)

            # teleop: a velocity on /cmd_vel and a mode on /vasimov/teleop/mode reach the graph
            wait_for(lambda: publishers_matched(cmd_sub, twist_sub), 20, "the bridge's teleop publishers")
            vel = client.advertise(topics.CMD_VEL, "cdr", "geometry_msgs/msg/Twist")
            mode = client.advertise(topics.TELEOP_MODE, "json", "std_msgs/msg/String")
            node.wait_log(r"may publish /vasimov/teleop/mode", 10)
            twist = Twist()
            twist.linear.x, twist.angular.z = 0.3, -0.4

            def arrived() -> bool:  # sent until one arrives: the bridge's writers may match the probe late
                if probe.count(topics.CMD_VEL) and probe.count(topics.ROBOT_COMMAND):
                    return True
                client.publish(vel, serialize_message(twist))
                client.publish(mode, json.dumps({"data": "stand"}).encode())
                return False

            wait_for(arrived, 20, "teleop on /cmd_vel and /vasimov/command", poll=0.3)
            got = probe.last(topics.CMD_VEL)
            assert (got.linear.x, got.linear.y, got.angular.z) == (0.3, 0.0, -0.4)
            cmd = probe.last(topics.ROBOT_COMMAND)
            assert (cmd.source, cmd.kind) == (RobotCommandMsg.SOURCE_FOXGLOVE, RobotCommandMsg.KIND_STAND)
            bad = client.advertise(topics.MOTOR_COMMAND, "cdr", "vasimov_msgs/msg/MotorCommand")
            client.publish(bad, b"\x00\x01\x00\x00" + bytes(64))
            wait_for(lambda: any("NOT_ALLOWED" in s for s in client.status_texts()), 10, "the refusal status")

            # parameters: the bridge's own, and a peer's read and set through the bridge
            client.get_parameters(["/foxglove_bridge.tf_rate_hz", "/edge.gain"], "read")

            def values(request_id: str) -> dict[str, object] | None:
                reply = client.reply(request_id)
                return None if reply is None else {p["name"]: p.get("value") for p in reply["parameters"]}

            def read_both() -> dict[str, object] | None:
                v = values("read")
                if v is not None and "/edge.gain" not in v:  # the peer's parameters are read on discovery
                    client.parameter_replies.clear()
                    client.get_parameters(["/foxglove_bridge.tf_rate_hz", "/edge.gain"], "read")
                    return None
                return v

            got_values = wait_for(read_both, 20, "both parameters", poll=0.3)
            assert got_values == {"/foxglove_bridge.tf_rate_hz": 50.0, "/edge.gain": 1.5}, got_values
            client.set_parameters([{"name": "/edge.gain", "value": 2.5, "type": "float64"}], "set")
            wait_for(lambda: probe.node.get_parameter("gain").value == 2.5, 20, "the peer's parameter set")
    finally:
        if client is not None:
            client.close()
        probe.close()
    assert re.search(r"client message refused|NOT_ALLOWED", node.output())


def test_port_taken_is_refused_at_start(node_factory):
    first = node_factory("foxglove_bridge_node", {"port": 0, "cpu_nice": 0}, config="foxglove_bridge")
    _host, port = first.wait_log(PORT_LINE).groups()
    code, out = run_to_exit("foxglove_bridge_node", {"port": int(port), "cpu_nice": 0})
    assert code == 2, out[-2000:]
    assert f"foxglove_bridge: cannot start: foxglove server cannot listen on 127.0.0.1:{port}" in out, out[-2000:]
