"""The launch file is valid ROS 2 YAML launch, and `vasimov up` reads it the way `ros2 launch` would."""

from pathlib import Path

import pytest
import yaml

from vasimov.ros.params import COMMON
from vasimov_tools import launch_file

ROOT = Path(__file__).resolve().parent.parent
LAUNCH = ROOT / "launch" / "bringup.launch.yaml"


def test_launch_file_lists_the_four_nodes_with_config_files():
    desc = launch_file.load(LAUNCH)
    names = [n.name for n in desc.nodes]
    assert names[:4] == ["plant", "edge", "policy", "sdk_bridge"]
    assert set(names) == {"plant", "edge", "policy", "sdk_bridge", "foxglove_bridge", "binary_stream",
                          "camera"}
    for node in desc.nodes:
        assert node.package == "vasimov"
        assert node.param_files, node.name
        for f in node.param_files:
            assert f.is_file(), f
            doc = yaml.safe_load(f.read_text())
            key = f"/**/{node.name}"  # the node in any namespace (namespace:=robot1)
            assert list(doc) == [key], f"{f} must configure exactly node {key}"
            assert "ros__parameters" in doc[key]


def test_launch_arguments_are_substituted_and_typed():
    desc = launch_file.load(LAUNCH, {"lockstep": "true", "duration": "2.5", "policy": "hold"})
    plant = desc.nodes[0]
    assert plant.params["lockstep"] is True
    assert plant.params["duration"] == 2.5
    policy = next(n for n in desc.nodes if n.name == "policy")
    assert policy.params["backend"] == "hold"
    edge = next(n for n in desc.nodes if n.name == "edge")
    assert edge.params["command_script"] == ""
    # the nodes take simulated time from the plant's messages; their own ROS clocks stay off /clock (no wake-up
    # per /clock message) unless use_sim_time:=true
    assert edge.params["use_sim_time"] is False
    args = plant.ros_args()
    assert args[:3] == ["--ros-args", "-r", "__node:=plant"]
    assert "lockstep:=true" in args and "duration:=2.5" in args
    assert "command_script:=''" in edge.ros_args()


def test_unknown_argument_and_unknown_action_are_refused(tmp_path):
    with pytest.raises(launch_file.LaunchFileError, match="unknown launch arguments"):
        launch_file.load(LAUNCH, {"no_such_arg": "1"})
    bad = tmp_path / "bad.launch.yaml"
    bad.write_text("launch:\n- include: {file: x}\n")
    with pytest.raises(launch_file.LaunchFileError, match="unsupported launch action"):
        launch_file.load(bad)
    bad.write_text("launch:\n- node: {pkg: vasimov, exec: plant_node, param: [{value: 1}]}\n")
    with pytest.raises(launch_file.LaunchFileError, match="needs 'from' or 'name'"):
        launch_file.load(bad)


def _node_params(module) -> dict:
    return {p.name: p for p in module.PARAMS}


@pytest.mark.parametrize("node_name,module_name", [
    ("plant", "vasimov_plant.node"), ("edge", "vasimov_edge.node"), ("policy", "vasimov_edge.policy_node"),
    ("sdk_bridge", "vasimov_bridge.sdk_node"), ("foxglove_bridge", "vasimov_bridge.foxglove_node"),
    ("binary_stream", "vasimov_bridge.binary_node"), ("camera", "vasimov_bridge.camera_node"),
])
def test_every_configured_parameter_is_declared_with_a_valid_value(node_name, module_name):
    import importlib

    module = importlib.import_module(module_name)
    declared = _node_params(module)
    cfg = yaml.safe_load((ROOT / "config" / f"{node_name}.yaml").read_text())[f"/**/{node_name}"]["ros__parameters"]
    for key, value in cfg.items():
        assert key in declared, f"{node_name}: {key} in config but not declared"
        spec = declared[key]
        assert type(value) is type(spec.default), f"{node_name}.{key}: {value!r} vs default {spec.default!r}"
        assert spec.validate(value) is None
    for spec in declared.values():
        assert spec.description, f"{node_name}.{spec.name} has no description"
    for spec in COMMON:
        assert spec.name in declared


def test_if_and_unless_select_nodes(tmp_path):
    f = tmp_path / "cond.launch.yaml"
    f.write_text(
        "launch:\n"
        "- arg: {name: viewer, default: 'false'}\n"
        "- node: {pkg: vasimov, exec: a, name: a, if: $(var viewer)}\n"
        "- node: {pkg: vasimov, exec: b, name: b, unless: $(var viewer)}\n"
    )
    assert [n.name for n in launch_file.load(f).nodes] == ["b"]
    assert [n.name for n in launch_file.load(f, {"viewer": "true"}).nodes] == ["a"]
    with pytest.raises(launch_file.LaunchFileError, match="not a boolean"):
        launch_file.load(f, {"viewer": "maybe"})


def test_set_remap_applies_to_every_later_node_before_its_own_rules(tmp_path):
    f = tmp_path / "remap.launch.yaml"
    f.write_text(
        "launch:\n"
        "- arg: {name: ns, default: ''}\n"
        "- node: {pkg: vasimov, exec: a, name: a}\n"
        "- set_remap: {from: /clock, to: clock}\n"
        "- node: {pkg: vasimov, exec: b, name: b, namespace: $(var ns), remap: [{from: /x, to: y}]}\n"
    )
    a, b = launch_file.load(f, {"ns": "robot1"}).nodes
    assert a.remaps == ()
    assert b.remaps == (("/clock", "clock"), ("/x", "y"))
    args = b.ros_args()
    assert args[args.index("__ns:=/robot1") - 1] == "-r"  # rcl wants an absolute namespace, as launch_ros gives
    assert args[-4:] == ["-r", "/clock:=clock", "-r", "/x:=y"]
    assert "__ns:=/" not in " ".join(launch_file.load(f).nodes[1].ros_args())  # empty namespace: no rule at all
    f.write_text("launch:\n- set_remap: {from: /clock}\n")
    with pytest.raises(launch_file.LaunchFileError, match="set_remap needs exactly"):
        launch_file.load(f)


def test_every_graph_topic_lands_in_the_namespace():
    """The code's topic names are absolute; the launch file's set_remap rules make each relative, so namespace:=robot1
    moves every topic (a topic added to vasimov.ros.topics without a rule would collide between two twins)."""
    from vasimov.ros import topics

    names = {v for k, v in vars(topics).items() if k.isupper() and isinstance(v, str)}
    desc = launch_file.load(LAUNCH, {"namespace": "robot1"})
    for node in desc.nodes:
        assert node.namespace == "robot1"
        rules = dict(node.remaps)
        for name in names:
            assert rules.get(name) == name.lstrip("/"), f"{node.name}: no relative remap for {name}"


def test_every_vasimov_up_option_and_port_is_a_described_launch_argument():
    desc = launch_file.load(LAUNCH)
    assert all(desc.arg_descriptions[a] for a in desc.args), "every launch argument needs a description"
    for arg in ("lockstep", "duration", "seed", "policy", "command_script", "viewer", "namespace", "use_sim_time",
                "sdk_command_port", "sdk_state_port", "sdk_http_port", "foxglove_port", "binary_port"):
        assert arg in desc.args, arg
    ports = launch_file.load(LAUNCH, {"namespace": "robot2", "sdk_command_port": "9850", "sdk_state_port": "9851",
                                      "sdk_http_port": "4000", "use_sim_time": "true"})
    sdk = next(n for n in ports.nodes if n.name == "sdk_bridge")
    assert (sdk.params["command_port"], sdk.params["state_port"], sdk.params["http_port"]) == (9850, 9851, 4000)
    assert sdk.params["use_sim_time"] is True
    assert "__ns:=/robot2" in sdk.ros_args()
