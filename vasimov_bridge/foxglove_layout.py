"""The Foxglove layout shipped in ``config/foxglove_layout.json``, built from the topic table and joint table.

Building it with the SDK's own layout types (``foxglove.layouts``) instead of hand-editing JSON keeps the topic
names, joint indices and observation groups in step with the code: a test rebuilds it and compares it with the
file, and checks that every topic it names is one the graph or the bridge publishes.

    python -m vasimov_bridge.foxglove_layout config/foxglove_layout.json
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import foxglove.layouts as fl

from vasimov import joints
from vasimov.policy_contract import entry_labels
from vasimov.ros import topics

PLOT_JOINTS = ("left_hip_pitch_joint", "left_knee_joint", "left_ankle_pitch_joint", "right_knee_joint",
               "left_elbow_joint")
MODE_COLORS = {"DAMP": "#9e9e9e", "STAND": "#f5b400", "MOVE": "#2e9d46", "FAULT_DAMP": "#d32f2f"}
TELEOP_SPEED = {"linear-x": 0.2, "angular-z": 0.4}


def _joint_plot(name: str) -> fl.PlotPanel:
    i = joints.joint_index(name)
    return fl.PlotPanel(title=f"{name}: position vs target (rad)", config=fl.PlotConfig(paths=[
        fl.PlotSeries(value=f"{topics.JOINT_STATES}.position[{i}]", label="measured"),
        fl.PlotSeries(value=f"{topics.MOTOR_COMMAND}.position[{i}]", label="target", line_style="dashed"),
    ], show_legend=True))


def _observation_groups() -> list[tuple[str, int, int]]:
    """(term, first index, last index inclusive) for each run of one term in the 78-entry observation."""
    out, start = [], 0
    for term, entries in itertools.groupby(entry_labels(), key=lambda s: s.split("/", 1)[0]):
        n = len(list(entries))
        out.append((term, start, start + n - 1))
        start += n
    return out


def _policy_panels() -> fl.SplitContainer:
    # Foxglove slices are inclusive: [a:b] is entries a..b
    obs = fl.PlotPanel(title="policy observation[0:78] by term (latest step, by index)", config=fl.PlotConfig(
        x_axis_val="index", show_legend=True,
        paths=[fl.PlotSeries(value=f"{topics.POLICY_STEP}.observation[{a}:{b}]", label=f"{term} [{a}..{b}]")
               for term, a, b in _observation_groups()]))
    act = fl.PlotPanel(title="policy action[0:23] and target (latest step, by index)", config=fl.PlotConfig(
        x_axis_val="index", show_legend=True, paths=[
            fl.PlotSeries(value=f"{topics.POLICY_STEP}.action", label="action (raw network output)"),
            fl.PlotSeries(value=f"{topics.POLICY_STEP}.target", label="target (rad)", line_style="dashed"),
        ]))
    raw = fl.RawMessagesPanel(title="policy step", config=fl.RawMessagesConfig(topic_path=topics.POLICY_STEP))
    return fl.SplitContainer(direction="column", items=[
        fl.SplitItem(proportion=2, content=obs), fl.SplitItem(proportion=1, content=act),
        fl.SplitItem(proportion=1, content=raw)])


def _firmware_panels() -> fl.SplitContainer:
    mode = fl.IndicatorPanel(title="firmware mode", config=fl.IndicatorConfig(
        path=f"{topics.FIRMWARE_STATE}.mode_name", style="background", fallback_label="no firmware state",
        rules=[fl.IndicatorRule(operator="=", raw_value=name, color=color, label=name)
               for name, color in MODE_COLORS.items()]))
    # A latched fault reports mode DAMP (as the robot does) unless report_fault_damp; error_flags tells the latch.
    fault = fl.IndicatorPanel(title="fault latch", config=fl.IndicatorConfig(
        path=f"{topics.FIRMWARE_STATE}.error_flags", style="bulb", fallback_label="no fault",
        fallback_color="#9e9e9e", rules=[fl.IndicatorRule(operator=">", raw_value="0",
                                                          color=MODE_COLORS["FAULT_DAMP"], label="fault latched")]))
    armed = fl.IndicatorPanel(title="armed", config=fl.IndicatorConfig(
        path=f"{topics.FIRMWARE_STATE}.armed", style="bulb", fallback_label="disarmed", fallback_color="#9e9e9e",
        rules=[fl.IndicatorRule(operator="=", raw_value="true", color="#2e9d46", label="armed")]))
    alerts = fl.RawMessagesPanel(title="firmware alerts", config=fl.RawMessagesConfig(
        topic_path=f"{topics.FIRMWARE_STATE}.alerts", default_expanded=True))
    state = fl.RawMessagesPanel(title="firmware state", config=fl.RawMessagesConfig(topic_path=topics.FIRMWARE_STATE))
    return fl.SplitContainer(direction="column", items=[
        fl.SplitItem(proportion=1, content=fl.SplitContainer(direction="row", items=[
            fl.SplitItem(content=mode), fl.SplitItem(content=fault), fl.SplitItem(content=armed)])),
        fl.SplitItem(proportion=1, content=alerts), fl.SplitItem(proportion=3, content=state)])


def _imu_panels() -> fl.SplitContainer:
    def plot(title: str, field: str) -> fl.PlotPanel:
        return fl.PlotPanel(title=title, config=fl.PlotConfig(show_legend=True, paths=[
            fl.PlotSeries(value=f"{topics.IMU}.{field}.{c}", label=c) for c in "xyz"]))

    return fl.SplitContainer(direction="column", items=[
        fl.SplitItem(content=plot("IMU angular velocity (rad/s)", "angular_velocity")),
        fl.SplitItem(content=plot("IMU linear acceleration (m/s²)", "linear_acceleration"))])


def _teleop_panels() -> fl.SplitContainer:
    vx, wz = TELEOP_SPEED["linear-x"], TELEOP_SPEED["angular-z"]
    teleop = fl.TeleopPanel(title="drive (/cmd_vel, needs MOVE: stand, then balance)", config=fl.TeleopConfig(
        topic=topics.CMD_VEL, publish_rate=5.0,
        up_button=fl.TeleopButton(field="linear-x", value=vx), down_button=fl.TeleopButton(field="linear-x", value=-vx),
        left_button=fl.TeleopButton(field="angular-z", value=wz),
        right_button=fl.TeleopButton(field="angular-z", value=-wz)))

    def mode(name: str, color: str) -> fl.SplitItem:
        return fl.SplitItem(content=fl.PublishPanel(title=f"mode: {name}", config=fl.PublishConfig(
            topic_name=topics.TELEOP_MODE, datatype="std_msgs/msg/String", button_text=name, button_color=color,
            value=json.dumps({"data": name}))))

    return fl.SplitContainer(direction="row", items=[
        fl.SplitItem(proportion=2, content=teleop),
        fl.SplitItem(proportion=1, content=fl.SplitContainer(direction="column", items=[
            mode("stand", MODE_COLORS["STAND"]), mode("balance", MODE_COLORS["MOVE"]),
            mode("damp", MODE_COLORS["DAMP"])]))])


def build_layout() -> fl.Layout:
    three_d = fl.ThreeDeePanel(title="Asimov 1 (URDF from /robot_description, links from /tf)",
                               config=fl.ThreeDeeConfig(
        follow_tf="pelvis_link", follow_mode="follow-position", fixed_frame="world",
        layers={
            "grid": fl.BaseRendererGridLayerSettings(frame_id="world"),
            "asimov1": fl.BaseRendererUrdfLayerSettings(source_type="topic", topic=topics.ROBOT_DESCRIPTION,
                                                        control_mode="transforms", display_mode="auto"),
        },
        topics={topics.FOXGLOVE_SCENE: fl.BaseRendererSceneUpdateTopicSettings(visible=True)},  # the scene's ground
        camera_state=fl.ThreeDeeCameraState(distance=3.0, perspective=True, phi=65.0, theta_offset=45.0)))
    joints_tab = fl.SplitContainer(direction="column", items=[fl.SplitItem(content=_joint_plot(n))
                                                             for n in PLOT_JOINTS])
    bridge_tab = fl.SplitContainer(direction="column", items=[
        fl.SplitItem(content=fl.ParametersPanel(title="graph parameters")),
        fl.SplitItem(content=fl.RawMessagesPanel(title="bridge counters", config=fl.RawMessagesConfig(
            topic_path=topics.FOXGLOVE_STATS)))])
    # real-time conformance (docs/performance.md): the plant's control period, lateness and real-time factor, and the
    # SDK bridge's state rate, each a JSON line once per report period (std_msgs/String, so shown, not plotted)
    realtime_tab = fl.SplitContainer(direction="column", items=[
        fl.SplitItem(proportion=2, content=fl.RawMessagesPanel(
            title="real time: control period, lateness, real-time factor (/vasimov/realtime)",
            config=fl.RawMessagesConfig(topic_path=f"{topics.REALTIME}.data", default_expanded=True))),
        fl.SplitItem(proportion=1, content=fl.RawMessagesPanel(
            title="SDK state rate (/vasimov/sdk/rate)",
            config=fl.RawMessagesConfig(topic_path=f"{topics.SDK_RATE}.data", default_expanded=True)))])
    tabs = fl.TabContainer(tabs=[
        fl.TabItem(title="Joints", content=joints_tab),
        fl.TabItem(title="Firmware", content=_firmware_panels()),
        fl.TabItem(title="IMU", content=_imu_panels()),
        fl.TabItem(title="Policy", content=_policy_panels()),
        fl.TabItem(title="Bridge", content=bridge_tab),
        fl.TabItem(title="Real time", content=realtime_tab),
    ])
    # the head camera's JPEG beside the 3D view (docs/cameras.md): the compressed image is the light one to stream
    camera = fl.ImagePanel(title="head camera (JPEG, /camera/head/color/image_raw/compressed)",
                           config=fl.ImageConfig(image_mode=fl.ImageModeConfig(
                               image_topic=topics.CAMERA_COLOR_COMPRESSED, calibration_topic=topics.CAMERA_COLOR_INFO)))
    views = fl.SplitContainer(direction="row", items=[
        fl.SplitItem(proportion=3, content=three_d), fl.SplitItem(proportion=2, content=camera)])
    left = fl.SplitContainer(direction="column", items=[
        fl.SplitItem(proportion=3, content=views), fl.SplitItem(proportion=1, content=_teleop_panels())])
    return fl.Layout(content=fl.SplitContainer(direction="row", items=[
        fl.SplitItem(proportion=1, content=left), fl.SplitItem(proportion=1, content=tabs)]))


def layout_json() -> str:
    """The layout as the file holds it: pretty-printed, stable key order, trailing newline."""
    return json.dumps(json.loads(build_layout().to_json()), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m vasimov_bridge.foxglove_layout OUT.json", file=sys.stderr)
        return 2
    Path(args[0]).write_text(layout_json(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
