"""The Foxglove bridge node: the whole graph, live, in Foxglove (app or any foxglove-sdk WebSocket client).

This file is the wiring; each job has its module: the channels and sim time (``foxglove_channels``), ``/tf``
(``foxglove_tf``), the teleop inlet (``foxglove_inlet``), the parameters capability (``foxglove_param_proxy``), and
the server with its front and the SDK glue (``foxglove_server``).

* Every ROS topic of the graph is advertised as a channel with its ROS 2 definition (``cdr`` / ``ros2msg``,
  ``foxglove_schemas``) and found again every ``discovery_period``. The node subscribes to a topic only while a
  client subscribes to its channel, with ``raw=True``, and forwards the CDR bytes untouched, logged at their
  simulation time (the message's own leading stamp when it is sim time, else the latest ``/clock``). Latched
  topics (``/robot_description``) are re-sent to each new subscriber. The tick topic too: reading it makes nobody
  a lockstep participant (``vasimov.lockstep_gate``).
* Sim time from ``/clock`` is broadcast on the ``time`` capability, so the app's clock is the simulation's.
  With no client watching anything the node reads nothing at all (not even ``/clock``).
* ``/vasimov/scene/entities`` (a Foxglove ``SceneUpdate`` channel, ``foxglove_scene``) draws the scene's ground
  (slopes, stairs, obstacles, rough ground) from the plant's latched ``/vasimov/scene``.
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

import sys
import threading
from collections import Counter
from typing import Any

import foxglove
import rclpy
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult

from vasimov.cpu_priority import renice_all_threads
from vasimov.ros import topics
from vasimov.ros.lean_node import LeanNode
from vasimov.ros.params import COMMON, OBSERVER_CPU_NICE, ParamSpec, declare
from vasimov.ros.ratelog import RateLimitedLog
from vasimov.ros.spin import run_node
from vasimov_bridge.foxglove_channels import TopicBridge
from vasimov_bridge.foxglove_front import SubprotocolFront
from vasimov_bridge.foxglove_inlet import TeleopInlet
from vasimov_bridge.foxglove_param_proxy import ParameterProxy
from vasimov_bridge.foxglove_scene import ScenePublisher
from vasimov_bridge.foxglove_server import Listener, SdkLogs, start_server
from vasimov_bridge.foxglove_tf import TfPublisher

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
_STATS_SCHEMA = {"type": "object", "title": "vasimov.FoxgloveBridgeStats"}


class FoxgloveBridgeNode(LeanNode):
    """A LeanNode (no default QoS-event handlers; the wait-loop executor, which serves its guard condition, timers,
    the parameter proxy's clients and futures): the classic executor's per-wake-up walk of every entity was most of
    the main thread's cost while a client watched."""

    def __init__(self, **node_options: Any) -> None:
        """``node_options``: rclpy Node keywords (cli_args, ...), for a composed process (vasimov_tools.compose)."""
        super().__init__("foxglove_bridge", **node_options)
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
        self.fox = foxglove.Context()  # the node's own channels only, never the SDK's global context
        self.tf = TfPublisher(self, self.fox)
        self.stats_channel = foxglove.Channel(topics.FOXGLOVE_STATS, schema=_STATS_SCHEMA, context=self.fox)
        self.scene = ScenePublisher(self, self.fox)
        self.topics = TopicBridge(self, self.fox, self.tf, own_channels=(topics.FOXGLOVE_TF, topics.FOXGLOVE_STATS,
                                                                         topics.FOXGLOVE_SCENE), scene=self.scene)
        self.inlet = TeleopInlet(self)
        self.param_proxy = ParameterProxy(self)
        self.add_on_set_parameters_callback(self.on_set_own_parameters)
        self.wake = self.create_guard_condition(self.topics.reconcile)

        self._sdk_logs = SdkLogs(self)
        self._sdk_logs.install()
        try:
            listener = Listener(self.topics, self.inlet, self.param_proxy)
            self.server, self.front = start_server(self.p, listener, self.fox, info=self.get_logger().info,
                                                   warn=self.log_limited, count=self.count)
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

    def close(self) -> None:
        if self.server is None:
            return
        if self.front is not None:
            self.front.stop()
            self.front = None
        self.server.stop()
        self.server = None
        self._sdk_logs.uninstall()
        if self.context.ok():  # after Ctrl-C the context is already gone and rosout with it
            self.get_logger().info(f"foxglove bridge stopped: {dict(self.counters)}")

    def count(self, key: str, n: int = 1) -> None:
        with self.lock:
            self.counters[key] += n

    def sim_ns(self) -> int:
        """The latest simulated time (ns) from /clock; 0 before the first one or while nobody watches."""
        return self.topics.sim_ns

    def discover(self) -> None:
        """Executor, every discovery_period: the graph's topics (channels) and nodes (parameters)."""
        self.topics.discover()
        self.param_proxy.refresh()

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
            self.inlet.set_limits(self.p["teleop_max_linear"], self.p["teleop_max_angular"])
        return SetParametersResult(successful=True)

    # -- stats -----------------------------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        with self.lock:
            counters = dict(self.counters)
        t = self.topics.stats()
        return {"port": self.port, "sim_time": self.topics.sim_ns * 1e-9, "channels": t["channels"],
                "ros_subscriptions": t["ros_subscriptions"], "forwarded": t["forwarded"],
                "not_bridged": t["not_bridged"], "counters": counters}

    def publish_stats(self) -> None:
        self.stats_channel.log(self.stats(), log_time=self.topics.sim_ns)


def main(args: list[str] | None = None) -> int:
    return run_node("foxglove_bridge", FoxgloveBridgeNode, args, config_errors=(ValueError, OSError))


if __name__ == "__main__":
    sys.exit(main())
