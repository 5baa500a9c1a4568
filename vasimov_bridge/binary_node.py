"""The binary stream node: VAS1 state out, VAC1 commands in, over one WebSocket server (see docs/binary_protocol.md).

* State: at most ``rate_hz`` packets per wall second to every client, built from the newest plant state, firmware
  state and ground-truth odometry; a packet goes out only when the plant published something new since the last one
  (a paused or finished simulation sends nothing rather than repeating itself). With no client connected the node
  reads nothing: the three subscriptions and the packet timer exist only from the first connection to the last
  disconnection (an unread subscription still makes the plant deliver every sample to this process). A client whose
  socket is not draining (write buffer over ``max_write_buffer``) skips packets instead of growing memory; skips are
  counted.
* Commands: every binary frame is decoded by ``binary_stream.decode_command``; a valid one becomes a
  vasimov_msgs/RobotCommand with source BINARY on ``/vasimov/command`` (the firmware's arbiter decides the rest),
  anything else is refused, counted per reason and per connection (the client sees its own count in ``rejected``).
* Floods: a connection's frames are read at most ``max_frames_per_s`` (over it the server stops reading that
  connection for a while, so TCP pushes the flood back onto its sender at no cost here; counted), and valid commands
  pass a per-connection ``CommandGate`` (newest velocity wins, DAMP never shed; coalesced ones counted).

Threads: the rclpy executor owns the ROS side (its timer takes the newest inputs from ``_NewestSampler`` and
packs them); an asyncio loop in one daemon thread owns the sockets. They meet in three places only: the timer hands
an encoded packet to the loop (``call_soon_threadsafe``), the loop publishes accepted commands (rclpy publishers are
thread-safe) and, when a client comes or goes, wakes the executor (a guard condition) to start or stop reading.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import rclpy
from nav_msgs.msg import Odometry
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from vasimov_msgs.msg import FirmwareState, PlantState
from vasimov_msgs.msg import RobotCommand as RobotCommandMsg
from websockets.asyncio.connection import broadcast
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from vasimov.commands import Rejection, RobotCommand
from vasimov.cpu_priority import renice_all_threads
from vasimov.frames import rotate
from vasimov.ros import qos, topics
from vasimov.ros.command_msgs import to_msg
from vasimov.ros.command_outbox import CommandOutbox
from vasimov.ros.convert import from_stamp
from vasimov.ros.lean_node import LeanNode
from vasimov.ros.params import COMMON, OBSERVER_CPU_NICE, ParamSpec, declare
from vasimov.ros.ratelog import RateLimitedLog
from vasimov.ros.spin import run_node
from vasimov_bridge import binary_stream as bs
from vasimov_bridge.inlet_gate import CommandGate, GateConfig, TokenBucket

PARAMS: tuple[ParamSpec, ...] = (
    *COMMON,
    ParamSpec("bind_host", "127.0.0.1", "Address the WebSocket server binds (loopback by default)."),
    OBSERVER_CPU_NICE,
    ParamSpec("port", 8766, "WebSocket port (0 = any free port; the chosen one is logged).", min=0, max=65535),
    ParamSpec("rate_hz", 50.0, "Most VAS1 state packets per wall second to each client.", min=1.0, max=200.0),
    ParamSpec("max_clients", 16, "Connections beyond this are closed with code 1013 (try again later).",
              min=1, max=1024),
    ParamSpec("max_write_buffer", 65536, "Bytes queued to a client above which its state packets are skipped.",
              min=1024, max=16 * 1024 * 1024),
    ParamSpec("max_frames_per_s", 200.0, "Frames read per second and connection; over it the connection is not read "
              "for a while (TCP holds the sender back).", min=1.0, max=100000.0),
    ParamSpec("max_commands_per_s", 100.0, "Commands forwarded per second and connection; over it the newest one "
              "waits and older ones are coalesced (DAMP never).", min=1.0, max=10000.0),
)

#: Frames larger than this close the connection (1009) inside websockets before we see them; anything smaller that
#: is not exactly a VAC1 packet is refused and counted here.
MAX_FRAME = 4096

_SEQ = struct.Struct("<I")
_OFF = {f.name: o for o, _, f in bs.layout(bs.STATE_FIELDS)}


def frame_from_messages(plant: PlantState, fw: FirmwareState | None, odom: Odometry | None) -> bs.StateFrame:
    """The connection-independent part of a VAS1 packet (sequence/ack/rejected are filled per client).

    ``fw`` must be of the plant's epoch (else None); ``odom`` None means no ground truth yet (fields zero, flag
    clear). Odometry's twist is in the pelvis frame (its child frame); VAS1 carries world-frame velocities.
    """
    flags = bs.StateFlags(0)
    if plant.gantry_engaged:
        flags |= bs.StateFlags.GANTRY
    mode, error_flags, vcmd = bs.MODE_UNKNOWN, 0, (0.0, 0.0, 0.0)
    if fw is not None:
        flags |= bs.StateFlags.FIRMWARE_KNOWN
        mode, error_flags, vcmd = int(fw.mode), int(fw.error_flags), tuple(fw.velocity_command)
        if fw.armed:
            flags |= bs.StateFlags.ARMED
        if fw.error_flags & 1:
            flags |= bs.StateFlags.FAULT
        if fw.policy_active:
            flags |= bs.StateFlags.POLICY_ACTIVE
    truth: dict[str, Any] = {}
    if odom is not None:
        flags |= bs.StateFlags.TRUTH_KNOWN
        p, q = odom.pose.pose.position, odom.pose.pose.orientation
        quat = (q.w, q.x, q.y, q.z)
        lin, ang = odom.twist.twist.linear, odom.twist.twist.angular
        truth = dict(base_pos=(p.x, p.y, p.z), base_quat=quat,
                     base_lin_vel=tuple(rotate(quat, (lin.x, lin.y, lin.z))),
                     base_ang_vel=tuple(rotate(quat, (ang.x, ang.y, ang.z))))
    return bs.StateFrame(sequence=0, epoch=int(plant.epoch), sim_time=from_stamp(plant.stamp),
                         joint_pos=plant.position, joint_vel=plant.velocity, mode=mode, flags=flags,
                         error_flags=error_flags, velocity_command=vcmd, **truth)


@dataclass
class _Client:
    conn: ServerConnection
    sequence: int = 0
    ack_sequence: int = 0
    rejected: int = 0
    skipped: int = 0


class WsStreamServer:
    """The socket side: an asyncio WebSocket server in its own thread. No ROS in here.

    ``on_packet(data)`` is called (in the server thread) for every frame a client sends and returns the command it
    decoded or the rejection; the server keeps the per-connection feedback counters.
    """

    def __init__(self, host: str, port: int, on_packet: Callable[[bytes | str], RobotCommand | Rejection], *,
                 max_clients: int, max_write_buffer: int, forward: Callable[[RobotCommand], None] | None = None,
                 max_frames_per_s: float = 200.0, gate: GateConfig | None = None,
                 on_clients_changed: Callable[[], None] | None = None) -> None:
        self.on_packet = on_packet
        self.forward = forward or (lambda _cmd: None)
        self.on_clients_changed = on_clients_changed or (lambda: None)  # server thread; must not block
        self.max_clients = max_clients
        self.max_write_buffer = max_write_buffer
        self.max_frames_per_s = max_frames_per_s
        self.gate = CommandGate(gate or GateConfig())  # touched only on the loop's thread
        self._flush_handle: asyncio.TimerHandle | None = None
        self.clients: dict[int, _Client] = {}
        self.counters: Counter[str] = Counter()
        self.loop = asyncio.new_event_loop()
        self._server: Server | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(host, port), name="binary-ws", daemon=True)
        self._thread.start()
        self._ready.wait(10.0)
        if self._error is not None:
            raise OSError(f"binary stream: cannot serve on {host}:{port}: {self._error}") from self._error
        if self._server is None:
            raise OSError(f"binary stream: server on {host}:{port} did not start within 10 s")
        self.address: tuple[str, int] = self._server.sockets[0].getsockname()[:2]

    def _run(self, host: str, port: int) -> None:
        asyncio.set_event_loop(self.loop)
        async def start() -> Server:
            return await serve(self._handle, host, port, max_size=MAX_FRAME, compression=None, ping_interval=5.0,
                               ping_timeout=5.0)

        try:
            self._server = self.loop.run_until_complete(start())
        except OSError as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()

    async def _handle(self, conn: ServerConnection) -> None:
        if len(self.clients) >= self.max_clients:
            self.counters["connections_refused"] += 1
            await conn.close(1013, f"at most {self.max_clients} clients")
            return
        client = _Client(conn)
        self.clients[id(conn)] = client
        self.counters["connections"] += 1
        self.on_clients_changed()
        reads = TokenBucket(self.max_frames_per_s, max(1.0, self.max_frames_per_s / 4), time.monotonic())
        try:
            async for message in conn:
                now = time.monotonic()
                if not reads.take(now):
                    # a flood: stop reading this connection until its budget refills; the kernel's buffers fill
                    # and TCP holds the sender back, so the flood costs this process nothing meanwhile
                    self.counters["frames_throttled"] += 1
                    await asyncio.sleep(reads.ready_at(now) - now)
                    now = time.monotonic()
                    reads.take(now)
                out = self.on_packet(message)
                if isinstance(out, Rejection):
                    client.rejected += 1
                    continue
                client.ack_sequence = out.sequence
                for cmd in self.gate.offer(id(conn), out, now):
                    self.forward(cmd)
                self._schedule_flush()
        except ConnectionClosed:
            pass
        finally:
            self.clients.pop(id(conn), None)
            self.on_clients_changed()

    def _schedule_flush(self) -> None:
        due = self.gate.next_due(time.monotonic())
        if due is None or self._flush_handle is not None:
            return
        self._flush_handle = self.loop.call_later(max(0.0, due - time.monotonic()), self._flush)

    def _flush(self) -> None:
        self._flush_handle = None
        for _key, cmd in self.gate.due(time.monotonic()):
            self.forward(cmd)
        self._schedule_flush()

    def send_state(self, packet: bytes) -> None:
        """Thread-safe: queue one encoded VAS1 packet (per-client fields zero) for every client."""
        self.loop.call_soon_threadsafe(self._send_all, packet)

    def _send_all(self, packet: bytes) -> None:
        for client in list(self.clients.values()):
            transport = client.conn.transport
            if transport is None or transport.get_write_buffer_size() > self.max_write_buffer:
                client.skipped += 1
                self.counters["state_skipped_slow_client"] += 1
                continue
            client.sequence = (client.sequence + 1) & 0xFFFFFFFF
            data = bytearray(packet)
            _SEQ.pack_into(data, _OFF["sequence"], client.sequence)
            _SEQ.pack_into(data, _OFF["ack_sequence"], client.ack_sequence)
            _SEQ.pack_into(data, _OFF["rejected"], client.rejected & 0xFFFFFFFF)
            broadcast([client.conn], bytes(data))
            self.counters["state_sent"] += 1

    def close(self) -> None:
        if self._server is not None and self.loop.is_running():
            async def shutdown() -> None:
                assert self._server is not None
                self._server.close()
                await asyncio.wait_for(self._server.wait_closed(), 3.0)

            fut = asyncio.run_coroutine_threadsafe(shutdown(), self.loop)
            with contextlib.suppress(Exception):  # closing is best effort; the process is ending anyway
                fut.result(timeout=5.0)
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5.0)


class _NewestSampler:
    """The newest message of a few high-rate topics, taken only when a packet is due.

    Plant state and ground truth arrive at 200 Hz and VAS1 samples them at ``rate_hz``. Subscribed on the main
    node, every arrival wakes the executor (measured: 14 % of a core on the graph's 2-core test machine, where the
    plant must keep real time). Here the subscriptions live on a private node with its own executor that nobody
    spins between packets; their KEEP_LAST(1) readers keep only the newest sample in DDS, and ``poll`` takes it.
    Best effort: a sampler never wants an old sample resent, and a reliable reader that is rarely read held back
    the publisher's acknowledgements (the plant's end-of-run flush waited on it).
    """

    NEWEST = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.BEST_EFFORT,
                        durability=DurabilityPolicy.VOLATILE)

    def __init__(self, context: Any, name: str, subscriptions: dict[str, type]) -> None:
        self.node = rclpy.create_node(name, context=context, start_parameter_services=False, enable_rosout=False)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.newest: dict[str, bytes] = {}
        for topic, cls in subscriptions.items():
            self.node.create_subscription(cls, topic, lambda raw, t=topic: self.newest.__setitem__(t, raw),
                                          self.NEWEST, raw=True)
        self.polls = len(subscriptions) + 1

    def poll(self) -> dict[str, bytes]:
        """Take whatever arrived since the last poll (at most one sample per topic is waiting)."""
        self.newest = {}
        for _ in range(self.polls):
            self.executor.spin_once(timeout_sec=0.0)
        return self.newest

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()


class BinaryStreamNode(LeanNode):
    """A LeanNode (no default QoS-event handlers; the wait-loop executor): the observers' executors walk fewer
    entities per wake-up (measured on the camera node: docs/performance.md)."""

    def __init__(self, **node_options: Any) -> None:
        """``node_options``: rclpy Node keywords (cli_args, ...), for a composed process (vasimov_tools.compose)."""
        super().__init__("binary_stream", **node_options)
        self.p = declare(self, PARAMS)
        self.log_limited = RateLimitedLog(self.get_logger().warning)
        self.plant: PlantState | None = None  # the newest one sent (its stamp goes on accepted commands)
        self.fw: FirmwareState | None = None
        self.odom: Odometry | None = None
        self.rejections: Counter[str] = Counter()
        self.accepted = 0
        self.build_errors = 0

        self.commands = CommandOutbox(
            self, self.create_publisher(RobotCommandMsg, topics.ROBOT_COMMAND, qos.COMMANDS), self.log_limited)
        # the inputs and the packet timer, only while a client is connected (`watch`)
        self.sampler: _NewestSampler | None = None
        self.timer = self.create_timer(1.0 / self.p["rate_hz"], self.on_timer)
        self.timer.cancel()
        self.clients_changed = self.create_guard_condition(self.watch)
        self.server = WsStreamServer(self.p["bind_host"], self.p["port"], self.on_packet,
                                     max_clients=self.p["max_clients"], max_write_buffer=self.p["max_write_buffer"],
                                     forward=self.forward, max_frames_per_s=self.p["max_frames_per_s"],
                                     gate=GateConfig(rate_per_source=self.p["max_commands_per_s"],
                                                     burst_per_source=max(1.0, self.p["max_commands_per_s"] / 5)),
                                     on_clients_changed=self.clients_changed.trigger)
        # an observer (and the lowest command source): a flood on its socket runs at the lowest CPU priority, so it
        # never competes with the closed loop; DDS receive threads and the server thread included
        renice_all_threads(int(self.p["cpu_nice"]))
        host, port = self.server.address
        self.get_logger().info(f"binary stream ready: ws://{host}:{port} (VAS1 {bs.STATE_SIZE} B state at "
                               f"<= {self.p['rate_hz']:g} Hz, VAC1 {bs.COMMAND_SIZE} B commands)")

    def close(self) -> None:
        self.server.close()
        self.watch(clients=0)
        total = sum(self.rejections.values())
        self.get_logger().info(
            f"binary stream closed: {self.server.counters['connections']} connections, "
            f"{self.server.counters['state_sent']} state packets sent, "
            f"{self.server.counters['state_skipped_slow_client']} skipped for slow clients, {self.accepted} commands "
            f"accepted, {total} refused {dict(self.rejections)}; flood control: "
            f"{self.server.gate.counters['forwarded']} forwarded, {self.server.gate.counters['coalesced']} coalesced, "
            f"{self.server.counters['frames_throttled']} reads throttled")

    # -- ROS side (executor thread) --------------------------------------------------------------------------------
    def watch(self, clients: int | None = None) -> None:
        """Read the graph while at least one client is connected, nothing otherwise (executor thread)."""
        n = len(self.server.clients) if clients is None else clients
        if n > 0 and self.sampler is None:
            # PLANT_STATE (every physics step), not PLANT_TICK (control ticks only): the freshest state to sample.
            self.sampler = _NewestSampler(self.context, "binary_stream_sampler", {
                topics.PLANT_STATE: PlantState, topics.FIRMWARE_STATE: FirmwareState, topics.ODOM_TRUTH: Odometry})
            self.timer.reset()
        elif n == 0 and self.sampler is not None:
            self.timer.cancel()
            self.sampler.close()
            self.sampler = None
            self.plant = self.fw = self.odom = None  # a later client starts from fresh samples, never stale ones

    def on_timer(self) -> None:
        if self.sampler is None:
            return  # the last client left between the timer's wake and this call
        newest = self.sampler.poll()
        if topics.FIRMWARE_STATE in newest:
            self.fw = deserialize_message(newest[topics.FIRMWARE_STATE], FirmwareState)
        if topics.ODOM_TRUTH in newest:
            self.odom = deserialize_message(newest[topics.ODOM_TRUTH], Odometry)
        if topics.PLANT_STATE not in newest:
            return  # the simulation has not advanced since the last packet: send nothing rather than repeat
        plant = deserialize_message(newest[topics.PLANT_STATE], PlantState)
        fw = self.fw
        if fw is not None and fw.epoch != plant.epoch:
            fw = None  # the firmware state of another life of the robot (a virtual restart in between)
        self.plant = plant
        try:
            packet = bs.encode_state(frame_from_messages(plant, fw, self.odom))
        except ValueError as exc:  # a non-finite reading must not reach clients as a plausible packet
            self.build_errors += 1
            self.log_limited("build", f"state packet not sent: {exc}")
            return
        self.server.send_state(packet)

    # -- socket input (server thread) -----------------------------------------------------------------------------
    def on_packet(self, data: bytes | str) -> RobotCommand | Rejection:
        out = bs.decode_command(data)
        if isinstance(out, Rejection):
            self.rejections[out.reason] += 1
            self.log_limited(out.reason, f"binary command refused: {out.reason}: {out.detail} "
                                         f"(refused so far: {sum(self.rejections.values())})")
            return out
        self.accepted += 1
        return out

    def forward(self, cmd: RobotCommand) -> None:
        """A command the gate let through: onto /vasimov/command (server thread; rclpy publishers are
        thread-safe)."""
        m = to_msg(cmd)
        plant = self.plant
        if plant is not None:
            m.stamp = plant.stamp
        self.commands.publish(m)


def main(args: list[str] | None = None) -> int:
    return run_node("binary_stream", BinaryStreamNode, args, config_errors=(ValueError, OSError))


if __name__ == "__main__":
    sys.exit(main())
