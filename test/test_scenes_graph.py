"""Scenes through the whole graph, as a user runs them: `vasimov up --scene S --lockstep --duration 5` with a stand
script keeps the robot standing (exit 0: a MuJoCo warning would be a physics fault, exit 3), and in real time a
Foxglove client (test/foxglove_client.py, written from the protocol spec) gets the scene: the plant's latched
/vasimov/scene and the bridge's SceneUpdate channel, whose entities are the ground MuJoCo compiled."""

from __future__ import annotations

import base64
import json
import re

import pytest
from foxglove_client import FoxgloveWsClient
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from harness import Graph, wait_for
from nav_msgs.msg import Odometry
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosprobe import RosProbe
from vasimov_msgs.msg import FirmwareState, PlantState

from vasimov.model.mjcf import load_model
from vasimov.model.terrain import scene_geoms
from vasimov.ros import topics
from vasimov.scenes import parse_scene

pytestmark = pytest.mark.graph

PORT_LINE = re.compile(r"foxglove server on ([0-9.]+):(\d+)")


def test_a_lockstep_run_with_a_stand_script_keeps_standing_on_stairs_on_ice(tmp_path):
    """The probe is a declared lockstep participant (as in test_graph), so it reads every tick, the last firmware
    state and the last ground truth of the run."""
    script = tmp_path / "stand.yaml"
    script.write_text("[{t: 0.1, cmd: stand}, {t: 2.6, cmd: velocity, vx: 0.0}]\n")
    g = Graph("--lockstep", "--duration", "5", "--scene", "stairs_15cm+ice", "--script", str(script),
              "foxglove:=false", "binary_stream:=false", "lockstep_participants:=edge,policy,test_probe")
    probe = RosProbe(g.domain)
    try:
        deep = QoSProfile(depth=100_000, reliability=ReliabilityPolicy.RELIABLE)
        subs = [probe.subscribe(topics.FIRMWARE_STATE, FirmwareState, deep),
                probe.subscribe(topics.ODOM_TRUTH, Odometry, deep)]
        wait_for(lambda: all(s.get_publisher_count() > 0 for s in subs), 60, "the probe's readers to match")
        probe.subscribe(topics.PLANT_TICK, PlantState, deep)
        probe.announce_lockstep_ready()
        rc = g.proc.wait(timeout=240)
        out = g.output()
        assert rc == 0, out[-3000:]
        assert "scene stairs_15cm+ice" in out
        # the last tick's firmware state (ticks 0..250); the first few may have gone out before the edge's writer
        # matched the probe's reader (DDS matches each side on its own; the probe sees only its reader's side)
        wait_for(lambda: probe.count(topics.FIRMWARE_STATE) and probe.last(topics.FIRMWARE_STATE).tick >= 250, 60,
                 "the last tick's firmware state")
        fw = probe.all(topics.FIRMWARE_STATE)
        assert fw[-1].mode_name == "MOVE" and fw[-1].error_flags == 0  # balancing, no fall latched
        odom = probe.all(topics.ODOM_TRUTH)[-1]
        assert odom.pose.pose.position.z > 0.55  # standing on the floor pad in front of the stairs
    finally:
        probe.close()
        g.stop()


def _protobuf_class(channel: dict) -> type:
    fds = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(channel["schema"]))
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(channel["schemaName"]))


def test_foxglove_draws_the_scene_the_plant_simulates():
    name = "slope_10_down+wet"
    g = Graph("--policy", "hold", "--scene", name, "foxglove_port:=0", "binary_stream:=false")
    client = None
    try:
        m = wait_for(lambda: PORT_LINE.search(g.output()) or g.proc.poll() is not None, 60, "foxglove port line")
        assert isinstance(m, re.Match), g.output()[-3000:]
        client = FoxgloveWsClient(f"ws://{m.group(1)}:{m.group(2)}")
        wait_for(lambda: client.server_info, 10, "serverInfo")
        entities_sub = client.subscribe(topics.FOXGLOVE_SCENE, timeout=30)
        scene_sub = client.subscribe(topics.SCENE, timeout=30)
        wait_for(lambda: client.received(entities_sub) and client.received(scene_sub), 30, "the scene")
        # the plant's latched description (CDR std_msgs/String, decoded with the advertised schema)
        ch = client.channel(topics.SCENE)
        store = get_typestore(Stores.EMPTY)
        store.register(get_types_from_msg(ch["schema"], ch["schemaName"]))
        text = store.deserialize_cdr(client.received(scene_sub)[0][1], ch["schemaName"]).data
        described = json.loads(text)
        assert described["name"] == name and described["friction"] == {"name": "wet", "mu": 0.4}
        expected = scene_geoms(load_model(scene=parse_scene(name)))
        assert [gm["name"] for gm in described["geoms"]] == [gm["name"] for gm in expected]
        # the bridge's SceneUpdate: one entity per ground geom, in the world frame /tf hangs the robot from
        ch = client.channel(topics.FOXGLOVE_SCENE)
        assert ch["schemaName"] == "foxglove.SceneUpdate" and ch["encoding"] == "protobuf"
        update = _protobuf_class(ch).FromString(client.received(entities_sub)[-1][1])
        assert [e.id for e in update.entities] == [f"scene/{gm['name']}" for gm in expected]
        assert {e.frame_id for e in update.entities} == {"world"}
        ramp = next(e for e in update.entities if e.id == "scene/scene_ramp")
        geom = next(gm for gm in expected if gm["name"] == "scene_ramp")
        assert [ramp.cubes[0].size.x, ramp.cubes[0].size.y, ramp.cubes[0].size.z] == pytest.approx(
            [2 * s for s in geom["size"]])
        # a client that subscribes later still gets the scene (Foxglove channels keep no last message)
        late = FoxgloveWsClient(f"ws://{m.group(1)}:{m.group(2)}")
        try:
            sub = late.subscribe(topics.FOXGLOVE_SCENE, timeout=30)
            wait_for(lambda: late.received(sub), 15, "the scene for a late subscriber")
        finally:
            late.close()
    finally:
        if client is not None:
            client.close()
        g.stop()
        assert g.leftovers() == [], g.output()[-2000:]
