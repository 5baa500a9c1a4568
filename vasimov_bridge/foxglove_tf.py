"""The Foxglove bridge's `/tf` publisher: every link of the robot, from the simulated joint state and base pose, and
the head camera's optical frame (``head_camera_optical_frame``, REP 103, fixed to ``neck_pitch_link``).

`/tf` is a Foxglove ``FrameTransforms`` channel (tf2_msgs is not installable here) so the URDF on
``/robot_description`` moves in the 3D panel. Joint states and odometry arrive raw: only their leading stamps are read
per message, and the pair is deserialized only when a transform set is due (``tf_rate_hz``, a quarter of the physics
rate by default). It reads nothing while no client watches `/tf`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from foxglove.channels import FrameTransformsChannel
from foxglove.messages import FrameTransform, FrameTransforms, Quaternion, Timestamp, Vector3
from nav_msgs.msg import Odometry
from rclpy.serialization import deserialize_message
from rclpy.subscription import Subscription
from sensor_msgs.msg import JointState

from vasimov.camera import HEAD_CAMERA, HEAD_OPTICAL_FRAME, optical_frame_in_body
from vasimov.ros import qos, topics
from vasimov_bridge import foxglove_schemas
from vasimov_bridge.kinematics_tf import KinematicTree, LinkTransform


def frame_transforms(links: list[LinkTransform], sec: int, nsec: int) -> FrameTransforms:
    stamp = Timestamp(sec, nsec)
    return FrameTransforms(transforms=[
        FrameTransform(timestamp=stamp, parent_frame_id=t.parent, child_frame_id=t.child,
                       translation=Vector3(x=t.translation[0], y=t.translation[1], z=t.translation[2]),
                       rotation=Quaternion(x=t.rotation_xyzw[0], y=t.rotation_xyzw[1], z=t.rotation_xyzw[2],
                                           w=t.rotation_xyzw[3]))
        for t in links])


class TfPublisher:
    """Subscribes to joint states and ground-truth odometry while watched; publishes link transforms on `/tf`."""

    def __init__(self, node: Any, fox_context: Any) -> None:
        self.node = node  # create/destroy subscriptions, p["tf_rate_hz"], count, log_limited
        self.channel = FrameTransformsChannel(topics.FOXGLOVE_TF, context=fox_context)
        self.tree = KinematicTree()
        # the head camera's REP 103 optical frame, fixed to its link: the frame id of every camera message
        pos, rot = optical_frame_in_body(HEAD_CAMERA)
        self.fixed = [LinkTransform(HEAD_CAMERA.body, HEAD_OPTICAL_FRAME, pos, rot)]
        self.subs: list[Subscription] = []
        self.last_ns: int | None = None
        self.latest_joints: bytes | None = None  # raw CDR
        self.latest_odom: bytes | None = None  # raw CDR

    def watch(self, on: bool) -> None:
        """Executor: read the inputs only while some client watches `/tf`."""
        n = self.node
        if on and not self.subs:
            self.subs = [
                n.create_subscription(JointState, topics.JOINT_STATES, self.on_joint_states, qos.TELEMETRY, raw=True),
                n.create_subscription(Odometry, topics.ODOM_TRUTH, self.on_odom, qos.TELEMETRY, raw=True),
            ]
        elif not on and self.subs:
            for s in self.subs:
                n.destroy_subscription(s)
            self.subs = []
            self.latest_joints = self.latest_odom = None

    def on_joint_states(self, data: bytes) -> None:
        self.latest_joints = data
        self._try()

    def on_odom(self, data: bytes) -> None:
        self.latest_odom = data
        self._try()

    def _try(self) -> None:
        """Publish when joint state and base pose of the same physics step are both in (the plant sends them
        back to back with one stamp), at most tf_rate_hz per simulated second."""
        js_raw, odom_raw = self.latest_joints, self.latest_odom
        if js_raw is None or odom_raw is None:
            return
        ns = foxglove_schemas.cdr_leading_stamp_ns(js_raw)
        if ns is None or ns != foxglove_schemas.cdr_leading_stamp_ns(odom_raw):
            return
        last = self.last_ns
        if last is not None and last <= ns < last + 1e9 / self.node.p["tf_rate_hz"] - 1:
            return
        self.last_ns = ns
        try:
            js = deserialize_message(js_raw, JointState)
            odom = deserialize_message(odom_raw, Odometry)
            if len(js.position) != len(js.name):
                raise ValueError(f"{len(js.name)} joint names but {len(js.position)} positions")
            q = np.asarray(js.position, dtype=float)[self.tree.order_for(js.name)]
            p, o = odom.pose.pose.position, odom.pose.pose.orientation
            links = self.tree.transforms(q, (p.x, p.y, p.z), (o.w, o.x, o.y, o.z)) + self.fixed
        except ValueError as exc:
            self.node.count("tf_rejected")
            self.node.log_limited("tf", f"no /tf for this state: {exc}")
            return
        self.channel.log(frame_transforms(links, js.header.stamp.sec, js.header.stamp.nanosec), log_time=ns)
        self.node.count("tf_published")
