"""The head camera through the whole graph, as a user runs it (`vasimov up`): nothing is rendered while nobody
subscribes (the node does not even read the plant's state), then a ROS subscriber gets color, depth, both camera
infos and the JPEG, stamped in simulated time in the optical frame, and rendering stops again when it leaves."""

from __future__ import annotations

import io
import itertools
import json
import math
import re
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest
from foxglove_client import FoxgloveWsClient
from harness import VENV_BIN, Graph, wait_for
from PIL import Image as PILImage
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosgraph_msgs.msg import Clock
from rosprobe import RosProbe
from sensor_msgs.msg import CameraInfo, CompressedImage, Image
from std_msgs.msg import String

from vasimov.camera import HEAD_CAMERA, HEAD_OPTICAL_FRAME, intrinsics
from vasimov.ros import qos, topics
from vasimov.ros.convert import from_stamp

pytestmark = pytest.mark.graph

PORT_LINE = re.compile(r"foxglove server on ([0-9.]+):(\d+)")
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
        # each frame is a control period's state (the plant's samples come once per 20 ms period), one per frame time
        # k / rate_hz: the first state the camera read at or after it (best effort, newest wins: never queued)
        assert all(abs(s / 0.02 - round(s / 0.02)) < 1e-6 for s in stamps), stamps
        frame_index = [math.floor(s * HEAD_CAMERA.rate_hz + 1e-9) for s in stamps]
        assert all(b > a for a, b in itertools.pairwise(frame_index)), stamps
        # the robot stands on the gantry looking ahead at the floor: the lower image sees the floor, the top the sky
        d = np.frombuffer(bytes(depth.data), dtype="<f4").reshape(240, 320)
        assert np.isnan(d[:20]).all()  # sky: nothing hit
        floor = d[-20:]
        assert np.isfinite(floor).all() and 0.5 < float(np.median(floor)) < 5.0
        pix = np.frombuffer(bytes(color.data), dtype=np.uint8).reshape(240, 320, 3)
        decoded = np.asarray(PILImage.open(io.BytesIO(bytes(jpeg.data))))
        assert jpeg.format == "jpeg" and decoded.shape == (240, 320, 3)
        assert pix.std() > 5.0 and decoded.std() > 5.0  # a picture (floor and sky), not a blank buffer
        # the counters go out once a second: the frames above may have come before the first count that has them
        wait_for(lambda: _stats(probe).get("renders", 0) > 0, 10, "a stats message counting the renders")
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


def _recorder(out: Path, env: dict[str, str], *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(VENV_BIN / "vasimov"), "record", str(out), "--exclude", "^/rosout$", *extra],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _read_bag(path: Path) -> tuple[dict[str, str], dict[str, list]]:
    store = get_typestore(Stores.ROS2_KILTED)
    msgs: dict[str, list] = {}
    with Reader(path) as reader:
        types = {c.topic: c.msgtype for c in reader.connections}
        for c, _, raw in reader.messages():
            if c.topic.startswith("/camera/"):
                msgs.setdefault(c.topic, []).append(store.deserialize_cdr(raw, c.msgtype))
    return types, msgs


def test_foxglove_gets_the_jpeg_and_bags_keep_the_camera(tmp_path):
    """A Foxglove client (test/foxglove_client.py) receives the compressed image as a ROS 2 channel; meanwhile
    `vasimov record` keeps the JPEG and both camera infos (no raw image by default) and `vasimov record --camera-raw`
    the raw color and depth too; rosbags reads them back."""
    g = Graph("--policy", "hold", "foxglove_port:=0", "binary_stream:=false")
    client = None
    recs: list[subprocess.Popen[str]] = []
    try:
        m = wait_for(lambda: PORT_LINE.search(g.output()) or g.proc.poll() is not None, 90, "foxglove port line")
        assert isinstance(m, re.Match), g.output()[-3000:]
        client = FoxgloveWsClient(f"ws://{m.group(1)}:{m.group(2)}")
        wait_for(lambda: client.server_info, 10, "serverInfo")
        sub = client.subscribe(topics.CAMERA_COLOR_COMPRESSED, timeout=60)
        ch = client.channel(topics.CAMERA_COLOR_COMPRESSED)
        assert ch["encoding"] == "cdr" and ch["schemaName"] == "sensor_msgs/msg/CompressedImage"
        wait_for(lambda: len(client.received(sub)) >= 3, 120, "three JPEG frames over Foxglove")
        store = get_typestore(Stores.ROS2_KILTED)
        store.register(get_types_from_msg(ch["schema"], ch["schemaName"]))
        log_time, payload, _ = client.received(sub)[-1]
        msg = store.deserialize_cdr(payload, "sensor_msgs/msg/CompressedImage")
        assert msg.format == "jpeg" and msg.header.frame_id == HEAD_OPTICAL_FRAME
        assert log_time == msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec  # logged at sim time
        assert np.asarray(PILImage.open(io.BytesIO(bytes(msg.data)))).shape == (240, 320, 3)

        default, raw = tmp_path / "default", tmp_path / "raw"
        recs = [_recorder(default, g.env), _recorder(raw, g.env, "--camera-raw")]
        probe = RosProbe(g.domain)
        try:
            probe.subscribe(topics.CAMERA_STATS, String, qos.LATCHED)
            wait_for(lambda: _stats(probe).get("published", {}).get("depth", 0) >= 10, 120,
                     "ten depth frames published for the --camera-raw recorder")
        finally:
            probe.close()
        for r in recs:
            r.send_signal(signal.SIGTERM)
        outputs = [r.communicate(timeout=30)[0] for r in recs]
        assert [r.returncode for r in recs] == [0, 0], outputs
    finally:
        for r in recs:
            if r.poll() is None:
                r.kill()
                r.wait()
        if client is not None:
            client.close()
        g.stop()

    types, msgs = _read_bag(default)
    assert types[topics.CAMERA_COLOR_COMPRESSED] == "sensor_msgs/msg/CompressedImage"
    assert types[topics.CAMERA_COLOR_INFO] == types[topics.CAMERA_DEPTH_INFO] == "sensor_msgs/msg/CameraInfo"
    assert topics.CAMERA_COLOR not in types and topics.CAMERA_DEPTH not in types
    jpeg = msgs[topics.CAMERA_COLOR_COMPRESSED][-1]
    assert np.asarray(PILImage.open(io.BytesIO(bytes(jpeg.data)))).shape == (240, 320, 3)
    assert list(msgs[topics.CAMERA_COLOR_INFO][-1].k) == pytest.approx(intrinsics(HEAD_CAMERA).k)

    types, msgs = _read_bag(raw)
    assert types[topics.CAMERA_COLOR] == types[topics.CAMERA_DEPTH] == "sensor_msgs/msg/Image"
    color, depth = msgs[topics.CAMERA_COLOR][-1], msgs[topics.CAMERA_DEPTH][-1]
    assert (color.encoding, depth.encoding) == ("rgb8", "32FC1")
    d = np.frombuffer(bytes(depth.data), dtype="<f4").reshape(240, 320)
    assert np.isfinite(d[-1]).all() and np.isnan(d[0]).all()  # floor below, sky above


def test_without_headless_gl_the_camera_says_why_and_stays_up():
    """No usable GL (here: MUJOCO_GL names a windowed backend): a camera reader gets no images, the node logs the
    reason with the packages to install, reports it on its stats topic, and it and the graph keep running."""
    g = Graph("--policy", "hold", "foxglove:=false", "binary_stream:=false", env={"MUJOCO_GL": "glfw"})
    probe = RosProbe(g.domain)
    try:
        probe.subscribe(topics.CAMERA_STATS, String, qos.LATCHED)
        probe.subscribe(topics.CAMERA_COLOR, Image, IMAGE_QOS)
        stats = wait_for(lambda: _stats(probe).get("gl_error") and _stats(probe), 90, "the camera's GL error")
        assert "libegl1" in stats["gl_error"] and "libosmesa6" in stats["gl_error"], stats
        # logged before the flag is set, but it reaches us through the supervisor's pipe: a bounded wait
        wait_for(lambda: "camera: cannot render, the camera topics stay silent" in g.output(), 10, "the log line")
        n = probe.count(topics.CAMERA_STATS)
        wait_for(lambda: probe.count(topics.CAMERA_STATS) >= n + 2, 30, "the camera still running")
        assert probe.count(topics.CAMERA_COLOR) == 0 and _stats(probe)["renders"] == 0
        assert g.proc.poll() is None
    finally:
        probe.close()
        g.stop()


LOCKSTEP_S = 2.0


def _lockstep_bag(tmp_path: Path, name: str, seed: int, script: Path) -> tuple[str, dict[str, list]]:
    out = tmp_path / name
    g = Graph("--lockstep", "--duration", str(LOCKSTEP_S), "--seed", str(seed), "--script", str(script),
              "--record", str(out), "foxglove:=false", "binary_stream:=false")
    try:
        rc = g.proc.wait(timeout=300)
    finally:
        g.stop()
    log = g.output()
    assert rc == 0, log[-4000:]
    _, msgs = _read_bag(out)
    return log, msgs


def test_a_lockstep_bag_keeps_every_frame_and_repeats_them_for_a_seed(tmp_path):
    """`vasimov up --lockstep --record` makes the camera a lockstep participant (camera_lockstep): the plant steps on
    only once the camera drew each due state, so the bag holds a frame at every frame time of the run whatever the
    machine's speed, and a second run with the same seed records the same images, byte for byte."""
    script = tmp_path / "script.yaml"
    script.write_text("- {t: 0.1, cmd: stand}\n")
    runs = [_lockstep_bag(tmp_path, f"run{i}", 11, script) for i in (1, 2)]
    jpegs = []
    for log, msgs in runs:
        assert "camera: taking part in lockstep" in log, log[-4000:]
        assert "participant camera ready" in log, log[-4000:]
        frames = msgs[topics.CAMERA_COLOR_COMPRESSED]
        stamps = [round(from_stamp(m.header.stamp), 6) for m in frames]
        # frame k: the first control period's state at or after k / rate_hz (periods every 0.02 s); none dropped,
        # up to the run's end (the very last may be cut off when the plant ends the run)
        grid = sorted({round(math.ceil(k / HEAD_CAMERA.rate_hz / 0.02 - 1e-9) * 0.02, 6)
                       for k in range(int(LOCKSTEP_S * HEAD_CAMERA.rate_hz) + 1)})
        assert stamps == grid[:len(stamps)] and len(stamps) >= len(grid) - 1, (stamps, grid)
        infos = msgs[topics.CAMERA_COLOR_INFO]
        assert [round(from_stamp(m.header.stamp), 6) for m in infos][:len(stamps) - 1] == stamps[:-1]
        jpegs.append({s: bytes(m.data) for s, m in zip(stamps, frames, strict=True)})
    common = sorted(set(jpegs[0]) & set(jpegs[1]))
    assert len(common) >= len(grid) - 1
    assert all(jpegs[0][s] == jpegs[1][s] for s in common), [s for s in common if jpegs[0][s] != jpegs[1][s]]
    # the pictures are of a moving robot (STAND lifts the head as the legs extend), not one repeated still
    assert len({jpegs[0][s] for s in common}) > 3
