"""The Foxglove bridge as a user meets it: `vasimov up` (real time, hold policy, port 0), then a Foxglove client.

The client here is written from the Foxglove WebSocket protocol spec on the `websockets` package (not the SDK
that serves it), and it decodes CDR with rosbags, using type definitions parsed from the schemas the bridge
advertised: what it checks (joint names, firmware mode, sim time) proves the bytes, the schemas and the clock on
the wire are the simulation's. It also drives the robot (teleop STAND), gets refused where it should be, and
reads and sets parameters. Foxglove's own JavaScript client (@foxglove/ws-protocol, test/js) connects offering
either name of protocol v1 and decodes /joint_states with the apps' CDR reader.
"""

from __future__ import annotations

import base64
import itertools
import json
import math
import re
import shutil
import signal
import socket
import struct
import subprocess
import time
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np
import psutil
import pytest
from foxglove_client import FoxgloveWsClient
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from harness import ROOT, VENV_BIN, Graph, cmdline, graph_env, next_domain_id, wait_for
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from vasimov import joints
from vasimov.camera import HEAD_OPTICAL_FRAME
from vasimov.model.mjcf import FREE_JOINT, load_model
from vasimov.ros import topics

pytestmark = pytest.mark.graph

PORT_LINE = re.compile(r"foxglove server on ([0-9.]+):(\d+)")
JS_DIR = ROOT / "test" / "js"


def _protobuf_class(channel: dict[str, Any]) -> Any:
    """The message class of a protobuf channel, built from the FileDescriptorSet the server advertised."""
    fds = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(channel["schema"]))
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(channel["schemaName"]))


class CdrDecoder:
    """rosbags' CDR deserializer with the types of each channel parsed from the schema the server sent."""

    def __init__(self) -> None:
        self.store = get_typestore(Stores.EMPTY)
        self.known: set[str] = set()

    def add(self, channel: dict[str, Any]) -> str:
        assert channel["encoding"] == "cdr" and channel["schemaEncoding"] == "ros2msg", channel
        name = channel["schemaName"]
        if name not in self.known:
            types = get_types_from_msg(channel["schema"], name)
            self.store.register({k: v for k, v in types.items() if k not in self.store.types})
            self.known.add(name)
        return name

    def decode(self, channel: dict[str, Any], payload: bytes) -> Any:
        return self.store.deserialize_cdr(payload, self.add(channel))


def _twist_cdr(vx: float) -> bytes:
    """geometry_msgs/Twist in CDR by hand: encapsulation header (little endian), then six float64."""
    return b"\x00\x01\x00\x00" + struct.pack("<6d", vx, 0.0, 0.0, 0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Bridge:
    graph: Graph
    url: str
    pid: int  # the bridge node's process


@pytest.fixture(scope="module")
def bridge():
    """One real-time graph for the module, the Foxglove server on a free port (found in the bridge's log)."""
    g = Graph("--policy", "hold", "foxglove_port:=0")
    try:
        m = wait_for(lambda: PORT_LINE.search(g.output()) or g.proc.poll() is not None, 40, "foxglove port line")
        assert isinstance(m, re.Match), g.output()[-3000:]
        g.wait_started(n_nodes=5)
        pid = next(p for p in g.node_pids if "foxglove_bridge_node" in cmdline(p))
        yield Bridge(g, f"ws://{m.group(1)}:{m.group(2)}", pid)
    finally:
        g.stop()
        assert g.leftovers() == [], g.output()[-2000:]


@pytest.fixture
def client(bridge):
    c = FoxgloveWsClient(bridge.url)
    wait_for(lambda: c.server_info, 10, "serverInfo")
    yield c
    c.close()


def _decoded(c: FoxgloveWsClient, dec: CdrDecoder, topic: str, sub: int) -> list[tuple[int, Any]]:
    ch = c.channel(topic)
    return [(t, dec.decode(ch, payload)) for t, payload, _ in c.received(sub)]


def test_joint_states_and_firmware_state_arrive_as_the_simulation_publishes_them(client):
    info = client.server_info
    assert {"clientPublish", "parameters", "time"} <= set(info["capabilities"])
    assert {"cdr", "json"} <= set(info["supportedEncodings"])
    dec = CdrDecoder()
    js_sub = client.subscribe(topics.JOINT_STATES)
    fw_sub = client.subscribe(topics.FIRMWARE_STATE)
    wait_for(lambda: len(client.received(js_sub)) >= 100 and len(client.received(fw_sub)) >= 10, 20,
             "joint states and firmware states over the websocket")
    ch = client.channel(topics.JOINT_STATES)
    assert ch["schemaName"] == "sensor_msgs/msg/JointState"
    assert "MSG: std_msgs/Header" in ch["schema"] and "MSG: builtin_interfaces/Time" in ch["schema"]
    with client.lock:  # one snapshot of both streams: their latest entries are then close in sim time
        times = list(client.times)
        raw = list(client.messages[js_sub])
    states = [(t, dec.decode(ch, payload)) for t, payload, _ in raw]
    js = states[-1][1]
    assert list(js.name) == list(joints.SIM_NAMES)
    assert len(js.position) == joints.NUM_JOINTS == 25
    # log time = the message's simulation time (the plant stamps /joint_states with /clock)
    stamps = [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for _, m in states]
    assert all(b > a for a, b in itertools.pairwise(stamps)), "sim time must advance"
    assert [t for t, _ in states] == stamps, "log time must be the sim time of the message"
    fw = _decoded(client, dec, topics.FIRMWARE_STATE, fw_sub)[-1][1]
    assert fw.mode_name == "DAMP" and fw.mode == 0 and fw.armed is False
    assert len(fw.motor_temperature) == 25
    # the time capability follows /clock (the two streams may lag each other by the bridge's reader queues only)
    assert len(times) >= 10 and all(b >= a for a, b in itertools.pairwise(times))
    assert abs(times[-1] - stamps[-1]) < 500_000_000


def test_robot_description_and_tf_put_every_link_on_the_robot(bridge, client):
    dec = CdrDecoder()
    desc_sub = client.subscribe(topics.ROBOT_DESCRIPTION)
    tf_sub = client.subscribe(topics.FOXGLOVE_TF)
    wait_for(lambda: client.received(desc_sub), 15, "latched /robot_description")
    urdf = dec.decode(client.channel(topics.ROBOT_DESCRIPTION), client.received(desc_sub)[0][1]).data
    links = set(re.findall(r'<link name="([^"]+)"', urdf))
    assert "pelvis_link" in links and len(links) == 26
    ch = client.channel(topics.FOXGLOVE_TF)
    assert ch["schemaName"] == "foxglove.FrameTransforms" and ch["encoding"] == "protobuf"
    frames_cls = _protobuf_class(ch)
    js_sub = client.subscribe(topics.JOINT_STATES)
    odom_sub = client.subscribe(topics.ODOM_TRUTH)

    def matched() -> tuple[Any, Any, Any] | None:
        """The latest /tf with the /joint_states and odometry of the same physics step."""
        states = {t: dec.decode(client.channel(topics.JOINT_STATES), p) for t, p, _ in client.received(js_sub)}
        odoms = {t: dec.decode(client.channel(topics.ODOM_TRUTH), p) for t, p, _ in client.received(odom_sub)}
        for t, payload, _ in reversed(client.received(tf_sub)):
            if t in states and t in odoms:
                return frames_cls.FromString(payload), states[t], odoms[t]
        return None

    frames, js, odom = wait_for(matched, 15, "a /tf frame with its joint state and base pose")
    assert {f.child_frame_id for f in frames.transforms} == links | {HEAD_OPTICAL_FRAME}  # + the camera's frame
    # compose the transforms to the world and compare with MuJoCo's own forward kinematics of that state
    model = load_model(floor=False, gantry=False)
    data = mujoco.MjData(model)
    p, o = odom.pose.pose.position, odom.pose.pose.orientation
    base = model.jnt_qposadr[model.joint(FREE_JOINT).id]
    data.qpos[base:base + 7] = [p.x, p.y, p.z, o.w, o.x, o.y, o.z]
    for name, q in zip(js.name, js.position, strict=True):
        data.qpos[model.jnt_qposadr[model.joint(name).id]] = q
    mujoco.mj_kinematics(model, data)
    world: dict[str, tuple[np.ndarray, np.ndarray]] = {"world": (np.zeros(3), np.array([1.0, 0, 0, 0]))}
    for f in frames.transforms:  # parents first (the camera's optical frame last: checked in test_camera)
        pp, pq = world[f.parent_frame_id]
        local_q = np.array([f.rotation.w, f.rotation.x, f.rotation.y, f.rotation.z])
        rot = np.zeros(9)
        mujoco.mju_quat2Mat(rot, pq)
        out_q = np.zeros(4)
        mujoco.mju_mulQuat(out_q, pq, local_q)
        world[f.child_frame_id] = (pp + rot.reshape(3, 3) @ [f.translation.x, f.translation.y, f.translation.z],
                                   out_q)
        assert (f.timestamp.seconds, f.timestamp.nanos) == (js.header.stamp.sec, js.header.stamp.nanosec)
    for b in range(1, model.nbody):
        pos, quat = world[model.body(b).name]
        np.testing.assert_allclose(pos, data.xpos[b], atol=1e-9)
        assert min(np.abs(quat - data.xquat[b]).max(), np.abs(quat + data.xquat[b]).max()) < 1e-9
    # a second client that subscribes later still gets the latched description
    late = FoxgloveWsClient(bridge.url)
    try:
        sub = late.subscribe(topics.ROBOT_DESCRIPTION)
        wait_for(lambda: late.received(sub), 10, "latched description for a late subscriber")
    finally:
        late.close()


def test_teleop_stand_moves_the_robot_and_other_publishes_are_refused(bridge, client):
    dec = CdrDecoder()
    fw_sub = client.subscribe(topics.FIRMWARE_STATE)
    js_sub = client.subscribe(topics.JOINT_STATES)

    def firmware() -> Any:
        msgs = client.received(fw_sub)
        return dec.decode(client.channel(topics.FIRMWARE_STATE), msgs[-1][1]) if msgs else None

    wait_for(lambda: firmware() is not None and firmware().mode_name == "DAMP", 15, "firmware in DAMP")
    wait_for(lambda: client.received(js_sub), 10, "joint states")  # another topic: its first message may come later
    q_before = _decoded(client, dec, topics.JOINT_STATES, js_sub)[-1][1].position.copy()
    mode = client.advertise(topics.TELEOP_MODE, "json", "std_msgs/msg/String")
    wait_for(lambda: "may publish /vasimov/teleop/mode" in bridge.graph.output(), 5, "advertisement accepted")
    client.publish(mode, json.dumps({"data": "stand"}).encode())
    wait_for(lambda: firmware().mode_name == "STAND", 10, "firmware mode STAND after teleop 'stand'")
    fw = firmware()
    assert fw.control_source == "FOXGLOVE"

    # the stand ramp moves the joints away from the limp boot pose
    def moved() -> float:
        q = _decoded(client, dec, topics.JOINT_STATES, js_sub)[-1][1].position
        return float(max(abs(a - b) for a, b in zip(q, q_before, strict=True)))

    wait_for(lambda: moved() > 0.05, 10, "joints moving toward the stand pose")

    # not on the allow-list: refused at advertisement and every message counted
    bad = client.advertise(topics.MOTOR_COMMAND, "cdr", "vasimov_msgs/msg/MotorCommand")
    client.publish(bad, b"\x00\x01\x00\x00" + bytes(64))
    wait_for(lambda: any("NOT_ALLOWED" in s for s in client.status_texts()), 5, "refusal status")
    # allowed topic, bad values: non-finite and out of envelope, in CDR
    vel = client.advertise(topics.CMD_VEL, "cdr", "geometry_msgs/msg/Twist")
    wait_for(lambda: "may publish /cmd_vel" in bridge.graph.output(), 5, "cmd_vel advertisement accepted")
    client.publish(vel, _twist_cdr(float("nan")))
    client.publish(vel, _twist_cdr(50.0))
    client.publish(mode, json.dumps({"data": "fly"}).encode())
    for reason in ("NON_FINITE", "OUT_OF_ENVELOPE", "UNKNOWN_MODE"):
        wait_for(lambda r=reason: any(r in s for s in client.status_texts()), 5, f"{reason} refusal")
    stats = _stats(client)
    counters = stats["counters"]
    assert counters["client_advertise_refused.NOT_ALLOWED"] >= 1
    assert counters["client_messages_refused.NOT_ALLOWED"] >= 1
    assert counters["client_messages_refused.NON_FINITE"] >= 1
    assert counters["client_messages_refused.OUT_OF_ENVELOPE"] >= 1
    assert firmware().mode_name == "STAND", "refused input must not change the robot's mode"

    # a valid CDR velocity from the armed stand: MOVE, following the Foxglove command
    wait_for(lambda: firmware().armed, 10, "armed STAND")
    client.publish(vel, _twist_cdr(0.2))
    wait_for(lambda: firmware().mode_name == "MOVE", 5, "MOVE after a Foxglove /cmd_vel")
    wait_for(lambda: abs(firmware().velocity_command[0] - 0.2) < 1e-9, 5, "the firmware following vx = 0.2")
    client.publish(mode, json.dumps({"data": "balance"}).encode())
    wait_for(lambda: list(firmware().velocity_command) == [0.0, 0.0, 0.0], 5, "balance: MOVE at zero velocity")
    client.publish(mode, json.dumps({"data": "damp"}).encode())
    wait_for(lambda: firmware().mode_name in ("DAMP", "FAULT_DAMP"), 10, "damping after teleop 'damp'")
    assert _stats(client)["counters"]["client_messages_accepted"] >= 4


def test_parameters_are_listed_checked_and_set_where_writable(bridge, client):
    wait_for(lambda: _params(client, "p0", ["/plant.physics_dt"]).get("/plant.physics_dt") == 0.005, 15,
             "the plant's parameters through the bridge")
    own = _params(client, "p1", [])
    assert own["/foxglove_bridge.bound_port"] > 0 and own["/foxglove_bridge.port"] == 0
    assert own["/foxglove_bridge.tf_rate_hz"] == 50.0
    client.set_parameters([{"name": "/plant.physics_dt", "value": 0.01}], "s1")
    wait_for(lambda: client.reply("s1"), 5, "setParameters answer")
    assert _params(client, "p2", ["/plant.physics_dt"])["/plant.physics_dt"] == 0.005
    assert any("read-only" in s and "/plant.physics_dt" in s for s in client.status_texts())
    client.set_parameters([{"name": "/foxglove_bridge.tf_rate_hz", "value": 5000.0}], "s2")
    wait_for(lambda: any("tf_rate_hz" in s and "5000" in s for s in client.status_texts()), 5, "range refusal")
    client.set_parameters([{"name": "/foxglove_bridge.tf_rate_hz", "value": 25.0, "type": "float64"}], "s3")
    wait_for(lambda: client.reply("s3"), 5, "setParameters answer")
    assert {p["name"]: p["value"] for p in client.reply("s3")["parameters"]}["/foxglove_bridge.tf_rate_hz"] == 25.0
    client.set_parameters([{"name": "/foxglove_bridge.tf_rate_hz", "value": 50.0, "type": "float64"}], "s4")
    wait_for(lambda: client.reply("s4"), 5, "setParameters answer")
    # rclpy's own use_sim_time is writable on every node, but not from Foxglove (issue 10: a client could switch
    # a node's clock): refused here, never forwarded, the node keeps its value
    wait_for(lambda: _params(client, "p3", ["/sdk_bridge.use_sim_time"]).get("/sdk_bridge.use_sim_time") is False,
             15, "the SDK bridge's parameters")
    client.set_parameters([{"name": "/sdk_bridge.use_sim_time", "value": True}], "s5")
    wait_for(lambda: any("use_sim_time" in s and "rclpy built-in" in s for s in client.status_texts()), 5,
             "built-in refusal")
    assert _stats(client)["counters"].get("parameter_set_forwarded", 0) == 0
    assert _params(client, "p4", ["/sdk_bridge.use_sim_time"])["/sdk_bridge.use_sim_time"] is False
    # a request naming thousands of unknown parameters: refused whole, one status, the bridge keeps serving
    before = len(client.status_texts())
    client.set_parameters([{"name": f"/nope.p{i}", "value": 1.0} for i in range(5000)], "s6")
    wait_for(lambda: _stats(client)["counters"].get("parameter_request_too_large", 0) == 1, 5, "oversized refusal")
    client.set_parameters([{"name": f"/nope.p{i}", "value": 1.0} for i in range(200)], "s7")
    wait_for(lambda: any("and 199 more refused" in s for s in client.status_texts()), 5, "one status per request")
    statuses = client.status_texts()[before:]
    assert sum("at most 1000" in s for s in statuses) == 1 and sum("/nope." in s for s in statuses) == 1, statuses
    # ...and at most one log line each (issue 10: 5,000 unknown names wrote 2,977 lines)
    wait_for(lambda: "parameter request refused" in bridge.graph.output(), 5, "the oversized request's log line")
    assert sum("/nope." in line for line in bridge.graph.output().splitlines()) <= 1


def test_a_stalled_client_does_not_stop_the_simulation_or_other_clients(bridge, client):
    """A client subscribes to every channel, then stops reading until its queue in the SDK overflows; a second
    client must keep getting /joint_states with the simulation's clock advancing. Count-based: wall-clock rates
    are printed, not asserted (the machine running the suite may be shared); the exact proof that logging never
    waits on a client is test_foxglove_backpressure."""
    stalled = FoxgloveWsClient(bridge.url, receive_buffer=4096)
    try:
        wait_for(lambda: len(stalled.channels) > 10, 10, "channels for the second client")
        with stalled.lock:
            ids = list(stalled.channels)
        for i, cid in enumerate(ids):
            stalled.ws.send(json.dumps({"op": "subscribe", "subscriptions": [{"id": 1000 + i, "channelId": cid}]}))
        sub = client.subscribe(topics.JOINT_STATES)
        wait_for(lambda: len(client.received(sub)) >= 20, 10, "joint states flowing")
        stalled._stop = True  # stop reading: its socket fills and the server's queue for it overflows
        stalled.reader.join(timeout=5)
        proc = psutil.Process(bridge.pid)
        proc.cpu_percent(None)
        wait_for(lambda: _stats(client)["counters"].get("outbox_full_reports", 0) >= 1, 60,
                 "the SDK's report that the stalled client's queue overflowed")
        n0 = len(client.received(sub))
        window = wait_for(lambda: client.received(sub)[n0:] if len(client.received(sub)) >= n0 + 200 else None,
                          60, "200 more joint states to the live client while the other one is stalled")
        cpu = proc.cpu_percent(None)
        dec = CdrDecoder()
        stamps = [(m.header.stamp.sec * 10**9 + m.header.stamp.nanosec)
                  for m in (dec.decode(client.channel(topics.JOINT_STATES), p) for _, p, _ in window)]
        assert all(b > a for a, b in itertools.pairwise(stamps)), "the simulation must keep running, in order"
        assert [t for t, _, _ in window] == stamps
        sim_s, wall_s = (stamps[-1] - stamps[0]) * 1e-9, window[-1][2] - window[0][2]
        print(f"\n/joint_states to a live client while another is stalled: {(len(window) - 1) / wall_s:.1f} msg/s, "
              f"{(len(window) - 1) / max(1, round(sim_s / 0.005)):.1%} of the plant's, sim/wall {sim_s / wall_s:.2f}, "
              f"bridge CPU {cpu:.0f}%")
    finally:
        stalled.close()


def _js_client(url: str, subprotocol: str) -> dict[str, Any]:
    """Run test/js/joint_states_client.mjs (Foxglove's FoxgloveClient and MessageReader) against the bridge."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: Foxglove's JavaScript client cannot run (CI has node)")
    if not (JS_DIR / "node_modules" / "@foxglove" / "ws-protocol").is_dir():
        pytest.fail(f"{JS_DIR / 'node_modules'} is missing: run `make setup` (it runs npm ci in test/js)")
    proc = subprocess.run([node, str(JS_DIR / "joint_states_client.mjs"), url, subprotocol, topics.JOINT_STATES,
                           "20", "40"], capture_output=True, text=True, timeout=90, cwd=JS_DIR)
    lines = proc.stdout.strip().splitlines()
    assert lines, f"no output (rc {proc.returncode}): {proc.stderr[-2000:]}"
    out = json.loads(lines[-1])
    assert proc.returncode == 0, (out.get("error"), proc.stderr[-2000:])
    return out


@pytest.mark.parametrize("subprotocol", ["foxglove.websocket.v1", "foxglove.sdk.v1"])
def test_foxglove_javascript_client_offering_either_name_decodes_joint_states(bridge, subprotocol):
    """Foxglove's own client (@foxglove/ws-protocol) offering ONE name of protocol v1 (the old one: Lichtblick,
    roslibjs-foxglove, older Foxglove Studio; or the new one), decoding with the apps' CDR reader and the schema
    the bridge advertised."""
    out = _js_client(bridge.url, subprotocol)
    assert out["protocol"] == subprotocol  # the server named back the one name offered
    assert {"clientPublish", "parameters", "time"} <= set(out["serverInfo"]["capabilities"])
    assert out["channel"] == {"topic": topics.JOINT_STATES, "encoding": "cdr",
                              "schemaName": "sensor_msgs/msg/JointState", "schemaEncoding": "ros2msg"}
    msgs = out["messages"]
    assert len(msgs) == 20
    for m in msgs:
        assert m["name"] == list(joints.SIM_NAMES) and len(m["name"]) == 25
        assert m["finite"] and len(m["position"]) == 25
        assert all(isinstance(q, float | int) and math.isfinite(q) for q in m["position"])
    stamps = [int(m["stamp"]) for m in msgs]
    assert all(b > a for a, b in itertools.pairwise(stamps)), "sim time must advance"
    assert [int(m["logTime"]) for m in msgs] == stamps, "log time must be the sim time of the message"


def _stats(c: FoxgloveWsClient) -> dict[str, Any]:
    """The bridge's counters as published after this call (one subscription per client: a second subscribe to
    the same channel is refused by the server)."""
    sub = c.subscribe_once(topics.FOXGLOVE_STATS)
    since = time.monotonic()
    fresh = wait_for(lambda: [m for m in c.received(sub) if m[2] >= since], 5, "bridge stats")
    return json.loads(fresh[-1][1])


def _params(c: FoxgloveWsClient, request_id: str, names: list[str]) -> dict[str, Any]:
    c.get_parameters(names, request_id)
    reply = wait_for(lambda: c.reply(request_id), 5, f"parameterValues {request_id}")
    with c.lock:
        c.parameter_replies.remove(reply)
    return {p["name"]: p.get("value") for p in reply["parameters"]}


def _bridge_process(*params: str) -> subprocess.Popen[str]:
    env = graph_env(next_domain_id())
    cmd = [str(VENV_BIN / "foxglove_bridge_node"), "--ros-args", *[a for p in params for a in ("-p", p)]]
    return subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def test_a_taken_port_is_a_clear_start_up_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _bridge_process(f"port:={port}")
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2, out
    assert f"cannot listen on 127.0.0.1:{port}" in out and "Address already in use" in out


def test_disabled_bridge_idles_without_a_socket_and_stops_on_sigint():
    proc = _bridge_process("enabled:=false")
    try:
        assert proc.stdout is not None
        line = wait_for(lambda: proc.stdout.readline(), 20, "the bridge's first log line")
        assert "foxglove bridge disabled" in line, line
        listening = [c for c in psutil.Process(proc.pid).net_connections(kind="tcp") if c.status == "LISTEN"]
        assert listening == []
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0, out
