"""The Foxglove bridge node: the whole graph, live, in Foxglove (app or any foxglove-sdk WebSocket client).

* Every ROS topic of the graph is advertised as a channel with its ROS 2 definition (``cdr`` / ``ros2msg``,
  ``foxglove_schemas``) and found again every ``discovery_period``. The node subscribes to a topic only while a
  client subscribes to its channel, with ``raw=True``, and forwards the CDR bytes untouched, logged at their
  simulation time (the message's own leading stamp when it is sim time, else the latest ``/clock``). Latched
  topics (``/robot_description``) are re-sent to each new subscriber. One exception: in lockstep the tick topic
  is not bridged, because the plant counts its readers to decide when to start.
* Sim time from ``/clock`` is broadcast on the ``time`` capability, so the app's clock is the simulation's.
  With no client watching anything the node reads nothing at all (not even ``/clock``).
* ``/tf`` (a Foxglove ``FrameTransforms`` channel; tf2_msgs is not installable here) carries every link of the
  robot from ``/joint_states`` and the base pose of the ground-truth odometry (``kinematics_tf``), so the URDF
  on ``/robot_description`` moves in the 3D panel.
* Clients may publish ``/cmd_vel`` and ``/vasimov/teleop/mode`` only (``foxglove_teleop``); anything else is
  refused, logged and counted. Validated commands enter the graph as source FOXGLOVE, at most
  ``teleop_max_commands_per_s`` per client (``inlet_gate``: newest velocity wins, DAMP never shed); a client's
  messages beyond ``teleop_max_messages_per_s`` are dropped before decoding. Both counted.
* The parameters capability lists every node's parameters (``/node.param``); read-only ones cannot be set, the
  others are checked against their descriptor before the node is asked (``foxglove_params``).
* Every Foxglove client connects, whichever name of protocol v1 it offers: the SDK's server accepts only
  ``foxglove.sdk.v1``, so it listens on a private loopback port behind a front (``foxglove_front``) that
  accepts ``foxglove.websocket.v1`` too (older Foxglove and Lichtblick builds, ``@foxglove/ws-protocol``) and
  relays bytes untouched (``legacy_subprotocol``).
* Nothing here waits on a client: the SDK keeps a bounded queue per client and drops that client's oldest data
  when it falls behind; the node counts the SDK's "outbox full" reports and publishes its counters on
  ``/vasimov/foxglove/stats``.

Threads: the executor runs every ROS callback; the SDK calls the listener from its own threads, which only read
snapshots, publish validated commands, and wake the executor (a guard condition) to change subscriptions.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import foxglove
import numpy as np
import rclpy
from foxglove.channels import FrameTransformsChannel
from foxglove.messages import FrameTransform, FrameTransforms, Quaternion, Timestamp, Vector3
from foxglove.websocket import Capability, ChannelView, Client, ClientChannel, StatusLevel
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import ParameterDescriptor, ParameterEvent, SetParametersResult
from rcl_interfaces.srv import DescribeParameters, GetParameters, ListParameters, SetParameters
from rclpy.client import Client as RosClient
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from rclpy.subscription import Subscription
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from vasimov_msgs.msg import RobotCommand as RobotCommandMsg

from vasimov.commands import DampCommand, Rejection, RobotCommand, VelocityCommand
from vasimov.cpu_priority import renice_all_threads
from vasimov.ros import qos, topics
from vasimov.ros.command_msgs import to_msg
from vasimov.ros.message_types import MessageTypeError, message_class
from vasimov.ros.params import COMMON, OBSERVER_CPU_NICE, ParamSpec, declare
from vasimov.ros.ratelog import RateLimitedLog
from vasimov.ros.spin import run_node
from vasimov_bridge import foxglove_params as fp
from vasimov_bridge import foxglove_schemas, foxglove_teleop
from vasimov_bridge.foxglove_front import SubprotocolFront
from vasimov_bridge.inlet_gate import CommandGate, GateConfig, SourceBudgets
from vasimov_bridge.kinematics_tf import KinematicTree, LinkTransform

PARAMS: tuple[ParamSpec, ...] = (
    *COMMON,
    ParamSpec("enabled", True, "Serve Foxglove. false (launch arg foxglove:=false) keeps this process idle: no "
              "socket, no subscriptions."),
    ParamSpec("host", "127.0.0.1", "Address the Foxglove WebSocket server binds (loopback by default)."),
    OBSERVER_CPU_NICE,
    ParamSpec("port", 8765, "TCP port of the Foxglove WebSocket server; 0 picks a free one (logged, and in the "
              "read-only parameter bound_port).", min=0, max=65535),
    ParamSpec("legacy_subprotocol", True, "Also let in clients that offer only the old name of protocol v1, "
              "foxglove.websocket.v1 (Lichtblick, @foxglove/ws-protocol, older Foxglove Studio): a front on host:port "
              "relays every client to the SDK's server on a private loopback port. false: the SDK's server listens "
              "on host:port itself and accepts foxglove.sdk.v1 only."),
    ParamSpec("message_backlog_size", 1024, "Messages the SDK queues per client before it drops that client's "
              "oldest data (a slow client never slows the graph).", min=16, max=1_000_000),
    ParamSpec("discovery_period", 1.0, "Wall seconds between scans of the graph for topics and nodes.",
              min=0.1, max=60.0),
    ParamSpec("parameter_refresh_period", 5.0, "Wall seconds between full re-reads of every node's parameters "
              "(changes in between arrive on /parameter_events).", min=0.5, max=600.0),
    ParamSpec("time_rate_hz", 50.0, "Sim-time broadcasts per simulated second on the time capability.",
              min=1.0, max=1000.0, read_only=False),
    ParamSpec("tf_rate_hz", 50.0, "Link transforms on /tf per simulated second.", min=1.0, max=1000.0,
              read_only=False),
    ParamSpec("teleop_max_linear", 1.0, "Largest |vx|, |vy| (m/s) a client's /cmd_vel may ask; more is refused "
              "(the firmware then clamps accepted ones to its own caps).", min=0.0, max=5.0, read_only=False),
    ParamSpec("teleop_max_angular", 2.0, "Largest |vyaw| (rad/s) a client's /cmd_vel may ask; more is refused.",
              min=0.0, max=10.0, read_only=False),
    ParamSpec("teleop_max_messages_per_s", 200.0, "Messages per second a client may have decoded on its teleop "
              "channels; beyond, they are dropped unread (counted).", min=1.0, max=100000.0),
    ParamSpec("teleop_max_commands_per_s", 50.0, "Teleop commands per second and client handed to the firmware; "
              "beyond, the newest waits and older ones are coalesced (DAMP never).", min=1.0, max=10000.0),
    ParamSpec("batch_period", 0.01, "Wall seconds the bridge lets ROS messages gather between takes: one wake-up "
              "per batch instead of per message keeps a viewer's CPU off the lockstep critical path (0 = per "
              "message).", min=0.0, max=0.5),
    ParamSpec("stats_period", 1.0, "Wall seconds between the bridge's counters on /vasimov/foxglove/stats.",
              min=0.1, max=60.0),
)
SPEC_BY_NAME = {s.name: s for s in PARAMS}

PORT_LOG = "foxglove server on {host}:{port}"  # tests and users look for this line
# a message stamp within this of the latest /clock is taken as its sim time (others are wall-clock stamps)
SIM_STAMP_WINDOW_NS = 2_000_000_000
SERVICE_TIMEOUT = 5.0  # s: a node that does not answer a parameter request in this time is asked again later
# ROS-side queue per bridged topic: 0.25 s of a 200 Hz topic rides out scheduling hiccups of this process; a longer
# stall drops the oldest here, in the bridge, never in the publisher
READER_DEPTH = 50
_DROP_REPORT = re.compile(r"outbox for client .* full")
_DROPPED_N = re.compile(r"(\d+) dropped since last warning")
_STATS_SCHEMA = {"type": "object", "title": "vasimov.FoxgloveBridgeStats"}


def _result(fut: Any) -> Any:
    """A service future's response, or None if the call failed or was cancelled (the node went away)."""
    try:
        return fut.result()
    except Exception:
        return None


def subscription_qos(publisher_qos: list[QoSProfile]) -> QoSProfile:
    """A reader every publisher of the topic matches. Latched topics (every publisher transient-local): a reliable,
    transient-local reader of depth 1, so a late viewer still gets the robot description. Everything else: best
    effort, because a viewer may miss a sample but must never make a publisher keep and resend samples for it
    (reliable readers cost the publishing node acknowledgements on every message). Keep-last keeps any backlog on
    our side bounded."""
    latched = bool(publisher_qos) and all(p.durability == DurabilityPolicy.TRANSIENT_LOCAL for p in publisher_qos)
    reliable = latched and all(p.reliability == ReliabilityPolicy.RELIABLE for p in publisher_qos)
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1 if latched else READER_DEPTH,
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


@dataclass
class NodeParams:
    """Parameter service clients of one remote node and the state of the read in flight."""

    list_client: RosClient
    get_client: RosClient
    describe_client: RosClient
    set_client: RosClient
    pending_since: float | None = None
    last_read: float = -1e9


class _SdkLogs(logging.Handler):
    """Receives the SDK's log records: counts its per-client "outbox full" (data dropped) reports and passes
    warnings and errors on to the node's logger."""

    def __init__(self, node: FoxgloveBridgeNode) -> None:
        super().__init__(level=logging.INFO)
        self.node = node

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
            if _DROP_REPORT.search(text):
                self.node.count("outbox_full_reports")
                m = _DROPPED_N.search(text)
                if m:
                    self.node.count("reported_dropped_messages", int(m.group(1)))
            if record.levelno >= logging.WARNING:
                self.node.log_limited(f"sdk:{record.name}", f"foxglove sdk: {text}")
        except Exception:  # a logging handler must never raise into the SDK's thread
            self.handleError(record)


class _Listener:
    """The SDK's callbacks (its threads). Each returns quickly: no ROS calls that wait, no locks held long."""

    def __init__(self, node: FoxgloveBridgeNode) -> None:
        self.node = node

    def on_subscribe(self, client: Client, channel: ChannelView) -> None:
        self.node.client_subscribed(client.id, channel.id, True)

    def on_unsubscribe(self, client: Client, channel: ChannelView) -> None:
        self.node.client_subscribed(client.id, channel.id, False)

    def on_client_advertise(self, client: Client, channel: ClientChannel) -> None:
        self.node.client_advertised(client.id, channel)

    def on_client_unadvertise(self, client: Client, client_channel_id: int) -> None:
        self.node.client_unadvertised(client.id, client_channel_id)

    def on_message_data(self, client: Client, client_channel_id: int, data: bytes) -> None:
        self.node.client_message(client.id, client_channel_id, data)

    def on_get_parameters(self, client: Client, param_names: list[str],
                          request_id: str | None = None) -> list[foxglove.Parameter]:
        return self.node.get_graph_parameters(param_names)

    def on_set_parameters(self, client: Client, parameters: list[foxglove.Parameter],
                          request_id: str | None = None) -> list[foxglove.Parameter]:
        return self.node.set_graph_parameters(parameters)

    def on_parameters_subscribe(self, param_names: list[str]) -> None:
        return None

    def on_parameters_unsubscribe(self, param_names: list[str]) -> None:
        return None


class FoxgloveBridgeNode(Node):
    def __init__(self) -> None:
        super().__init__("foxglove_bridge")
        self.p = declare(self, PARAMS)
        self.batch_period = float(self.p["batch_period"])  # read by run_node's spin loop
        renice_all_threads(int(self.p["cpu_nice"]))  # DDS receive threads included
        self.server: Any = None
        self.front: SubprotocolFront | None = None
        if not self.p["enabled"]:
            self.get_logger().info("foxglove bridge disabled (enabled:=false): no server, idle")
            return
        self.lock = threading.Lock()
        self.counters: Counter[str] = Counter()
        self.log_limited = RateLimitedLog(self.get_logger().warning)
        self.fqn = self.get_fully_qualified_name()
        self.loader = foxglove_schemas.MsgFileLoader()
        self.tree = KinematicTree()
        self.limits = foxglove_teleop.TeleopLimits(self.p["teleop_max_linear"], self.p["teleop_max_angular"])
        self.sim_ns = 0  # latest /clock; 0 (the simulation's origin) until the first one arrives
        self.last_time_broadcast: int | None = None
        self.last_tf_ns: int | None = None
        self.latest_joints: bytes | None = None  # raw CDR
        self.latest_odom: bytes | None = None  # raw CDR
        self.bridged: dict[str, Bridged] = {}
        self.by_channel: dict[int, Bridged] = {}
        self.unbridgeable: dict[str, str] = {}  # topic -> why it is not advertised (logged once)
        self.client_channels: dict[tuple[int, int], tuple[str, str]] = {}  # (client, channel) -> (topic, enc)
        self.refused_channels: dict[tuple[int, int], str] = {}
        self.tf_clients: set[int] = set()
        self.tf_subs: list[Subscription] = []
        self.params = fp.ParameterCache()
        self.node_params: dict[str, NodeParams] = {}

        self.pub_twist = self.create_publisher(Twist, topics.CMD_VEL, qos.COMMANDS)
        self.pub_cmd = self.create_publisher(RobotCommandMsg, topics.ROBOT_COMMAND, qos.COMMANDS)
        # teleop floods are shed here, before the graph: raw budget per client, then the command gate
        self.teleop_reads = SourceBudgets(self.p["teleop_max_messages_per_s"],
                                          max(1.0, self.p["teleop_max_messages_per_s"] / 4))
        self.teleop_gate = CommandGate(GateConfig(rate_per_source=self.p["teleop_max_commands_per_s"],
                                                  burst_per_source=max(1.0, self.p["teleop_max_commands_per_s"] / 5)),
                                       is_stop=lambda routed: isinstance(routed[1], DampCommand))
        self.teleop_lock = threading.Lock()  # SDK threads and the flush timer share the gate
        self.teleop_flush: threading.Timer | None = None
        self.clock_sub: Subscription | None = None  # /clock only while some client watches something
        self.create_subscription(ParameterEvent, "/parameter_events", self.on_parameter_event,
                                 QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        self.add_on_set_parameters_callback(self.on_set_own_parameters)
        self.wake = self.create_guard_condition(self.reconcile)

        self._sdk_logs = _SdkLogs(self)
        sdk_logger = logging.getLogger("foxglove")
        sdk_logger.addHandler(self._sdk_logs)
        sdk_logger.setLevel(logging.INFO)
        sdk_logger.propagate = False
        foxglove.set_log_level("INFO")

        self.fox = foxglove.Context()  # the node's own channels only, never the SDK's global context
        self.tf_channel = FrameTransformsChannel(topics.FOXGLOVE_TF, context=self.fox)
        self.stats_channel = foxglove.Channel(topics.FOXGLOVE_STATS, schema=_STATS_SCHEMA, context=self.fox)
        try:
            self._start_server()
        except (RuntimeError, OSError) as exc:  # the SDK's FoxgloveError or the front's: taken, unresolvable
            raise OSError(f"foxglove server cannot listen on {self.p['host']}:{self.p['port']}: {exc}") from exc
        self.port = self.front.port if self.front is not None else int(self.server.port)
        self.declare_parameter("bound_port", self.port, ParameterDescriptor(
            description="The TCP port the Foxglove server actually bound (differs from port when port is 0).",
            read_only=True))
        self.get_logger().info(PORT_LOG.format(host=self.p["host"], port=self.port))

        self.create_timer(self.p["discovery_period"], self.discover)
        self.create_timer(self.p["stats_period"], self.publish_stats)
        self.discover()

    def _start_server(self) -> None:
        """The SDK's server on host:port, or (legacy_subprotocol) on a free loopback port behind the front."""
        legacy = bool(self.p["legacy_subprotocol"])
        self.server = foxglove.start_server(
            name="vasimov",
            host="127.0.0.1" if legacy else self.p["host"],
            port=0 if legacy else self.p["port"],
            capabilities=[Capability.ClientPublish, Capability.Parameters, Capability.Time],
            server_listener=_Listener(self),
            supported_encodings=list(foxglove_teleop.CLIENT_ENCODINGS),
            context=self.fox,
            message_backlog_size=self.p["message_backlog_size"],
        )
        if legacy:
            try:
                self.front = SubprotocolFront(self.p["host"], self.p["port"], int(self.server.port),
                                              info=self.get_logger().info, warn=self.log_limited, count=self.count)
            except OSError:
                self.server.stop()
                self.server = None
                raise

    def close(self) -> None:
        if self.server is None:
            return
        if self.front is not None:
            self.front.stop()
            self.front = None
        self.server.stop()
        self.server = None
        logging.getLogger("foxglove").removeHandler(self._sdk_logs)
        if self.context.ok():  # after Ctrl-C the context is already gone and rosout with it
            self.get_logger().info(f"foxglove bridge stopped: {dict(self.counters)}")

    def count(self, key: str, n: int = 1) -> None:
        with self.lock:
            self.counters[key] += n

    # -- own parameters ------------------------------------------------------------------------------------------
    def on_set_own_parameters(self, params: list[rclpy.Parameter]) -> SetParametersResult:
        """Runtime changes to this node's writable parameters: checked against their spec, then applied."""
        for prm in params:
            spec = SPEC_BY_NAME.get(prm.name)
            if spec is None or spec.read_only:
                continue  # rclpy itself refuses read-only ones; others (use_sim_time) are rclpy's business
            problem = spec.validate(prm.value)
            if problem:
                return SetParametersResult(successful=False, reason=problem)
        for prm in params:
            spec = SPEC_BY_NAME.get(prm.name)
            if spec is not None and not spec.read_only:
                self.p[prm.name] = prm.value
        if any(prm.name.startswith("teleop_") for prm in params):
            self.limits = foxglove_teleop.TeleopLimits(self.p["teleop_max_linear"], self.p["teleop_max_angular"])
        return SetParametersResult(successful=True)

    # -- time ----------------------------------------------------------------------------------------------------
    def on_clock(self, data: bytes) -> None:
        """Raw /clock: rosgraph_msgs/Clock is one builtin_interfaces/Time, read straight from the CDR."""
        ns = foxglove_schemas.cdr_leading_stamp_ns(data)
        if ns is None:
            return  # t = 0 (nothing to tell a client) or not a Clock
        self.sim_ns = ns
        last = self.last_time_broadcast
        if last is None or ns < last or ns - last >= 1e9 / self.p["time_rate_hz"] - 1:
            self.last_time_broadcast = ns
            self.server.broadcast_time(ns)

    # -- topics --------------------------------------------------------------------------------------------------
    def discover(self) -> None:
        """Advertise new topics, retire vanished ones, keep track of nodes for the parameters capability."""
        present: dict[str, list[str]] = dict(self.get_topic_names_and_types())
        for topic, types in present.items():
            if topic in self.bridged or topic in self.unbridgeable or self._only_ours(topic):
                continue  # a topic only this bridge uses is looked at again next scan: others may join it
            why = self._permanent_skip(topic, types)
            if why is None:
                why = self._advertise(topic, types[0])
            if why is not None:
                self.unbridgeable[topic] = why
                self.count("topics_not_bridged")
                self.get_logger().warning(f"not bridging {topic}: {why}")
        for topic in [t for t in self.bridged if t not in present]:
            self._retire(topic)
        for topic in [t for t in self.unbridgeable if t not in present]:
            del self.unbridgeable[topic]  # may come back with another type
        self.refresh_parameters()

    def _only_ours(self, topic: str) -> bool:
        endpoints = self.get_publishers_info_by_topic(topic) + self.get_subscriptions_info_by_topic(topic)
        return bool(endpoints) and all(e.node_name == self.get_name() and e.node_namespace == self.get_namespace()
                                       for e in endpoints)

    def _permanent_skip(self, topic: str, types: list[str]) -> str | None:
        """Why a topic can never be bridged as it is (until it leaves the graph), or None."""
        if topic in (topics.FOXGLOVE_TF, topics.FOXGLOVE_STATS):
            return "the bridge's own channel has this name"
        if self.p["lockstep"] and topic == topics.PLANT_TICK:
            # the plant starts a lockstep run once enough readers match this topic: a viewer must not count as
            # one. /vasimov/plant/state carries the same states every physics step.
            return "in lockstep the tick topic is the plant's start gate; view /vasimov/plant/state instead"
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
        self.get_logger().debug(f"advertised {topic} ({ros_type})")
        return None

    def _retire(self, topic: str) -> None:
        with self.lock:
            b = self.bridged.pop(topic)
            self.by_channel.pop(b.channel.id(), None)
        if b.subscription is not None:
            self.destroy_subscription(b.subscription)
        b.channel.close()
        self.get_logger().info(f"{topic} left the graph; channel closed")

    def client_subscribed(self, client: int, channel_id: int, on: bool) -> None:
        """SDK thread: note who wants what, then let the executor change subscriptions."""
        with self.lock:
            if channel_id == self.tf_channel.id():
                (self.tf_clients.add if on else self.tf_clients.discard)(client)
            else:
                b = self.by_channel.get(channel_id)
                if b is not None:
                    (b.clients.add if on else b.clients.discard)(client)
        self.wake.trigger()

    def reconcile(self) -> None:
        """Executor: subscribe to exactly the topics some client watches; re-send latched data to newcomers."""
        with self.lock:
            plan = [(b, set(b.clients)) for b in self.bridged.values()]
            want_tf = bool(self.tf_clients)
        watched = want_tf or any(clients for _, clients in plan)
        # sim time costs a callback per physics step (thousands per second in lockstep): only for an audience
        if watched and self.clock_sub is None:
            self.clock_sub = self.create_subscription(Clock, topics.CLOCK, self.on_clock, qos.CLOCK, raw=True)
        elif not watched and self.clock_sub is not None:
            self.destroy_subscription(self.clock_sub)
            self.clock_sub = None
            self.last_time_broadcast = None
        for b, clients in plan:
            if clients and b.subscription is None:
                infos = self.get_publishers_info_by_topic(b.topic)
                profile = subscription_qos([i.qos_profile for i in infos])
                b.latched = profile.durability == DurabilityPolicy.TRANSIENT_LOCAL
                b.subscription = self.create_subscription(
                    b.msg_class, b.topic, lambda data, b=b: self.forward(b, data), profile, raw=True)
                b.served = set(clients)
            elif not clients and b.subscription is not None:
                self.destroy_subscription(b.subscription)
                b.subscription = None
                b.last = None
                b.served = set()
            elif clients:
                newcomers = clients - b.served
                if newcomers and b.latched and b.last is not None:
                    b.channel.log(b.last, log_time=self.sim_ns)
                b.served = set(clients)
        if want_tf and not self.tf_subs:
            self.tf_subs = [
                self.create_subscription(JointState, topics.JOINT_STATES, self.on_joint_states, qos.TELEMETRY,
                                         raw=True),
                self.create_subscription(Odometry, topics.ODOM_TRUTH, self.on_odom, qos.TELEMETRY, raw=True),
            ]
        elif not want_tf and self.tf_subs:
            for s in self.tf_subs:
                self.destroy_subscription(s)
            self.tf_subs = []
            self.latest_joints = self.latest_odom = None

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

    # -- /tf -------------------------------------------------------------------------------------------------------
    # Both arrive raw: only their leading stamps are read per message, and the pair is deserialized only when a
    # transform set is due (tf_rate_hz, a quarter of the physics rate by default).
    def on_joint_states(self, data: bytes) -> None:
        self.latest_joints = data
        self._try_tf()

    def on_odom(self, data: bytes) -> None:
        self.latest_odom = data
        self._try_tf()

    def _try_tf(self) -> None:
        """Publish when joint state and base pose of the same physics step are both in (the plant sends them
        back to back with one stamp), at most tf_rate_hz per simulated second."""
        js_raw, odom_raw = self.latest_joints, self.latest_odom
        if js_raw is None or odom_raw is None:
            return
        ns = foxglove_schemas.cdr_leading_stamp_ns(js_raw)
        if ns is None or ns != foxglove_schemas.cdr_leading_stamp_ns(odom_raw):
            return
        last = self.last_tf_ns
        if last is not None and last <= ns < last + 1e9 / self.p["tf_rate_hz"] - 1:
            return
        self.last_tf_ns = ns
        try:
            js = deserialize_message(js_raw, JointState)
            odom = deserialize_message(odom_raw, Odometry)
            if len(js.position) != len(js.name):
                raise ValueError(f"{len(js.name)} joint names but {len(js.position)} positions")
            q = np.asarray(js.position, dtype=float)[self.tree.order_for(js.name)]
            p, o = odom.pose.pose.position, odom.pose.pose.orientation
            links = self.tree.transforms(q, (p.x, p.y, p.z), (o.w, o.x, o.y, o.z))
        except ValueError as exc:
            self.count("tf_rejected")
            self.log_limited("tf", f"no /tf for this state: {exc}")
            return
        self.tf_channel.log(self._frame_transforms(links, js.header.stamp.sec, js.header.stamp.nanosec),
                            log_time=ns)
        self.count("tf_published")

    @staticmethod
    def _frame_transforms(links: list[LinkTransform], sec: int, nsec: int) -> FrameTransforms:
        stamp = Timestamp(sec, nsec)
        return FrameTransforms(transforms=[
            FrameTransform(timestamp=stamp, parent_frame_id=t.parent, child_frame_id=t.child,
                           translation=Vector3(x=t.translation[0], y=t.translation[1], z=t.translation[2]),
                           rotation=Quaternion(x=t.rotation_xyzw[0], y=t.rotation_xyzw[1], z=t.rotation_xyzw[2],
                                               w=t.rotation_xyzw[3]))
            for t in links])

    # -- client publish (SDK threads) -------------------------------------------------------------------------------
    def client_advertised(self, client: int, ch: ClientChannel) -> None:
        refusal = foxglove_teleop.check_advertisement(ch.topic, ch.encoding, ch.schema_name)
        with self.lock:
            if refusal is None:
                self.client_channels[(client, ch.id)] = (ch.topic, ch.encoding)
            else:
                self.refused_channels[(client, ch.id)] = f"{refusal.reason}: {refusal.detail}"
                self.counters[f"client_advertise_refused.{refusal.reason}"] += 1
        if refusal is None:
            self.get_logger().info(f"client {client} may publish {ch.topic} ({ch.encoding})")
        else:
            self._refuse(refusal, f"client {client} advertised {ch.topic!r}")

    def client_unadvertised(self, client: int, channel_id: int) -> None:
        with self.lock:
            self.client_channels.pop((client, channel_id), None)
            self.refused_channels.pop((client, channel_id), None)

    def client_message(self, client: int, channel_id: int, data: bytes) -> None:
        with self.lock:
            route = self.client_channels.get((client, channel_id))
            refused = self.refused_channels.get((client, channel_id))
            limits = self.limits
        if route is None:
            why = refused or f"channel {channel_id} was never advertised by client {client}"
            self.count("client_messages_refused.NOT_ALLOWED")
            self.log_limited("client_refused", f"client message refused: {why}")
            return
        topic, encoding = route
        now = time.monotonic()
        with self.teleop_lock:
            admitted = self.teleop_reads.take(client, now)
        if not admitted:
            self.count("client_messages_shed")
            self.log_limited("teleop_shed", f"client {client} sends more than "
                                            f"{self.p['teleop_max_messages_per_s']:g} messages/s: dropped unread")
            return
        cmd = foxglove_teleop.decode(topic, encoding, bytes(data), limits)
        if isinstance(cmd, Rejection):
            self.count(f"client_messages_refused.{cmd.reason}")
            self._refuse(cmd, f"client {client} on {topic}")
            return
        self.count("client_messages_accepted")
        with self.teleop_lock:
            before = self.teleop_gate.counters["coalesced"]
            out = self.teleop_gate.offer(client, (topic, cmd), now)
            coalesced = self.teleop_gate.counters["coalesced"] - before
        if coalesced:
            self.count("client_commands_coalesced", coalesced)
        for routed_topic, c in out:
            self._publish_command(routed_topic, c)
        self._schedule_teleop_flush()

    def _schedule_teleop_flush(self) -> None:
        """A waiting (coalesced) command leaves when its client's budget refills, even if nothing else arrives."""
        with self.teleop_lock:
            due = self.teleop_gate.next_due(time.monotonic())
            if due is None or self.teleop_flush is not None:
                return
            self.teleop_flush = threading.Timer(max(0.0, due - time.monotonic()), self._flush_teleop)
            self.teleop_flush.daemon = True
            self.teleop_flush.start()

    def _flush_teleop(self) -> None:
        with self.teleop_lock:
            self.teleop_flush = None
            out = self.teleop_gate.due(time.monotonic())
        for _client, (routed_topic, c) in out:
            self._publish_command(routed_topic, c)
        self._schedule_teleop_flush()

    def _publish_command(self, topic: str, cmd: RobotCommand) -> None:
        if topic == topics.CMD_VEL and isinstance(cmd, VelocityCommand):
            t = Twist()
            t.linear.x, t.linear.y, t.angular.z = float(cmd.vx), float(cmd.vy), float(cmd.vyaw)
            self.pub_twist.publish(t)
            return
        m = to_msg(cmd)
        m.stamp.sec, m.stamp.nanosec = divmod(self.sim_ns, 1_000_000_000)
        self.pub_cmd.publish(m)
        self.get_logger().info(f"teleop: {type(cmd).__name__} from Foxglove on {topic}")

    def _refuse(self, rejection: Rejection, what: str) -> None:
        text = f"{what} refused: {rejection.reason} {rejection.detail}"
        self.log_limited(f"refuse:{rejection.reason}", text)
        server = self.server
        if server is not None:
            server.publish_status(text, StatusLevel.Warning)

    # -- parameters ------------------------------------------------------------------------------------------------
    def _own_entries(self) -> list[fp.Entry]:
        names = sorted(self._parameters)
        descriptors = self.describe_parameters(names)
        return [fp.Entry(self.fqn, n, self._parameters[n].value, d) for n, d in zip(names, descriptors, strict=True)]

    def refresh_parameters(self) -> None:
        """Executor: re-read every node's parameters (asynchronously; answers arrive as callbacks)."""
        changed = self.params.replace_node(self.fqn, self._own_entries())
        nodes = {f"{ns.rstrip('/')}/{n}" for n, ns in self.get_node_names_and_namespaces()} - {self.fqn}
        for gone in [n for n in self.node_params if n not in nodes]:
            for c in (self.node_params[gone].list_client, self.node_params[gone].get_client,
                      self.node_params[gone].describe_client, self.node_params[gone].set_client):
                self.destroy_client(c)
            del self.node_params[gone]
            self.params.drop_node(gone)
        now = time.monotonic()
        for node in nodes:
            np_ = self.node_params.get(node)
            if np_ is None:
                np_ = self.node_params[node] = NodeParams(
                    self.create_client(ListParameters, f"{node}/list_parameters"),
                    self.create_client(GetParameters, f"{node}/get_parameters"),
                    self.create_client(DescribeParameters, f"{node}/describe_parameters"),
                    self.create_client(SetParameters, f"{node}/set_parameters"))
            if np_.pending_since is not None and now - np_.pending_since < SERVICE_TIMEOUT:
                continue
            if now - np_.last_read < self.p["parameter_refresh_period"] or not np_.list_client.service_is_ready():
                continue
            np_.pending_since = now
            fut = np_.list_client.call_async(ListParameters.Request())
            fut.add_done_callback(lambda f, node=node: self._on_listed(node, f))
        self._publish_parameter_values(changed)

    def _on_listed(self, node: str, fut: Any) -> None:
        np_ = self.node_params.get(node)
        listed = _result(fut)
        if np_ is None or listed is None:
            return
        names = list(listed.result.names)
        got: dict[str, Any] = {}

        def done(kind: str, f: Any) -> None:
            got[kind] = _result(f)
            if len(got) == 2:
                self._on_read(node, names, got["values"], got["descriptors"])

        fv = np_.get_client.call_async(GetParameters.Request(names=names))
        fv.add_done_callback(lambda f: done("values", f))
        fd = np_.describe_client.call_async(DescribeParameters.Request(names=names))
        fd.add_done_callback(lambda f: done("descriptors", f))

    def _on_read(self, node: str, names: list[str], values: Any, descriptors: Any) -> None:
        np_ = self.node_params.get(node)
        if np_ is None:
            return
        np_.pending_since = None
        np_.last_read = time.monotonic()
        if values is None or descriptors is None or len(values.values) != len(names) \
                or len(descriptors.descriptors) != len(names):
            self.count("parameter_read_failures")
            return
        entries = [fp.Entry(node, n, fp.from_ros(v), d)
                   for n, v, d in zip(names, values.values, descriptors.descriptors, strict=True)]
        self._publish_parameter_values(self.params.replace_node(node, entries))

    def on_parameter_event(self, ev: ParameterEvent) -> None:
        node = ev.node if ev.node.startswith("/") else f"/{ev.node}"
        changed = []
        for prm in [*ev.new_parameters, *ev.changed_parameters]:
            e = self.params.update_value(node, prm.name, fp.from_ros(prm.value))
            if e is not None:
                changed.append(e)
        if ev.new_parameters or ev.deleted_parameters:
            np_ = self.node_params.get(node)
            if np_ is not None:
                np_.last_read = -1e9  # re-read the node's list at the next scan
        self._publish_parameter_values(changed)

    def _publish_parameter_values(self, entries: list[fp.Entry]) -> None:
        if entries and self.server is not None:
            self.server.publish_parameter_values([e.to_foxglove() for e in entries])

    def _refuse_oversized(self, n_names: int) -> bool:
        """True (counted, logged once per period, one status) if a request names too many parameters."""
        problem = fp.request_too_large(n_names)
        if problem is None:
            return False
        self.count("parameter_request_too_large")
        self.log_limited("param:too_many", f"parameter request refused: {problem}")
        if self.server is not None:
            self.server.publish_status(problem, StatusLevel.Warning)
        return True

    def get_graph_parameters(self, names: list[str]) -> list[foxglove.Parameter]:
        """SDK thread: answered from the cache, never by waiting on a node."""
        if self._refuse_oversized(len(names)):
            return []
        return [e.to_foxglove() for e in self.params.select(names)]

    def set_graph_parameters(self, requested: list[foxglove.Parameter]) -> list[foxglove.Parameter]:
        """SDK thread: check each request; apply our own at once, send others' to their node (the new value
        comes back on /parameter_events). Answers with the values as they stand now. Refusals are counted one by
        one but reported once per request (one status, one rate-limited log line), so a request naming thousands
        of bad names cannot flood the log or the clients."""
        if self._refuse_oversized(len(requested)):
            return []
        out: list[foxglove.Parameter] = []
        problems: list[str] = []
        for prm in requested:
            entry = self.params.get(prm.name)
            value, problem = fp.validate_set(entry, prm.name, prm.get_value())
            if problem is None and entry is not None:
                problem = self._apply_set(entry, value)
            if problem is not None:
                self.count("parameter_set_refused")
                problems.append(problem)
            current = self.params.get(prm.name)
            out.append(current.to_foxglove() if current is not None else foxglove.Parameter(prm.name))
        if problems:
            text = problems[0] + (f" (and {len(problems) - 1} more refused in this request)" if len(problems) > 1
                                  else "")
            self.log_limited("param:refused", f"parameter set refused: {text}")
            if self.server is not None:
                self.server.publish_status(text, StatusLevel.Warning)
        return out

    def _apply_set(self, entry: fp.Entry, value: Any) -> str | None:
        if entry.node == self.fqn:
            result = self.set_parameters([rclpy.Parameter(entry.name, value=value)])[0]
            if not result.successful:
                return f"{entry.qname}: {result.reason}"
            self.params.update_value(entry.node, entry.name, value)
            self.count("parameter_set_accepted")
            return None
        np_ = self.node_params.get(entry.node)
        if np_ is None or not np_.set_client.service_is_ready():
            return f"{entry.qname}: {entry.node} does not answer parameter requests"
        req = SetParameters.Request(parameters=[
            rclpy.Parameter(entry.name, value=value).to_parameter_msg()])
        fut = np_.set_client.call_async(req)
        fut.add_done_callback(lambda f, q=entry.qname: self._on_remote_set(q, f))
        self.count("parameter_set_forwarded")
        return None

    def _on_remote_set(self, qname: str, fut: Any) -> None:
        res = _result(fut)
        if res is None or not res.results or not res.results[0].successful:
            reason = "no answer" if res is None or not res.results else res.results[0].reason
            text = f"{qname}: the node refused the new value: {reason}"
            self.count("parameter_set_refused")
            self.get_logger().warning(text)
            if self.server is not None:
                self.server.publish_status(text, StatusLevel.Warning)

    # -- stats -----------------------------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        with self.lock:
            counters = dict(self.counters)
            forwarded = {t: b.forwarded for t, b in self.bridged.items() if b.forwarded}
            subscribed = sorted(t for t, b in self.bridged.items() if b.subscription is not None)
            channels = len(self.bridged)
        return {"port": self.port, "sim_time": self.sim_ns * 1e-9, "channels": channels,
                "ros_subscriptions": subscribed, "forwarded": forwarded, "not_bridged": dict(self.unbridgeable),
                "counters": counters}

    def publish_stats(self) -> None:
        self.stats_channel.log(self.stats(), log_time=self.sim_ns)


def main(args: list[str] | None = None) -> int:
    return run_node("foxglove_bridge", FoxgloveBridgeNode, args, config_errors=(ValueError, OSError))


if __name__ == "__main__":
    sys.exit(main())
