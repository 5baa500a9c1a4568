"""The shipped Foxglove layout, the bridge's config and launch entry, and its QoS choice."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from vasimov.ros import qos, topics
from vasimov.ros.params import COMMON
from vasimov_bridge import foxglove_channels, foxglove_layout, foxglove_node
from vasimov_tools import launch_file

ROOT = Path(__file__).resolve().parent.parent
LAYOUT = ROOT / "config" / "foxglove_layout.json"
GRAPH_TOPICS = {v for k, v in vars(topics).items() if k.isupper() and isinstance(v, str)}
MESSAGE_PATH = re.compile(r"^(/[A-Za-z0-9_/]+?)(?=[.\[]|$)")


def _strings(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return [node] if isinstance(node, str) else []


def _panels(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        own = [node] if node.get("type") == "panel" else []
        return own + [p for v in node.values() for p in _panels(v)]
    if isinstance(node, list):
        return [p for v in node for p in _panels(v)]
    return []


@pytest.fixture(scope="module")
def layout() -> dict[str, Any]:
    return json.loads(LAYOUT.read_text(encoding="utf-8"))


def test_the_file_is_what_the_generator_builds():
    assert LAYOUT.read_text(encoding="utf-8") == foxglove_layout.layout_json(), \
        "config/foxglove_layout.json is stale: run python -m vasimov_bridge.foxglove_layout config/foxglove_layout.json"


def test_every_topic_the_layout_names_is_published_by_the_graph_or_the_bridge(layout):
    referenced = {m.group(1) for s in _strings(layout) if (m := MESSAGE_PATH.match(s))}
    assert referenced, "the layout names no topic"
    unknown = referenced - GRAPH_TOPICS
    assert not unknown, f"layout topics not in vasimov.ros.topics: {sorted(unknown)}"
    # the ones only the bridge serves are its own Foxglove channels
    assert topics.FOXGLOVE_TF in GRAPH_TOPICS and topics.FOXGLOVE_STATS in referenced


def test_the_layout_has_the_panels_the_issue_asks_for(layout):
    panels = _panels(layout["content"])
    by_type: dict[str, list[dict[str, Any]]] = {}
    for p in panels:
        by_type.setdefault(p["panelType"], []).append(p)
    three_d = by_type["ThreeDee"][0]["config"]
    urdf = next(v for v in three_d["layers"].values() if v["layerId"] == "foxglove.Urdf")
    assert urdf["sourceType"] == "topic" and urdf["topic"] == topics.ROBOT_DESCRIPTION
    assert urdf["controlMode"] == "transforms"  # driven by /tf
    assert any(p["config"]["path"].startswith(topics.FIRMWARE_STATE + ".mode_name") for p in by_type["Indicator"])
    plot_paths = [s["value"] for p in by_type["Plot"] for s in p["config"]["paths"]]

    def indices(topic: str) -> set[int]:
        pattern = re.escape(topic) + r"\.position\[(\d+)\]"
        return {int(m.group(1)) for p in plot_paths if (m := re.fullmatch(pattern, p))}

    assert len(indices(topics.JOINT_STATES)) >= 3, "a few joints: measured position"
    assert indices(topics.MOTOR_COMMAND) == indices(topics.JOINT_STATES), "each against its target"
    assert any(p.startswith(topics.IMU + ".") for p in plot_paths)
    # the whole 78-entry observation, each entry in exactly one group (Foxglove slices are inclusive)
    covered: list[int] = []
    for p in plot_paths:
        m = re.fullmatch(re.escape(topics.POLICY_STEP) + r"\.observation\[(\d+):(\d+)\]", p)
        if m:
            covered += range(int(m.group(1)), int(m.group(2)) + 1)
    assert sorted(covered) == list(range(78))
    assert f"{topics.POLICY_STEP}.action" in plot_paths
    teleop = by_type["Teleop"][0]["config"]
    assert teleop["topic"] == topics.CMD_VEL
    assert {p["config"]["topicName"] for p in by_type["Publish"]} == {topics.TELEOP_MODE}
    assert {json.loads(p["config"]["value"])["data"] for p in by_type["Publish"]} == {"stand", "balance", "damp"}
    # real-time conformance is visible (issue 24): the plant's report and the SDK bridge's state rate
    raw_paths = {p["config"]["topicPath"] for p in by_type["RawMessages"]}
    assert {f"{topics.REALTIME}.data", f"{topics.SDK_RATE}.data"} <= raw_paths


def test_config_file_values_are_declared_and_valid():
    declared = {p.name: p for p in foxglove_node.PARAMS}
    cfg = yaml.safe_load((ROOT / "config" / "foxglove_bridge.yaml").read_text())
    assert list(cfg) == ["/**/foxglove_bridge"]
    for key, value in cfg["/**/foxglove_bridge"]["ros__parameters"].items():
        assert key in declared, f"{key} in config but not declared"
        assert type(value) is type(declared[key].default), key
        assert declared[key].validate(value) is None
    for spec in declared.values():
        assert spec.description, spec.name
    for spec in COMMON:
        assert spec.name in declared


def test_launch_arguments_reach_the_bridge():
    path = ROOT / "launch" / "bringup.launch.yaml"
    node = next(n for n in launch_file.load(path).nodes if n.name == "foxglove_bridge")
    assert node.executable == "foxglove_bridge_node"
    assert node.params["enabled"] is True and node.params["port"] == 8765 and node.params["host"] == "127.0.0.1"
    node = next(n for n in launch_file.load(path, {"foxglove": "false", "foxglove_port": "0"}).nodes
                if n.name == "foxglove_bridge")
    assert node.params["enabled"] is False and node.params["port"] == 0


R, B = ReliabilityPolicy.RELIABLE, ReliabilityPolicy.BEST_EFFORT
TL, V = DurabilityPolicy.TRANSIENT_LOCAL, DurabilityPolicy.VOLATILE


@pytest.mark.parametrize("publishers,reliability,durability,depth", [
    ([qos.LATCHED], R, TL, 1),
    ([qos.TELEMETRY], B, V, 50),  # a viewer never costs a publisher acknowledgements
    ([qos.LOOP, qos.TELEMETRY], B, V, 50),
    ([qos.LATCHED, qos.TELEMETRY], B, V, 50),  # a volatile publisher would never match a latched reader
    ([QoSProfile(depth=5, reliability=B), qos.TELEMETRY], B, V, 50),
    ([], B, V, 50),  # nobody publishes yet: the reader that matches anyone who comes
])
def test_the_bridge_reads_a_topic_with_qos_every_publisher_matches(publishers, reliability, durability, depth):
    got = foxglove_channels.subscription_qos(publishers)
    assert (got.reliability, got.durability, got.depth) == (reliability, durability, depth)
