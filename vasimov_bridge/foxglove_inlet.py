"""The Foxglove bridge's teleop inlet: what clients publish, checked, shed and handed to the graph.

Clients may publish ``/cmd_vel`` and ``/vasimov/teleop/mode`` only (``foxglove_teleop`` decides, purely); anything
else is refused, logged and counted. A client's messages beyond ``teleop_max_messages_per_s`` are dropped before
decoding; validated commands enter the graph as source FOXGLOVE, at most ``teleop_max_commands_per_s`` per client
(``inlet_gate``: newest velocity wins, DAMP never shed). Everything here runs on the SDK's threads (and a flush timer):
nothing waits on the graph.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from foxglove.websocket import ClientChannel, StatusLevel
from geometry_msgs.msg import Twist
from vasimov_msgs.msg import RobotCommand as RobotCommandMsg

from vasimov.commands import DampCommand, Rejection, RobotCommand, VelocityCommand
from vasimov.ros import qos, topics
from vasimov.ros.command_msgs import to_msg
from vasimov.ros.command_outbox import CommandOutbox
from vasimov_bridge import foxglove_teleop
from vasimov_bridge.inlet_gate import CommandGate, GateConfig, SourceBudgets


class TeleopInlet:
    """Client channels (advertised / refused), the per-client budgets, and the two command publishers."""

    def __init__(self, node: Any) -> None:
        self.node = node  # p, count, log_limited, get_logger, server, sim_ns()
        p = node.p
        self.limits = foxglove_teleop.TeleopLimits(p["teleop_max_linear"], p["teleop_max_angular"])
        self.pub_twist = CommandOutbox(node, node.create_publisher(Twist, topics.CMD_VEL, qos.COMMANDS),
                                       node.log_limited)
        self.pub_cmd = CommandOutbox(node, node.create_publisher(RobotCommandMsg, topics.ROBOT_COMMAND, qos.COMMANDS),
                                     node.log_limited)
        # teleop floods are shed here, before the graph: raw budget per client, then the command gate
        self.reads = SourceBudgets(p["teleop_max_messages_per_s"], max(1.0, p["teleop_max_messages_per_s"] / 4))
        self.gate = CommandGate(GateConfig(rate_per_source=p["teleop_max_commands_per_s"],
                                           burst_per_source=max(1.0, p["teleop_max_commands_per_s"] / 5)),
                                is_stop=lambda routed: isinstance(routed[1], DampCommand))
        self.lock = threading.Lock()  # SDK threads: the channel tables and the limits
        self.gate_lock = threading.Lock()  # SDK threads and the flush timer share the budgets and the gate
        self.flush_timer: threading.Timer | None = None
        self.client_channels: dict[tuple[int, int], tuple[str, str]] = {}  # (client, channel) -> (topic, enc)
        self.refused_channels: dict[tuple[int, int], str] = {}

    def set_limits(self, max_linear: float, max_angular: float) -> None:
        with self.lock:
            self.limits = foxglove_teleop.TeleopLimits(max_linear, max_angular)

    def client_advertised(self, client: int, ch: ClientChannel) -> None:
        refusal = foxglove_teleop.check_advertisement(ch.topic, ch.encoding, ch.schema_name)
        with self.lock:
            if refusal is None:
                self.client_channels[(client, ch.id)] = (ch.topic, ch.encoding)
            else:
                self.refused_channels[(client, ch.id)] = f"{refusal.reason}: {refusal.detail}"
        if refusal is None:
            self.node.get_logger().info(f"client {client} may publish {ch.topic} ({ch.encoding})")
        else:
            self.node.count(f"client_advertise_refused.{refusal.reason}")
            self._refuse(refusal, f"client {client} advertised {ch.topic!r}")

    def client_unadvertised(self, client: int, channel_id: int) -> None:
        with self.lock:
            self.client_channels.pop((client, channel_id), None)
            self.refused_channels.pop((client, channel_id), None)

    def client_message(self, client: int, channel_id: int, data: bytes) -> None:
        node = self.node
        with self.lock:
            route = self.client_channels.get((client, channel_id))
            refused = self.refused_channels.get((client, channel_id))
            limits = self.limits
        if route is None:
            why = refused or f"channel {channel_id} was never advertised by client {client}"
            node.count("client_messages_refused.NOT_ALLOWED")
            node.log_limited("client_refused", f"client message refused: {why}")
            return
        topic, encoding = route
        now = time.monotonic()
        with self.gate_lock:
            admitted = self.reads.take(client, now)
        if not admitted:
            node.count("client_messages_shed")
            node.log_limited("teleop_shed", f"client {client} sends more than "
                                            f"{node.p['teleop_max_messages_per_s']:g} messages/s: dropped unread")
            return
        cmd = foxglove_teleop.decode(topic, encoding, bytes(data), limits)
        if isinstance(cmd, Rejection):
            node.count(f"client_messages_refused.{cmd.reason}")
            self._refuse(cmd, f"client {client} on {topic}")
            return
        node.count("client_messages_accepted")
        with self.gate_lock:
            before = self.gate.counters["coalesced"]
            out = self.gate.offer(client, (topic, cmd), now)
            coalesced = self.gate.counters["coalesced"] - before
        if coalesced:
            node.count("client_commands_coalesced", coalesced)
        for routed_topic, c in out:
            self._publish_command(routed_topic, c)
        self._schedule_flush()

    def _schedule_flush(self) -> None:
        """A waiting (coalesced) command leaves when its client's budget refills, even if nothing else arrives."""
        with self.gate_lock:
            due = self.gate.next_due(time.monotonic())
            if due is None or self.flush_timer is not None:
                return
            self.flush_timer = threading.Timer(max(0.0, due - time.monotonic()), self._flush)
            self.flush_timer.daemon = True
            self.flush_timer.start()

    def _flush(self) -> None:
        with self.gate_lock:
            self.flush_timer = None
            out = self.gate.due(time.monotonic())
        for _client, (routed_topic, c) in out:
            self._publish_command(routed_topic, c)
        self._schedule_flush()

    def _publish_command(self, topic: str, cmd: RobotCommand) -> None:
        if topic == topics.CMD_VEL and isinstance(cmd, VelocityCommand):
            t = Twist()
            t.linear.x, t.linear.y, t.angular.z = float(cmd.vx), float(cmd.vy), float(cmd.vyaw)
            self.pub_twist.publish(t)
            return
        m = to_msg(cmd)
        m.stamp.sec, m.stamp.nanosec = divmod(self.node.sim_ns(), 1_000_000_000)
        self.pub_cmd.publish(m)
        self.node.get_logger().info(f"teleop: {type(cmd).__name__} from Foxglove on {topic}")

    def _refuse(self, rejection: Rejection, what: str) -> None:
        text = f"{what} refused: {rejection.reason} {rejection.detail}"
        self.node.log_limited(f"refuse:{rejection.reason}", text)
        server = self.node.server
        if server is not None:
            server.publish_status(text, StatusLevel.Warning)
