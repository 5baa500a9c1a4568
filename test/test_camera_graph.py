"""The head camera through the whole graph, as a user runs it (`vasimov up`): nothing is rendered while nobody
subscribes (the node does not even read the plant's state), then a ROS subscriber gets color, depth, both camera
infos and the JPEG, stamped in simulated time in the optical frame, and rendering stops again when it leaves."""

from __future__ import annotations

import io
import itertools
import json

import numpy as np
import pytest
from harness import Graph, wait_for
from PIL import Image as PILImage
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from rosprobe import RosProbe
from sensor_msgs.msg import CameraInfo, CompressedImage, Image
from std_msgs.msg import String

from vasimov.camera import HEAD_CAMERA, HEAD_OPTICAL_FRAME, intrinsics
from vasimov.ros import qos, topics
from vasimov.ros.convert import from_stamp

pytestmark = pytest.mark.graph

IMAGE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)


def _stats(probe: RosProbe) -> dict:
    last = probe.last(topics.CAMERA_STATS)
    return json.loads(last.data) if last is not None else {}


def test_camera_renders_only_while_watched_and_serves_all_four_topics():
    g = Graph("--policy", "hold", "foxglove:=false", "binary_stream:=false")
    probe = RosProbe(g.domain)
    try:
        probe.subscribe(topics.CAMERA_STATS, String, qos.LATCHED)
        probe.subscribe(topics.CLOCK, Clock, qos.CLOCK)
        # idle: several stats seconds with the plant running and nobody on a camera topic
        wait_for(lambda: probe.count(topics.CLOCK) > 0 and probe.count(topics.CAMERA_STATS) >= 1, 90,
                 "the plant's clock and the camera's stats")
        first = probe.count(topics.CAMERA_STATS)
        wait_for(lambda: probe.count(topics.CAMERA_STATS) >= first + 3, 30, "three more stats messages")
        idle = _stats(probe)
        assert idle["renders"] == 0 and idle["samples"] == 0 and idle["reading_samples"] is False, idle
        assert idle["gl_backend"] is None  # not even a GL context before anybody looks

        subs = {t: probe.subscribe(t, m, IMAGE_QOS) for t, m in (
            (topics.CAMERA_COLOR, Image), (topics.CAMERA_COLOR_INFO, CameraInfo), (topics.CAMERA_DEPTH, Image),
            (topics.CAMERA_DEPTH_INFO, CameraInfo), (topics.CAMERA_COLOR_COMPRESSED, CompressedImage))}
        wait_for(lambda: all(probe.count(t) >= 3 for t in subs), 120, "three messages on every camera topic")
        color, depth = probe.last(topics.CAMERA_COLOR), probe.last(topics.CAMERA_DEPTH)
        info = probe.last(topics.CAMERA_COLOR_INFO)
        jpeg = probe.last(topics.CAMERA_COLOR_COMPRESSED)
        intr = intrinsics(HEAD_CAMERA)
        for m in (color, depth, info, jpeg, probe.last(topics.CAMERA_DEPTH_INFO)):
            assert m.header.frame_id == HEAD_OPTICAL_FRAME
        assert (color.width, color.height, color.encoding, color.step) == (320, 240, "rgb8", 960)
        assert (depth.encoding, depth.step, depth.is_bigendian) == ("32FC1", 1280, 0)
        assert list(info.k) == pytest.approx(intr.k) and info.width == 320 and info.height == 240
        # stamps are simulated time: within the plant's clock, on the camera's frame grid
        sim_now = from_stamp(probe.last(topics.CLOCK).clock)
        stamps = [from_stamp(m.header.stamp) for m in probe.all(topics.CAMERA_COLOR)]
        assert all(0.0 < s <= sim_now + 1e-9 for s in stamps)
        assert all(b > a for a, b in itertools.pairwise(stamps))
        grid = 1.0 / HEAD_CAMERA.rate_hz
        assert all((s % grid) < 0.02 + 1e-6 or grid - (s % grid) < 1e-6 for s in stamps)  # first state after k/rate
        # the robot stands on the gantry looking ahead at the floor: the lower image sees the floor, the top the sky
        d = np.frombuffer(bytes(depth.data), dtype="<f4").reshape(240, 320)
        assert np.isnan(d[:20]).all()  # sky: nothing hit
        floor = d[-20:]
        assert np.isfinite(floor).all() and 0.5 < float(np.median(floor)) < 5.0
        pix = np.frombuffer(bytes(color.data), dtype=np.uint8).reshape(240, 320, 3)
        decoded = np.asarray(PILImage.open(io.BytesIO(bytes(jpeg.data))))
        assert jpeg.format == "jpeg" and decoded.shape == (240, 320, 3)
        assert pix.std() > 5.0 and decoded.std() > 5.0  # a picture (floor and sky), not a blank buffer
        watched = _stats(probe)
        assert watched["renders"] > 0 and watched["gl_backend"] in ("egl", "osmesa"), watched

        for sub in subs.values():
            probe.node.destroy_subscription(sub)
        wait_for(lambda: not _stats(probe).get("reading_samples", True), 30, "the camera to stop reading")
        stopped = _stats(probe)["renders"]
        n = probe.count(topics.CAMERA_STATS)
        wait_for(lambda: probe.count(topics.CAMERA_STATS) >= n + 3, 30, "three more stats messages")
        assert _stats(probe)["renders"] == stopped
    finally:
        probe.close()
        g.stop()
