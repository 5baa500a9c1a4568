"""The camera node: the head camera as ROS image topics, rendered from the plant's published state.

* **Inputs**: the plant's latched scene (``/vasimov/scene``: which world to build, the same MJCF as the plant's) and,
  only while someone watches a camera topic, ``/vasimov/plant/samples`` (one message per control period: joint
  angles and the ground-truth base pose of its last physics step), read best effort with a depth of 1, so the plant
  never keeps or resends a sample for the camera. With nobody watching the node reads nothing and renders nothing.
* **Frames at their simulated times**: frame ``k`` is the first state at or after sim time ``k / rate_hz``; its
  stamp is that state's sim time. A frame the renderer has no time for is dropped (newest wins, counted), never
  queued: the camera never delays the state, in real time or in lockstep.
* **Lockstep frames** (``lockstep_frames``, the launch argument ``camera_lockstep``; ``vasimov up --lockstep
  --record`` turns it on): the camera takes part in lockstep. It reads every period's samples (reliable) and tells
  the plant on ``/vasimov/lockstep/camera`` which state it took, after rendering it when a frame is due; the plant
  steps on only then (``vasimov_plant.lockstep.PeriodHold``). So no frame is dropped and a seed gives the same
  images, at the cost of rendering in the loop.
* **Outputs** (ROS camera conventions, frame ``head_camera_optical_frame``, REP 103): ``.../color/image_raw``
  (rgb8), ``.../color/image_raw/compressed`` (JPEG, Pillow), ``.../depth/image_raw`` (32FC1, metres along the
  optical axis, NaN where nothing is hit) and both ``camera_info`` (intrinsics from the field of view,
  ``vasimov.camera.intrinsics``). Each is built only while it has a reader.
* **Threads**: the executor takes messages and picks frames; one render thread owns the GL context
  (``vasimov.model.render``) and publishes. Without headless GL the node logs why (and which packages provide it),
  keeps running and says so on ``/vasimov/camera/stats``.
"""

from __future__ import annotations

import io
import json
import math
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from rclpy.clock import Clock, ClockType
from rclpy.event_handler import PublisherEventCallbacks
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo, CompressedImage, Image
from std_msgs.msg import String, UInt64MultiArray
from vasimov_msgs.msg import PlantSamples

from vasimov import joints
from vasimov.camera import HEAD_CAMERA, HEAD_OPTICAL_FRAME, CameraSpec, intrinsics
from vasimov.cpu_priority import renice_all_threads
from vasimov.ros import plant_samples, qos, topics
from vasimov.ros.convert import to_stamp
from vasimov.ros.lean_node import LeanNode
from vasimov.ros.lockstep import announce_ready
from vasimov.ros.params import COMMON, OBSERVER_CPU_NICE, ParamSpec, declare
from vasimov.ros.ratelog import RateLimitedLog
from vasimov.ros.spin import run_node
from vasimov.scenes import SceneError, parse_scene

PARAMS: tuple[ParamSpec, ...] = (
    *COMMON,
    ParamSpec("enabled", True, "Serve the camera topics (false: the node stays up and reads nothing)."),
    ParamSpec("width", HEAD_CAMERA.width, "Image width (px).", min=16, max=4096),
    ParamSpec("height", HEAD_CAMERA.height, "Image height (px).", min=16, max=4096),
    ParamSpec("vfov_deg", HEAD_CAMERA.vfov_deg, "Vertical field of view (deg); fx = fy follow from it.",
              min=1.0, max=170.0),
    ParamSpec("rate_hz", HEAD_CAMERA.rate_hz, "Frames per simulated second (frames the renderer cannot keep up "
              "with are dropped, never queued).", min=0.1, max=120.0),
    ParamSpec("near", HEAD_CAMERA.near, "Near clip plane (m).", min=0.001, max=10.0),
    ParamSpec("far", HEAD_CAMERA.far, "Far clip plane (m): beyond it depth is NaN.", min=0.1, max=1000.0),
    ParamSpec("jpeg_quality", 80, "JPEG quality of the compressed color image (Pillow, 1-95).", min=1, max=95),
    ParamSpec("watch_period", 2.0, "Wall seconds between checks of who watches the camera topics, a safety net "
              "beside the publishers' matched events, which start and stop the rendering at once.", min=0.05,
              max=60.0),
    ParamSpec("lockstep_frames", False, "Lockstep only: take part in lockstep, every frame rendered at its simulated "
              "time before the plant steps on (the plant's camera_lockstep must match: the launch argument "
              "camera_lockstep sets both)."),
    OBSERVER_CPU_NICE,
)

#: the sky where nothing is hit (depth NaN): MuJoCo's skybox would give sky pixels a depth, so it is not drawn
SKY_RGB = (150, 170, 196)


@dataclass(frozen=True)
class Due:
    """A state a frame is due for: sim time, base pose (w x y z) and joint angles in joint-table order."""

    time: float
    base_pos: np.ndarray
    base_quat: np.ndarray
    q: np.ndarray
    epoch: int = 0
    step: int = 0


class FramePicker:
    """Which states become frames: the first state at or after each multiple of ``1 / rate_hz`` of sim time.
    Pure; a restart of the simulation (time going back) starts the grid again."""

    def __init__(self, rate_hz: float) -> None:
        self.rate = float(rate_hz)
        self.last_index: int | None = None

    def due(self, t: float) -> bool:
        index = math.floor(t * self.rate + 1e-9)
        if self.last_index is not None and self.last_index > index + 1:  # time went back: a restarted life
            self.last_index = None
        if self.last_index is not None and index <= self.last_index:
            return False
        self.last_index = index
        return True


class CameraNode(LeanNode):
    """A LeanNode (no default QoS-event handlers; the wait-loop executor): while a viewer watches, its executor wakes
    for every control period's samples, and rclpy's classic executor made that the main thread's whole cost (1.0 s
    of CPU in 15 s with the shipped Foxglove layout open, against 2.8 s for rendering)."""

    def __init__(self, **node_options: Any) -> None:
        super().__init__("camera", **node_options)
        self.p = declare(self, PARAMS)
        self.spec: CameraSpec = HEAD_CAMERA.with_(width=int(self.p["width"]), height=int(self.p["height"]),
                                                  vfov_deg=float(self.p["vfov_deg"]), rate_hz=float(self.p["rate_hz"]),
                                                  near=float(self.p["near"]), far=float(self.p["far"]))
        self.intr = intrinsics(self.spec)
        self.log_limited = RateLimitedLog(self.get_logger().warning)
        self.counts = {"samples": 0, "due": 0, "renders": 0, "dropped": 0, "published_color": 0,
                       "published_compressed": 0, "published_depth": 0, "render_ms_total": 0.0,
                       "render_cpu_ms_total": 0.0}
        self.gl_error: str | None = None
        self.backend: str | None = None
        self.scene_name: str | None = None
        self.picker = FramePicker(self.spec.rate_hz)
        self.lock = threading.Condition()
        self.pending: Due | None = None
        self.scene_text: str | None = None  # a scene the render thread has yet to build
        self.built_scene: str | None = None  # the last scene handed to it
        self.stopping = False

        # a reader coming or going: re-check at once (no polling needed for the common case)
        events = PublisherEventCallbacks(matched=lambda _info: self.watch())
        image_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=2, reliability=ReliabilityPolicy.RELIABLE,
                               durability=DurabilityPolicy.VOLATILE)
        self.pub_color = self.create_publisher(Image, topics.CAMERA_COLOR, image_qos,
                                          event_callbacks=events)
        self.pub_compressed = self.create_publisher(CompressedImage, topics.CAMERA_COLOR_COMPRESSED, image_qos,
                                               event_callbacks=events)
        self.pub_depth = self.create_publisher(Image, topics.CAMERA_DEPTH, image_qos,
                                          event_callbacks=events)
        self.pub_color_info = self.create_publisher(CameraInfo, topics.CAMERA_COLOR_INFO, image_qos,
                                               event_callbacks=events)
        self.pub_depth_info = self.create_publisher(CameraInfo, topics.CAMERA_DEPTH_INFO, image_qos,
                                               event_callbacks=events)
        self.pub_stats = self.create_publisher(String, topics.CAMERA_STATS, qos.LATCHED)
        self.samples_sub = None
        self.samples_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                                      reliability=ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.VOLATILE)
        self.joint_slots: np.ndarray | None = None
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.enabled = bool(self.p["enabled"])
        # lockstep frames: a participant from the start, reading every period (reliable) and answering each one
        self.frame_mode = bool(self.p["lockstep"]) and bool(self.p["lockstep_frames"])
        self.pub_took = None
        self.ready_pub = None
        if self.frame_mode:
            self.pub_took = self.create_publisher(UInt64MultiArray, topics.LOCKSTEP_CAMERA, qos.LATCHED)
            self.samples_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=8,
                                          reliability=ReliabilityPolicy.RELIABLE,
                                          durability=DurabilityPolicy.VOLATILE)
            self.samples_sub = self.create_subscription(PlantSamples, topics.PLANT_SAMPLES, self.on_samples,
                                                        self.samples_qos)
            self.join_timer = self.create_timer(0.02, self._join, clock=steady)
        renice_all_threads(int(self.p["cpu_nice"]))
        self.ready = False  # the render thread has its GL context and model
        self.thread: threading.Thread | None = None  # started by the first watcher: no GL, no model before
        if self.enabled:
            self.create_subscription(String, topics.SCENE, self.on_scene, qos.LATCHED)
            self.create_timer(float(self.p["watch_period"]), self.watch, clock=steady)
            if self.frame_mode:
                # lockstep frames: GL and the model are built before this node announces ready (``_join``), not
                # on the first due frame, which the plant waits for (measured: under load the first frame's set-up
                # took longer than the plant's 20 s stall limit, and the run stopped with code 4)
                self._start_render_thread()
        else:
            self.get_logger().info("camera disabled (enabled:=false): no topics are served")
        self.create_timer(1.0, self.publish_stats, clock=steady)

    # -- executor side -------------------------------------------------------------------------------------------
    def _join(self) -> None:
        """Lockstep frames: announce ready once the plant's samples reach this node, it reads our answers, and the
        render thread can draw (its GL context and the scene's model are built, or GL is known to be missing)."""
        can_draw = not self.enabled or self.ready or self.gl_error is not None or self.thread is None
        if can_draw and self.samples_sub.get_publisher_count() > 0 and self.pub_took.get_subscription_count() > 0:
            self.join_timer.cancel()
            self.destroy_timer(self.join_timer)
            self.ready_pub = announce_ready(self)
            self.get_logger().info("camera: taking part in lockstep (every frame at its simulated time)")

    def _took(self, epoch: int, step: int) -> None:
        """Lockstep frames: tell the plant this state is taken (rendered, if a frame was due): it steps on."""
        if self.pub_took is not None:
            self.pub_took.publish(UInt64MultiArray(data=[int(epoch), int(step)]))

    def _watched(self) -> bool:
        return self.enabled and self.gl_error is None and any(self.watchers().values())

    def watchers(self) -> dict[str, int]:
        return {"color": self.pub_color.get_subscription_count(),
                "compressed": self.pub_compressed.get_subscription_count(),
                "depth": self.pub_depth.get_subscription_count(),
                "color_info": self.pub_color_info.get_subscription_count(),
                "depth_info": self.pub_depth_info.get_subscription_count()}

    def watch(self) -> None:
        """Read the plant's samples only while a camera topic has a reader (and rendering is possible). Runs on a
        publisher's matched event (before the node's constructor finished: nothing to do yet) and on a slow timer."""
        if not hasattr(self, "pub_depth_info") or not self.enabled:
            return
        on = any(self.watchers().values()) and self.gl_error is None
        if on and self.thread is None:
            self._start_render_thread()
        if self.frame_mode:
            return  # reads every period whoever watches: the plant waits for its answers
        if on and self.samples_sub is None:
            self.samples_sub = self.create_subscription(PlantSamples, topics.PLANT_SAMPLES, self.on_samples,
                                                        self.samples_qos)
        elif not on and self.samples_sub is not None:
            self.destroy_subscription(self.samples_sub)
            self.samples_sub = None
            self.picker.last_index = None

    def _start_render_thread(self) -> None:
        self.thread = threading.Thread(target=self._render_loop, name="camera-render", daemon=True)
        self.thread.start()

    def on_scene(self, msg: String) -> None:
        """The plant's scene (latched; re-sent at a restart): a new renderer only when the world changed."""
        with self.lock:
            if msg.data == self.built_scene:
                return
            self.built_scene = msg.data
            self.scene_text = msg.data
            self.lock.notify_all()

    def on_samples(self, msg: PlantSamples) -> None:
        self.counts["samples"] += 1
        try:
            samples, truth = plant_samples.unpack(msg)
        except ValueError as exc:
            self.log_limited("samples", f"camera: PlantSamples refused: {exc}")
            return
        if not samples:
            return
        last = samples[-1]
        # lockstep frames: render a due frame only if someone watches (the plant waits for the answer either way);
        # who watches is asked only when a frame is due, not every period
        if truth is None or not self.picker.due(truth.time) or (self.frame_mode and not self._watched()):
            self._took(last.epoch, last.step)
            return
        due = Due(truth.time, np.array(truth.base_pos), np.array(truth.base_quat), np.array(last.position),
                  last.epoch, last.step)
        self.counts["due"] += 1
        if self.frame_mode and self.thread is None:
            self.watch()
        with self.lock:
            if self.pending is not None and self.ready:
                self.counts["dropped"] += 1  # the renderer is still busy with an older frame: newest wins
            self.pending = due
            self.lock.notify_all()

    def publish_stats(self) -> None:
        if not self.pub_stats.get_subscription_count():
            return  # nobody reads the counters: not even a JSON line's worth of work
        c = dict(self.counts)
        n = max(1, c["renders"])
        stats = {"renders": c["renders"], "dropped": c["dropped"], "due": c["due"], "samples": c["samples"],
                 "published": {k.removeprefix("published_"): v for k, v in c.items() if k.startswith("published_")},
                 "render_ms_mean": round(c["render_ms_total"] / n, 2),
                 "render_cpu_ms_mean": round(c["render_cpu_ms_total"] / n, 2),
                 "reading_samples": self.samples_sub is not None, "watchers": self.watchers(),
                 "gl_backend": self.backend, "gl_error": self.gl_error, "scene": self.scene_name,
                 "width": self.spec.width, "height": self.spec.height, "rate_hz": self.spec.rate_hz,
                 "enabled": self.enabled}
        self.pub_stats.publish(String(data=json.dumps(stats)))

    # -- render thread ---------------------------------------------------------------------------------------------
    def _render_loop(self) -> None:
        from vasimov.model.render import GLUnavailableError, choose_gl_backend

        try:
            self.backend = choose_gl_backend()
            self.get_logger().info(f"camera: headless GL backend {self.backend}")
        except GLUnavailableError as exc:
            # the log line before the flag: whoever sees the error on the stats topic finds it in the log too
            self.get_logger().error(f"camera: cannot render, the camera topics stay silent: {exc}")
            self.gl_error = str(exc)
            self._answer_pending()
            return
        renderer = None
        try:
            while True:
                with self.lock:
                    while not self.stopping and self.scene_text is None and (self.pending is None or renderer is None):
                        self.lock.wait(0.5)
                    if self.stopping:
                        return
                    scene_text, self.scene_text = self.scene_text, None
                    due, self.pending = self.pending, None
                if scene_text is not None:
                    renderer = self._build(renderer, scene_text)
                    if renderer is None:
                        return
                if due is not None and renderer is not None:
                    try:
                        self._frame(renderer, due)
                    finally:
                        self._took(due.epoch, due.step)
        except Exception as exc:  # a GL failure mid-run: say so, stay up, stop reading
            self.gl_error = f"{type(exc).__name__}: {exc}"
            self.get_logger().error(f"camera: rendering failed, the camera topics stay silent: {self.gl_error}")
        finally:
            if renderer is not None:
                renderer.close()
            self._answer_pending()

    def _answer_pending(self) -> None:
        """Lockstep frames: a frame this thread will never render is answered, not left waiting."""
        with self.lock:
            due, self.pending = self.pending, None
        if due is not None:
            self._took(due.epoch, due.step)

    def _build(self, old: Any, scene_text: str) -> Any:
        """The renderer for the plant's scene (the plant's own MJCF: same ground, same seeded layout)."""
        from vasimov.model.mjcf import load_model
        from vasimov.model.render import GLUnavailableError, QposWriter, Renderer

        try:
            info = json.loads(scene_text)
            seed = info.get("seed")
            scene = parse_scene(str(info["name"]), seed=int(seed) if seed is not None else 0)
        except (ValueError, KeyError, TypeError, SceneError) as exc:
            self.log_limited("scene", f"camera: scene message refused: {exc}")
            return old
        if old is not None:
            old.close()
        try:
            renderer = Renderer.for_camera(load_model(scene=scene), self.spec)
        except GLUnavailableError as exc:
            # the log line before the flag: whoever sees the error on the stats topic finds it in the log too
            self.get_logger().error(f"camera: cannot render, the camera topics stay silent: {exc}")
            self.gl_error = str(exc)
            return None
        self.writer = QposWriter(renderer.model)
        self.joint_slots = self.writer.slots(joints.SIM_NAMES)
        self.scene_name = scene.name
        self.ready = True
        self.get_logger().info(f"camera: {self.spec.width}x{self.spec.height} at {self.spec.rate_hz:g} Hz, "
                               f"vfov {self.spec.vfov_deg:g} deg (fx = fy = {self.intr.fx:.2f} px), scene "
                               f"{scene.name}, GL {self.backend}")
        return renderer

    def _frame(self, renderer: Any, due: Due) -> None:
        w = self.watchers()
        want_color, want_jpeg, want_depth = w["color"] > 0, w["compressed"] > 0, w["depth"] > 0
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            self.writer.write(renderer.data.qpos, due.base_pos, due.base_quat, self.joint_slots, due.q)
        except ValueError as exc:
            self.log_limited("state", f"camera: state refused: {exc}")
            return
        if want_color or want_jpeg or want_depth:
            renderer.forward()
            frame = renderer.render(depth=True)  # one pass: color and z-buffer together
            self.counts["renders"] += 1
            self.counts["render_ms_total"] += (time.perf_counter() - t0) * 1e3
            self.counts["render_cpu_ms_total"] += (time.thread_time() - c0) * 1e3
            stamp = to_stamp(due.time, None)
            if want_color or want_jpeg:
                rgb = frame.rgb.copy()
                rgb[np.isnan(frame.depth)] = SKY_RGB
                if want_color:
                    self.pub_color.publish(self._image(stamp, "rgb8", rgb, 3))
                    self.counts["published_color"] += 1
                if want_jpeg:
                    self.pub_compressed.publish(self._jpeg(stamp, rgb))
                    self.counts["published_compressed"] += 1
            if want_depth:
                self.pub_depth.publish(self._image(stamp, "32FC1", np.ascontiguousarray(frame.depth,
                                                                                         dtype="<f4"), 4))
                self.counts["published_depth"] += 1
        else:
            stamp = to_stamp(due.time, None)
        if w["color_info"]:
            self.pub_color_info.publish(self._info(stamp))
        if w["depth_info"]:
            self.pub_depth_info.publish(self._info(stamp))

    def _header(self, msg: Any, stamp: Any) -> Any:
        msg.header.stamp = stamp
        msg.header.frame_id = HEAD_OPTICAL_FRAME
        return msg

    def _image(self, stamp: Any, encoding: str, pixels: np.ndarray, bytes_per_px_channel: int) -> Image:
        msg = self._header(Image(), stamp)
        msg.height, msg.width = int(pixels.shape[0]), int(pixels.shape[1])
        msg.encoding = encoding
        msg.is_bigendian = 0
        msg.step = msg.width * (pixels.shape[2] if pixels.ndim == 3 else 1) * pixels.itemsize
        msg.data = pixels.tobytes()
        return msg

    def _jpeg(self, stamp: Any, rgb: np.ndarray) -> CompressedImage:
        from PIL import Image as PILImage

        buf = io.BytesIO()
        PILImage.fromarray(rgb).save(buf, format="JPEG", quality=int(self.p["jpeg_quality"]))
        msg = self._header(CompressedImage(), stamp)
        msg.format = "jpeg"
        msg.data = buf.getvalue()
        return msg

    def _info(self, stamp: Any) -> CameraInfo:
        msg = self._header(CameraInfo(), stamp)
        i = self.intr
        msg.height, msg.width = i.height, i.width
        msg.distortion_model = "plumb_bob"
        msg.d = [0.0] * 5
        msg.k = i.k
        msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
        msg.p = i.p
        return msg

    def close(self) -> None:
        with self.lock:
            self.stopping = True
            self.lock.notify_all()
        if self.thread is not None:
            self.thread.join(timeout=2.0)


def main(args: list[str] | None = None) -> int:
    return run_node("camera", CameraNode, args, config_errors=(ValueError, OSError))


if __name__ == "__main__":
    sys.exit(main())
