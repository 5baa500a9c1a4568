"""The recorder node: every topic of the graph into a rosbag2 directory (metadata.yaml + MCAP) that `ros2 bag` reads.

What it does, and why:

* **Discovery** every ``discovery_period``: each topic with at least one publisher gets a ``raw=True``
  subscription (the bytes on the wire are exact CDR; ``serialize_message`` would add 8 bytes rosbags refuses) with a
  QoS matching its publishers (``introspect.adapted_qos``). A topic whose type is unknown to this environment is
  reported once and skipped. ``/vasimov/provenance`` is the recorder's own: published latched and written directly.
* **Lockstep** (``lockstep: true``): the plant starts stepping once every declared participant announced ready
  (``vasimov.lockstep_gate``); ``vasimov up --record`` declares the recorder as one. It subscribes to the tick topic
  *last*, after the ``expected_nodes`` are on the graph and every topic they publish is subscribed and matched, then
  announces ready, so the first physics step is already on its way into the bag. Undeclared (a standalone
  ``vasimov record``), its announcement is logged and ignored by the plant: it records from wherever the run is.
* **Time**: messages are logged at simulated time (``vasimov_tools.bag``: their own stamp, else the latest /clock).
* **Memory**: callbacks only enqueue into ``BagRecorder``'s bounded queue; a writer thread writes. Drops (queue
  full) and DDS-reported losses are counted per topic, logged at exit and stored in the bag's custom data.
* **Stop**: SIGINT/SIGTERM end recording cleanly: the node keeps taking what DDS already delivered for up to
  ``drain_time`` (the supervisor stops every node at once when a bounded run ends), then closes the bag so
  metadata.yaml is always written.

Why one file past 400 lines: one node whose parts (discovery, subscriptions, the bag writer, provenance) share the
writer's state; the bag format itself is `bag.py`.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import rclpy
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import GetParameters
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from vasimov_msgs.msg import Provenance

from vasimov.cpu_priority import renice_all_threads
from vasimov.graph_status import announce_started
from vasimov.large_buffers import unmap_large_buffers
from vasimov.realism import RealismError, parse_realism
from vasimov.realism import describe as realism_describe
from vasimov.ros import node_names, qos, topics
from vasimov.ros.batch_take import spin_once_batched
from vasimov.ros.lockstep import announce_ready, resolved
from vasimov.ros.message_types import MessageTypeError, message_class
from vasimov.ros.params import COMMON, OBSERVER_CPU_NICE, ParamSpec, declare
from vasimov.ros.spin import EXIT_CONFIG
from vasimov.scenes import Scene, SceneError, parse_scene
from vasimov.stop_signals import stop_on_signals
from vasimov_tools import bag
from vasimov_tools.introspect import adapted_qos, publisher_qos_flags

# `lockstep` (from COMMON) makes the recorder a lockstep participant: it subscribes to the tick topic only once the
# expected nodes' topics are all subscribed and matched, then announces ready (the plant must declare it).
PARAMS: tuple[ParamSpec, ...] = (
    *COMMON,
    ParamSpec("output", "", "Bag directory to create; it must not exist yet."),
    ParamSpec("expected_nodes", "", "Lockstep: comma-separated node names that must be on the graph first."),
    ParamSpec("settle_time", 0.5, "Lockstep: seconds the set of subscribed topics must stay unchanged before the "
              "recorder subscribes to the tick topic.", min=0.0, max=10.0),
    ParamSpec("wait_timeout", 30.0, "Lockstep: seconds to wait for the expected nodes before subscribing to the "
              "tick topic anyway (with a warning), so the graph never deadlocks on the recorder.", min=1.0, max=600.0),
    ParamSpec("discovery_period", 0.5, "Seconds between looks for new topics.", min=0.05, max=10.0),
    ParamSpec("queue_size", 20000, "Messages the writer queue holds before new ones are dropped (and counted).",
              min=100, max=10_000_000),
    ParamSpec("subscription_depth", 2000, "KEEP_LAST depth of each recording subscription (DDS-side buffer).",
              min=1, max=100_000),
    OBSERVER_CPU_NICE,
    ParamSpec("batch_period", 0.01, "Seconds the recorder lets messages gather in DDS between takes (fewer "
              "wake-ups at lockstep rates; the subscription depth must hold a period's worth).", min=0.0, max=0.5),
    ParamSpec("compression", "zstd", "MCAP chunk compression.", choices=("zstd", "none")),
    ParamSpec("exclude", "", "Regular expression; matching topics are not recorded ('' = record all)."),
    ParamSpec("camera_raw", False, "Record the camera's raw color (rgb8, 230 kB a frame at 320x240) and depth "
              "(32FC1, 307 kB) images too; by default a bag takes only the JPEG color image and the camera infos."),
    ParamSpec("drain_time", 2.0, "Seconds, after a stop request, to keep taking messages DDS already delivered.",
              min=0.0, max=60.0),
    ParamSpec("seed", -1, "Seed of the run for provenance; -1 = read the plant node's `seed` parameter.",
              min=-1, max=2**31 - 1),
    ParamSpec("policy", "", "Policy spec for provenance; '' = read the policy node's `backend` parameter."),
    ParamSpec("scene", "", "Scene for provenance (vasimov.scenes, NAME[+FRICTION]); '' = read the plant node's "
              "`scene` parameter (flat when it cannot be read)."),
    ParamSpec("realism", "", "Realism setting for provenance (vasimov.realism, PROFILE[,KEY=VALUE...]); '' = read "
              "the plant node's `realism` parameter (none when it cannot be read)."),
    ParamSpec("time_mode", "", "realtime or lockstep for provenance; '' = read the plant node's `lockstep`.",
              choices=("", "realtime", "lockstep")),
    ParamSpec("launch_file", "", "Launch file hashed into provenance ('' = the installed bringup.launch.yaml)."),
    ParamSpec("config_dir", "", "Directory whose *.yaml are hashed into provenance ('' = the installed config/)."),
)

#: the camera's raw images (any camera, any namespace): left out of a bag unless ``camera_raw``
RAW_CAMERA_IMAGE = re.compile(r"(^|/)camera/[^/]+/(color|depth)/image_raw$")
#: DDS-side depth of an image subscription: 2 s of 15 Hz frames, not `subscription_depth` frames of 300 kB each
IMAGE_SUBSCRIPTION_DEPTH = 30
IMAGE_TYPES = frozenset({"sensor_msgs/msg/Image", "sensor_msgs/msg/CompressedImage"})
POLICY_NODE = "policy"
UNKNOWN = "unknown"


# -- provenance (pure helpers) ----------------------------------------------------------------------------------------
def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def model_sha256(scene: Scene | None = None) -> str:
    """SHA-256 of the MJCF text the twin builds (``vasimov.model.mjcf.build_mjcf(scene=...)``, UTF-8): the robot
    and the ground of the run's scene (the default flat floor hashes as the bare model)."""
    from vasimov.model.mjcf import build_mjcf

    return sha256_bytes(build_mjcf(scene=scene).encode("utf-8"))


def config_files(config_dir: Path, launch_file: Path) -> list[Path]:
    """The files whose contents shape a run: every ``config/*.yaml`` (sorted by name) and the launch file."""
    return [*sorted(config_dir.glob("*.yaml")), launch_file]


def config_sha256(files: Sequence[Path]) -> str:
    """SHA-256 over, for each file in order, ``name NUL sha256(contents)``: a changed, added, removed or renamed
    file changes the hash; where the checkout lives does not. Raises OSError for a file that cannot be read."""
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode("utf-8") + b"\0" + hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def policy_sha256(spec: str) -> str:
    """SHA-256 of the policy file for a local ``.onnx`` spec; for the official pinned Hugging Face spec, the pinned
    checksum the policy node verifies the file against before loading it; '' for backends without a file
    (builtin, hold) and for other hub specs (the recorder never downloads)."""
    from vasimov_edge.policy.checkpoint import CheckpointError, is_local_spec, parse_hub_spec, sha256_file

    if not spec or spec in ("builtin", "hold", "zero"):
        return ""
    if is_local_spec(spec):
        path = Path(spec).expanduser()
        return sha256_file(path) if path.is_file() else ""
    try:
        return parse_hub_spec(spec).expected_sha256 or ""
    except CheckpointError:
        return ""


def git_state(repo: Path) -> tuple[str, bool | None]:
    """(``git rev-parse HEAD`` or 'unknown', whether the work tree has changes or None if unknown)."""
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=5, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN, None
    return (head or UNKNOWN), bool(status.strip())


@dataclass
class ProvenanceInfo:
    model_sha256: str
    config_sha256: str
    policy_backend: str
    policy_sha256: str
    git_commit: str
    seed: int
    time_mode: str
    vasimov_version: str

    def to_msg(self, stamp_ns: int) -> Provenance:
        m = Provenance()
        m.stamp.sec, m.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
        for k, v in asdict(self).items():
            setattr(m, k, v)
        return m

    def to_cdr(self, store: Any, stamp_ns: int) -> bytes:
        """CDR bytes via rosbags (exact, unlike rclpy's serialize_message) for writing into the bag."""
        sec, nsec = divmod(stamp_ns, 1_000_000_000)
        stamp = store.types["builtin_interfaces/msg/Time"](sec=sec, nanosec=nsec)
        msg = store.types["vasimov_msgs/msg/Provenance"](stamp=stamp, **asdict(self))
        return bytes(store.serialize_cdr(msg, "vasimov_msgs/msg/Provenance"))


def vasimov_version() -> str:
    try:
        return importlib.metadata.version("vasimov")
    except importlib.metadata.PackageNotFoundError:
        return UNKNOWN


# -- the node -------------------------------------------------------------------------------------------------------
class RecorderNode(Node):
    def __init__(self, **node_options: Any) -> None:
        """``node_options``: rclpy Node keywords (cli_args, ...), for a composed process (vasimov_tools.compose)."""
        super().__init__("recorder", **node_options)
        self.p = declare(self, PARAMS)
        unmap_large_buffers()  # MCAP chunks are ~1 MiB buffers made and freed once a second: no heap creep
        renice_all_threads(int(self.p["cpu_nice"]))  # DDS receive threads included
        if not self.p["output"]:
            raise ValueError("output is empty: give the bag directory to create (vasimov record DIR)")
        self.exclude = re.compile(self.p["exclude"]) if self.p["exclude"] else None
        self.expected = {n.strip().lstrip("/") for n in self.p["expected_nodes"].split(",") if n.strip()}
        self.store = bag.make_typestore()
        self.bag = bag.BagRecorder(Path(self.p["output"]).expanduser().resolve(), self.store,
                                   queue_size=self.p["queue_size"], compression=self.p["compression"])
        self.subs: dict[str, Any] = {}
        self.skipped: dict[str, str] = {}  # topic -> why it is not recorded (reported once)
        self.lost: Counter[str] = Counter()  # DDS-reported lost samples per topic
        self.gate_open = not self.p["lockstep"]
        self.t_start = time.monotonic()
        self.topics_changed = time.monotonic()
        self.last_rx = time.monotonic()
        self.provenance: ProvenanceInfo | None = None
        self.provenance_notes: dict[str, str] = {}
        self.scene: Scene = parse_scene("")
        self.realism: dict[str, Any] = realism_describe(parse_realism(""))
        self.pub_provenance = self.create_publisher(Provenance, topics.PROVENANCE, qos.LATCHED)
        self.create_timer(self.p["discovery_period"], self.discover)
        role = "lockstep participant" if not self.gate_open else "joining the graph"
        self.get_logger().info(f"recording to {self.bag.path} ({role}, {self.p['compression']} chunks, queue "
                               f"{self.p['queue_size']})")

    # -- start-up ----------------------------------------------------------------------------------------------------
    def start(self, executor: SingleThreadedExecutor) -> None:
        """Work out provenance (asking the graph for what the parameters left open), publish it latched, write it
        first into the bag, then look at the graph once."""
        self.provenance = self._provenance(executor)
        stamp = self.bag.clock_ns or 0
        handle = self.bag.add_topic(topics.PROVENANCE, "vasimov_msgs/msg/Provenance",
                                    [bag.qos_from_endpoint(True, True)])
        self.bag.write_direct(handle, stamp, self.provenance.to_cdr(self.store, stamp))
        self.pub_provenance.publish(self.provenance.to_msg(stamp))
        custom = {f"vasimov.provenance.{k}": str(v) for k, v in asdict(self.provenance).items()}
        custom.update({f"vasimov.provenance_note.{k}": v for k, v in self.provenance_notes.items()})
        custom["vasimov.provenance.scene"] = json.dumps(self.scene.describe())
        custom["vasimov.provenance.realism"] = json.dumps(self.realism)
        custom["vasimov.timestamps"] = "simulated time (message stamp, else latest /clock)"
        for k, v in custom.items():
            self.bag.writer.set_custom_data(k, v)
        p = self.provenance
        self.get_logger().info(f"provenance: model {p.model_sha256[:12]}, config {p.config_sha256[:12]}, policy "
                               f"{p.policy_backend!r} {p.policy_sha256[:12] or '(no file)'}, git {p.git_commit[:12]}, "
                               f"seed {p.seed}, {p.time_mode}, scene {self.scene.name}")
        self.discover()

    def _provenance(self, executor: SingleThreadedExecutor) -> ProvenanceInfo:
        from vasimov_tools import launch_file as lf

        share = lf.share_directory("vasimov")
        launch = Path(self.p["launch_file"] or share / "launch" / "bringup.launch.yaml")
        config_dir = Path(self.p["config_dir"] or share / "config")
        try:
            config = config_sha256(config_files(config_dir, launch))
        except OSError as exc:
            config = UNKNOWN
            self.provenance_notes["config_sha256"] = f"cannot read: {exc}"
        seed, policy, mode = self.p["seed"], self.p["policy"], self.p["time_mode"]
        scene_text = self.p["scene"]
        realism_text = self.p["realism"]
        if seed < 0 or not mode or not scene_text or not realism_text:
            got = self._ask(executor, node_names.PLANT, ["seed", "lockstep", "scene", "realism"])
            if seed < 0:
                seed = got.get("seed", -1)
            if not scene_text:
                scene_text = str(got.get("scene", ""))
            if not realism_text:
                realism_text = str(got.get("realism", ""))
            if not mode and "lockstep" in got:
                mode = "lockstep" if got["lockstep"] else "realtime"
        if not policy:
            policy = str(self._ask(executor, POLICY_NODE, ["backend"]).get("backend", ""))
        if seed < 0:
            self.provenance_notes["seed"] = "unknown: not given and the plant's parameter could not be read"
            self.get_logger().warning("provenance: seed unknown (no plant parameter service answered); "
                                      "the bag says seed 0 with a note in its custom data")
            seed = 0
        try:
            self.scene = parse_scene(scene_text, seed=int(seed))
        except SceneError as exc:
            self.provenance_notes["scene"] = f"unreadable ({exc}); recorded as flat"
            self.scene = parse_scene("", seed=int(seed))
        try:  # the draws follow from the setting and the seed: both are in the provenance
            self.realism = realism_describe(parse_realism(realism_text), realism_text)
        except RealismError as exc:
            self.provenance_notes["realism"] = f"unreadable ({exc}); recorded as none"
        head, dirty = git_state(Path(__file__).resolve().parent.parent)
        if dirty:
            self.provenance_notes["git_commit"] = "work tree has uncommitted changes"
        return ProvenanceInfo(model_sha256=model_sha256(self.scene), config_sha256=config,
                              policy_backend=policy or UNKNOWN, policy_sha256=policy_sha256(policy),
                              git_commit=head, seed=int(seed),
                              time_mode=mode or UNKNOWN, vasimov_version=vasimov_version())

    def _ask(self, executor: SingleThreadedExecutor, node: str, names: list[str], timeout: float = 10.0) -> dict:
        """Read parameters of a running node (standalone recording: the launch arguments are not ours to know).
        Bounded at 10 s: on a busy machine discovering the node's parameter service alone took over 3 s (the bag then
        said seed 0); a recording that starts a few seconds later beats one whose provenance is wrong."""
        client = self.create_client(GetParameters, f"/{node}/get_parameters")
        try:
            if not client.wait_for_service(timeout_sec=timeout):
                return {}
            future = client.call_async(GetParameters.Request(names=names))
            executor.spin_until_future_complete(future, timeout_sec=timeout)
            if not future.done() or future.result() is None:
                return {}
            out: dict[str, Any] = {}
            for name, v in zip(names, future.result().values, strict=False):
                if v.type == ParameterType.PARAMETER_INTEGER:
                    out[name] = v.integer_value
                elif v.type == ParameterType.PARAMETER_BOOL:
                    out[name] = v.bool_value
                elif v.type == ParameterType.PARAMETER_STRING:
                    out[name] = v.string_value
            return out
        finally:
            self.destroy_client(client)

    # -- discovery ---------------------------------------------------------------------------------------------------
    def discover(self) -> None:
        for topic, types in self.get_topic_names_and_types():
            if topic in self.subs or topic in self.skipped or topic == resolved(self, topics.PROVENANCE):
                continue
            if topic == resolved(self, topics.PLANT_TICK) and not self.gate_open:
                continue
            if self.exclude is not None and self.exclude.search(topic):
                self._skip(topic, f"matches exclude {self.exclude.pattern!r}", quiet=True)
                continue
            if not self.p["camera_raw"] and RAW_CAMERA_IMAGE.search(topic):
                self._skip(topic, "raw camera image (record it with camera_raw:=true, vasimov record --camera-raw)",
                           quiet=True)
                continue
            if self.count_publishers(topic) == 0:
                continue  # nothing to record (yet); QoS is chosen from the publishers
            self._subscribe(topic, types)
        if not self.gate_open:
            self._check_gate()

    def _skip(self, topic: str, why: str, quiet: bool = False) -> None:
        self.skipped[topic] = why
        if not quiet:
            self.get_logger().error(f"not recording {topic}: {why}")

    def _depth(self, msgtype: str) -> int:
        depth = int(self.p["subscription_depth"])
        return min(depth, IMAGE_SUBSCRIPTION_DEPTH) if msgtype in IMAGE_TYPES else depth

    def _subscribe(self, topic: str, types: Sequence[str]) -> None:
        if len(types) > 1:
            self.get_logger().warning(f"{topic} is published with several types {list(types)}; recording {types[0]}")
        msgtype = types[0]
        try:
            cls = message_class(msgtype)
            offered = [bag.qos_from_endpoint(r, t) for r, t in publisher_qos_flags(self, topic)]
            handle = self.bag.add_topic(topic, msgtype, offered)
        except (MessageTypeError, bag.BagError) as exc:
            self._skip(topic, str(exc))
            return
        is_clock = topic == resolved(self, topics.CLOCK)

        def on_raw(raw: bytes) -> None:
            self.last_rx = time.monotonic()
            if is_clock:
                ns = bag.cdr_stamp_ns(raw)
                if ns is not None:
                    self.bag.set_clock(ns)
            self.bag.offer(handle, raw)

        def on_lost(info: Any) -> None:
            self.lost[topic] += int(getattr(info, "total_count_change", 0))

        self.subs[topic] = self.create_subscription(
            cls, topic, on_raw, adapted_qos(self, topic, self._depth(msgtype)), raw=True,
            event_callbacks=SubscriptionEventCallbacks(message_lost=on_lost))
        self.topics_changed = time.monotonic()

    def _check_gate(self) -> None:
        """Lockstep: subscribe to the tick topic once everything else is matched (or the wait timed out)."""
        waited = time.monotonic() - self.t_start
        present = set(self.get_node_names())
        missing = sorted(self.expected - present)
        unmatched = sorted(t for t, s in self.subs.items() if s.get_publisher_count() < self.count_publishers(t))
        settled = time.monotonic() - self.topics_changed >= self.p["settle_time"]
        tick = resolved(self, topics.PLANT_TICK)  # its name on the graph (namespace and remaps applied)
        tick_up = self.count_publishers(tick) > 0
        if not missing and not unmatched and settled and tick_up:
            reason = f"{len(self.subs)} topics subscribed and matched after {waited:.1f} s"
        elif waited > self.p["wait_timeout"]:
            reason = (f"TIMED OUT after {waited:.0f} s (missing nodes {missing}, unmatched topics {unmatched}); "
                      "their first messages may be missing from the bag")
        else:
            return
        self.gate_open = True
        types = dict(self.get_topic_names_and_types()).get(tick, ["vasimov_msgs/msg/PlantState"])
        self._subscribe(tick, types)
        announce_ready(self)
        log = self.get_logger().warning if "TIMED OUT" in reason else self.get_logger().info
        log(f"lockstep: joining the tick ({reason})")

    # -- stop --------------------------------------------------------------------------------------------------------
    def drain(self, executor: SingleThreadedExecutor) -> None:
        """Take what DDS already delivered: spin until nothing arrived for 0.3 s, at most ``drain_time``."""
        deadline = time.monotonic() + self.p["drain_time"]
        while time.monotonic() < deadline and time.monotonic() - self.last_rx < 0.3:
            spin_once_batched(executor, self, 0.05)

    def close(self) -> bag.RecordSummary:
        if self.lost:
            self.bag.writer.set_custom_data("vasimov.dds_lost", json.dumps(dict(self.lost), sort_keys=True))
        drops = {t.topic: t.dropped for t in (h.stats for h in self.bag.topics.values()) if t.dropped}
        self.bag.writer.set_custom_data("vasimov.dropped", json.dumps(drops, sort_keys=True))
        if self.skipped:
            self.bag.writer.set_custom_data("vasimov.not_recorded", json.dumps(self.skipped, sort_keys=True))
        summary = self.bag.close()
        summary.extra["dds_lost"] = dict(self.lost)
        text = summary.report()
        if self.lost:
            text += f"\n  DDS reported lost samples: {dict(self.lost)}"
        log = self.get_logger().warning if (summary.dropped or self.lost or summary.writer_error) else \
            self.get_logger().info
        log(text)
        return summary


def main(args: list[str] | None = None) -> int:
    """Record until SIGINT/SIGTERM; exit 0 with a closed bag, 1 if the writer failed, 2 on bad configuration."""
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node: RecorderNode | None = None
    code = 0
    with stop_on_signals(absorb_after_stop=True) as stop:
        try:
            node = RecorderNode()
            announce_started()
            executor = SingleThreadedExecutor()
            executor.add_node(node)
            node.start(executor)
            while not stop.is_set() and rclpy.ok():
                spin_once_batched(executor, node, 0.1)
                stop.wait(node.p["batch_period"])  # let messages gather: one wake-up per batch, not per message
            node.drain(executor)
        except ExternalShutdownException:
            pass
        except (ValueError, bag.BagError, re.error) as exc:
            print(f"recorder: cannot start: {exc}", file=sys.stderr)
            code = EXIT_CONFIG
        finally:
            if node is not None:
                summary = node.close()
                if summary.writer_error:
                    code = code or 1
                node.destroy_node()
            if rclpy.ok():
                rclpy.shutdown()
    return code


if __name__ == "__main__":
    sys.exit(main())
