"""The Foxglove bridge's channels: every ROS topic of the graph as a Foxglove channel, and sim time.

* Every topic is advertised with its ROS 2 definition (``cdr`` / ``ros2msg``, ``foxglove_schemas``) and found again
  every ``discovery_period``. The bridge subscribes to a topic only while a client subscribes to its channel, with
  ``raw=True``, and forwards the CDR bytes untouched, logged at their simulation time (the message's own leading
  stamp when it is sim time, else the latest ``/clock``). Latched topics (``/robot_description``) are re-sent to
  each new subscriber.
* Sim time from ``/clock`` is broadcast on the ``time`` capability, so the app's clock is the simulation's. With no
  client watching anything the bridge reads nothing at all (not even ``/clock``).

Threads: the SDK's threads only note who watches what (`client_subscribed`) and wake the executor, which changes
subscriptions (`reconcile`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import foxglove
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.subscription import Subscription
from rosgraph_msgs.msg import Clock

from vasimov.ros import qos, topics
from vasimov.ros.message_types import MessageTypeError, message_class
from vasimov_bridge import foxglove_schemas

# a message stamp within this of the latest /clock is taken as its sim time (others are wall-clock stamps)
SIM_STAMP_WINDOW_NS = 2_000_000_000
# ROS-side queue per bridged topic: 0.25 s of a 200 Hz topic rides out scheduling hiccups of this process; a longer
# stall drops the oldest here, in the bridge, never in the publisher
READER_DEPTH = 50
# Images (sensor_msgs Image/CompressedImage): newest wins. A frame is 10-300 kB; queueing 50 of them for a slow
# process would only deliver stale pictures late, so the bridge's reader keeps one, and the SDK's per-client queue
# (message_backlog_size) drops a slow client's oldest data
IMAGE_TYPES = frozenset({"sensor_msgs/msg/Image", "sensor_msgs/msg/CompressedImage"})
IMAGE_READER_DEPTH = 1


def subscription_qos(publisher_qos: list[QoSProfile], ros_type: str = "") -> QoSProfile:
    """A reader every publisher of the topic matches. Latched topics (every publisher transient-local): a reliable,
    transient-local reader of depth 1, so a late viewer still gets the robot description. Everything else: best
    effort, because a viewer may miss a sample but must never make a publisher keep and resend samples for it
    (reliable readers cost the publishing node acknowledgements on every message). Keep-last keeps any backlog on
    our side bounded."""
    latched = bool(publisher_qos) and all(p.durability == DurabilityPolicy.TRANSIENT_LOCAL for p in publisher_qos)
    reliable = latched and all(p.reliability == ReliabilityPolicy.RELIABLE for p in publisher_qos)
    depth = 1 if latched else IMAGE_READER_DEPTH if ros_type in IMAGE_TYPES else READER_DEPTH
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE)


@dataclass
class Bridged:
    """One ROS topic advertised as a Foxglove channel."""

    topic: str
    ros_type: str
    msg_class: type
    channel: foxglove.Channel
    clients: set[int] = field(default_factory=set)  # Foxglove clients subscribed (written by SDK threads)
    served: set[int] = field(default_factory=set)  # clients the executor has accounted for
    subscription: Subscription | None = None
    stamped: bool = False  # the message starts with a builtin_interfaces/Time (its own sim time)
    latched: bool = False
    last: bytes | None = None  # latest message of a latched topic, for clients that subscribe later
    forwarded: int = 0


class TopicBridge:
    """Channels for the graph's topics, the ROS subscriptions behind the watched ones, and the time broadcast."""

    def __init__(self, node: Any, fox_context: foxglove.Context, tf: Any, own_channels: tuple[str, ...],
                 scene: Any = None) -> None:
        self.node = node  # graph queries, subscriptions, p, count, get_logger, server, wake
        self.fox = fox_context
        self.tf = tf  # foxglove_tf.TfPublisher: its channel is ours to watch, its inputs its own
        self.scene = scene  # foxglove_scene.ScenePublisher: re-logs the scene for each new subscriber
        self.own_channels = own_channels
        self.loader = foxglove_schemas.MsgFileLoader()
        self.lock = threading.Lock()  # the tables below are written by SDK threads too
        self.bridged: dict[str, Bridged] = {}
        self.by_channel: dict[int, Bridged] = {}
        self.unbridgeable: dict[str, str] = {}  # topic -> why it is not advertised (logged once)
        self.tf_clients: set[int] = set()
        self.sim_ns = 0  # latest /clock; 0 (the simulation's origin) until the first one arrives
        self.last_time_broadcast: int | None = None
        self.clock_sub: Subscription | None = None  # /clock only while some client watches something

    # -- time ----------------------------------------------------------------------------------------------------
    def on_clock(self, data: bytes) -> None:
        """Raw /clock: rosgraph_msgs/Clock is one builtin_interfaces/Time, read straight from the CDR."""
        ns = foxglove_schemas.cdr_leading_stamp_ns(data)
        if ns is None:
            return  # t = 0 (nothing to tell a client) or not a Clock
        self.sim_ns = ns
        last = self.last_time_broadcast
        if last is None or ns < last or ns - last >= 1e9 / self.node.p["time_rate_hz"] - 1:
            self.last_time_broadcast = ns
            self.node.server.broadcast_time(ns)

    # -- topics --------------------------------------------------------------------------------------------------
    def discover(self) -> None:
        """Advertise new topics, retire vanished ones."""
        present: dict[str, list[str]] = dict(self.node.get_topic_names_and_types())
        for topic, types in present.items():
            if topic in self.bridged or topic in self.unbridgeable or self._only_ours(topic):
                continue  # a topic only this bridge uses is looked at again next scan: others may join it
            why = self._permanent_skip(topic, types)
            if why is None:
                why = self._advertise(topic, types[0])
            if why is not None:
                self.unbridgeable[topic] = why
                self.node.count("topics_not_bridged")
                self.node.get_logger().warning(f"not bridging {topic}: {why}")
        for topic in [t for t in self.bridged if t not in present]:
            self._retire(topic)
        for topic in [t for t in self.unbridgeable if t not in present]:
            del self.unbridgeable[topic]  # may come back with another type

    def _only_ours(self, topic: str) -> bool:
        n = self.node
        endpoints = n.get_publishers_info_by_topic(topic) + n.get_subscriptions_info_by_topic(topic)
        return bool(endpoints) and all(e.node_name == n.get_name() and e.node_namespace == n.get_namespace()
                                       for e in endpoints)

    def _permanent_skip(self, topic: str, types: list[str]) -> str | None:
        """Why a topic can never be bridged as it is (until it leaves the graph), or None."""
        if topic in self.own_channels:
            return "the bridge's own channel has this name"
        if len(types) != 1:
            return f"published with several types {types}"
        return None

    def _advertise(self, topic: str, ros_type: str) -> str | None:
        try:
            text = foxglove_schemas.ros2msg_schema(ros_type, self.loader)
            stamped = foxglove_schemas.leads_with_stamp(ros_type, self.loader)
            msg_class = message_class(ros_type)
        except (foxglove_schemas.SchemaError, MessageTypeError) as exc:
            return f"no usable definition of {ros_type}: {exc}"
        schema = foxglove.Schema(name=foxglove_schemas.schema_name(ros_type),
                                 encoding=foxglove_schemas.SCHEMA_ENCODING, data=text.encode())
        channel = foxglove.Channel(topic, schema=schema, message_encoding=foxglove_schemas.MESSAGE_ENCODING,
                                   context=self.fox)
        b = Bridged(topic, ros_type, msg_class, channel, stamped=stamped)
        with self.lock:
            self.bridged[topic] = b
            self.by_channel[channel.id()] = b
        self.node.get_logger().debug(f"advertised {topic} ({ros_type})")
        return None

    def _retire(self, topic: str) -> None:
        with self.lock:
            b = self.bridged.pop(topic)
            self.by_channel.pop(b.channel.id(), None)
        if b.subscription is not None:
            self.node.destroy_subscription(b.subscription)
        b.channel.close()
        self.node.get_logger().info(f"{topic} left the graph; channel closed")

    def client_subscribed(self, client: int, channel_id: int, on: bool) -> None:
        """SDK thread: note who wants what, then let the executor change subscriptions."""
        with self.lock:
            if channel_id == self.tf.channel.id():
                (self.tf_clients.add if on else self.tf_clients.discard)(client)
            elif self.scene is not None and channel_id == self.scene.channel.id():
                (self.scene.clients.add if on else self.scene.clients.discard)(client)
            else:
                b = self.by_channel.get(channel_id)
                if b is not None:
                    (b.clients.add if on else b.clients.discard)(client)
        self.node.wake.trigger()

    def reconcile(self) -> None:
        """Executor: subscribe to exactly the topics some client watches; re-send latched data to newcomers."""
        n = self.node
        with self.lock:
            plan = [(b, set(b.clients)) for b in self.bridged.values()]
            want_tf = bool(self.tf_clients)
            scene_clients = set(self.scene.clients) if self.scene is not None else set()
        watched = want_tf or any(clients for _, clients in plan)
        # sim time costs a callback per physics step (thousands per second in lockstep): only for an audience
        if watched and self.clock_sub is None:
            self.clock_sub = n.create_subscription(Clock, topics.CLOCK, self.on_clock, qos.CLOCK, raw=True)
        elif not watched and self.clock_sub is not None:
            n.destroy_subscription(self.clock_sub)
            self.clock_sub = None
            self.last_time_broadcast = None
        for b, clients in plan:
            if clients and b.subscription is None:
                infos = n.get_publishers_info_by_topic(b.topic)
                profile = subscription_qos([i.qos_profile for i in infos], b.ros_type)
                b.latched = profile.durability == DurabilityPolicy.TRANSIENT_LOCAL
                b.subscription = n.create_subscription(
                    b.msg_class, b.topic, lambda data, b=b: self.forward(b, data), profile, raw=True)
                b.served = set(clients)
            elif not clients and b.subscription is not None:
                n.destroy_subscription(b.subscription)
                b.subscription = None
                b.last = None
                b.served = set()
            elif clients:
                newcomers = clients - b.served
                if newcomers and b.latched and b.last is not None:
                    b.channel.log(b.last, log_time=self.sim_ns)
                b.served = set(clients)
        self.tf.watch(want_tf)
        if self.scene is not None:
            self.scene.reconcile(scene_clients)

    def forward(self, b: Bridged, data: bytes) -> None:
        """The raw CDR bytes as the publisher sent them, logged at their simulation time: the message's own
        leading stamp when it has one that is sim time (rosout and parameter events carry wall time), else the
        latest /clock."""
        log_time = self.sim_ns
        if b.stamped:
            stamp = foxglove_schemas.cdr_leading_stamp_ns(data)
            if stamp is not None and abs(stamp - log_time) <= SIM_STAMP_WINDOW_NS:
                log_time = stamp
        b.channel.log(data, log_time=log_time)
        b.forwarded += 1
        if b.latched:
            b.last = data

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {"channels": len(self.bridged),
                    "ros_subscriptions": sorted(t for t, b in self.bridged.items() if b.subscription is not None),
                    "forwarded": {t: b.forwarded for t, b in self.bridged.items() if b.forwarded},
                    "not_bridged": dict(self.unbridgeable)}
