"""Edge's UDP connector, as the SDK sees it: commands in on one port, state pushed to one configured destination.

Sockets and one receive thread, no rclpy: the node hands in callbacks and calls ``send_state``. Contract facts
this follows (``docs/menlo_sdk_contract.md`` section 1.1):

* commands are accepted from **any** sender and nothing is ever sent back to the sender; state goes to one
  preconfigured destination (127.0.0.1:8851 by default) whether or not anyone listens, from boot, in every mode;
* there is no verdict channel: a bad datagram is dropped, counted by reason, and logged at a bounded rate.

Load behaviour (a flood must cost the graph as little as possible, and never starve the closed loop): the receive
socket is non-blocking with a small kernel buffer, and the thread reads at most ``batch_max`` datagrams in any
``batch_period_s`` window (then sleeps out the window), so its CPU is bounded whatever arrives and however it is paced;
the rest is dropped by the kernel, counted from the socket's own counter (``socket_drops``). Of what it reads, each
sender may have ``max_decodes_per_source_s`` datagrams decoded (over that they are dropped before parsing, the
cheapest drop; valid or not), and valid commands pass a ``CommandGate`` (per-sender budget, newest velocity wins,
DAMP never shed) before the callback. ``send_state`` never blocks: the send socket is non-blocking and a full
buffer, a refused port (Linux reports an ICMP port-unreachable on a connected UDP socket as ``ECONNREFUSED`` on a
later call) or any other ``OSError`` drops that one frame and counts it.

Link impairment (``vasimov.link_impairment``; off by default): ``set_link`` puts a seeded lossy, delayed, jittered,
duplicating, reordering link in either direction. Commands pass it on the receive thread before anything else (the
robot sees only what arrived; the "rx" tap records that), released by the same loop that waits for the gate; state
frames pass it in ``send_state``, and a timer thread, started the first time the state direction is impaired, sends
the delayed ones at their time. A perfect link with nothing in flight costs one attribute test per datagram.

Why one file past 400 lines: one socket pair's life (receive loop, per-source budgets, the command gate, link
impairment scheduling, state sends) whose threads share its state.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import math
import os
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from vasimov.command_rules import Reason
from vasimov.commands import CommandSource, DampCommand, Rejection, RobotCommand
from vasimov.link_impairment import DEFAULT_MAX_QUEUED, DIRECTIONS, ImpairedLink, Impairment
from vasimov.ros.ratelog import RateLimitedLog
from vasimov_bridge.inlet_gate import CommandGate, GateConfig, SourceBudgets
from vasimov_bridge.sdk_wire import RejectionCounter, decode_command
from vasimov_bridge.socket_drops import kernel_drops

log = logging.getLogger("vasimov.udp_lane")

DEFAULT_COMMAND_BIND = ("127.0.0.1", 8850)  # Edge --udp-control-port
DEFAULT_STATE_DESTINATION = ("127.0.0.1", 8851)  # Edge --udp-state-port on udp-state-host
#: Read buffer for one datagram: the largest UDP payload, so an oversized datagram is seen whole and refused by
#: its real size instead of being silently truncated into something that might parse.
_RECV_BYTES = 65535

Peer = tuple[str, int]
Direction = Literal["rx", "tx"]
CommandCallback = Callable[[RobotCommand, Peer], None]
DatagramTap = Callable[[Direction, Peer, bytes], None]


@dataclass(frozen=True)
class UdpLaneConfig:
    """Endpoints and bounds; loopback by default, port 0 in tests."""

    command_bind: tuple[str, int] = DEFAULT_COMMAND_BIND
    state_destination: tuple[str, int] = DEFAULT_STATE_DESTINATION
    #: Kernel receive buffer: ~100 small datagrams, i.e. at most ~15 ms of queue at the read cap below; excess is
    #: dropped by the OS (and counted), so memory and command latency stay flat whatever arrives.
    recv_buffer_bytes: int = 64 * 1024
    #: Datagrams read per window of ``batch_period_s`` (the window restarts at the first read after it ends):
    #: together the most this lane ever reads (6400/s), i.e. the most CPU a flood can take from this process.
    batch_max: int = 64
    batch_period_s: float = 0.01
    #: Datagrams one sender may have decoded per second (burst: a quarter of it); over it they are dropped unread.
    #: The SDK sends at most ~60/s (set_joints at 50 Hz plus the 10 Hz keepalive).
    max_decodes_per_source_s: float = 250.0
    #: Forwarding budget per sender and in all, newest-wins coalescing, DAMP never shed (``inlet_gate``).
    gate: GateConfig = field(default_factory=GateConfig)
    #: Niceness added to the receive thread only (not the state sender): under a flood the reading yields the CPU
    #: to the closed loop's processes.
    rx_nice: int = 10
    #: Each rejection reason / send failure is logged at most once per this many seconds, with the count since.
    log_interval_s: float = 5.0
    #: How often the receive thread wakes to notice ``close()``; bounds close latency.
    poll_s: float = 0.1
    #: Seed of the link impairment draws, and how many datagrams one direction may hold in flight (past it they are
    #: dropped and counted as ``overflow``).
    link_seed: int = 0
    link_max_queued: int = DEFAULT_MAX_QUEUED

    def __post_init__(self) -> None:
        for name in ("command_bind", "state_destination"):
            host, port = getattr(self, name)
            if not isinstance(host, str) or not 0 <= int(port) <= 65535:
                raise ValueError(f"{name} must be (host, port 0..65535), got {getattr(self, name)!r}")
        if self.state_destination[1] == 0:
            raise ValueError("state_destination needs a real port (the SDK listens on 8851 by default)")
        if self.recv_buffer_bytes < 4096:
            raise ValueError("recv_buffer_bytes must be >= 4096")
        if self.batch_max < 1:
            raise ValueError("batch_max must be >= 1")
        for name in ("max_decodes_per_source_s", "batch_period_s", "log_interval_s", "poll_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be finite and positive, got {value!r}")


class UdpLane:
    """Command socket + receive thread + state sender. ``start()`` binds; ``close()`` joins the thread.

    ``on_command(cmd, peer)`` runs on the receive thread for every valid command: keep it short (enqueue).
    ``on_datagram(direction, peer, data)`` is an optional raw tap for recording: ``"rx"`` with the sender for every
    datagram read, before decoding; ``"tx"`` with the destination for every state frame the kernel accepted.
    """

    def __init__(
        self,
        on_command: CommandCallback,
        config: UdpLaneConfig | None = None,
        *,
        on_datagram: DatagramTap | None = None,
        source: CommandSource = CommandSource.UDP,
    ) -> None:
        self.config = config or UdpLaneConfig()
        self._on_command = on_command
        self._on_datagram = on_datagram
        self._source = source
        self.rejections = RejectionCounter()  # decode_command reasons
        self.stats = RejectionCounter()  # rx/tx totals and drop classes
        # the gate only: the lane picks each line's level itself (see _log)
        self._log_gate = RateLimitedLog(lambda _msg: None, self.config.log_interval_s)
        self._rx: socket.socket | None = None
        self._tx: socket.socket | None = None
        self._dest: Peer = ("", 0)  # resolved state destination, the peer of every "tx" tap
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._budgets = SourceBudgets(self.config.max_decodes_per_source_s,
                                      max(1.0, self.config.max_decodes_per_source_s / 4))
        self.gate = CommandGate(self.config.gate)
        # link impairment: both directions' queues under one lock; the condition wakes the state timer thread
        self._link_lock = threading.Lock()
        self._link_wake = threading.Condition(self._link_lock)
        self._links: dict[str, ImpairedLink] = {
            d: ImpairedLink(self.config.link_seed, d, self.config.link_max_queued) for d in DIRECTIONS}
        self._state_link: ImpairedLink[bytes] = self._links["state"]
        self._command_link: ImpairedLink[tuple[bytes, Peer]] = self._links["command"]
        self._link_thread: threading.Thread | None = None

    # ── lifecycle ─────────────────────────────────────────────────────────────────────────────────────────────
    def start(self) -> None:
        """Bind the command socket, open the state socket, start the receive thread. ``OSError`` if the command
        port is taken or the destination does not resolve (configuration errors, raised once at start)."""
        if self._rx is not None:
            raise RuntimeError("UdpLane already started")
        cfg = self.config
        dest = (socket.gethostbyname(cfg.state_destination[0]), int(cfg.state_destination[1]))  # resolve once
        rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, cfg.recv_buffer_bytes)
            rx.bind((cfg.command_bind[0], int(cfg.command_bind[1])))
            rx.setblocking(False)  # the thread waits in poll(); reads never block
            # An unconnected send socket (sendto): on a connected UDP socket Linux turns the ICMP port-unreachable
            # for frame n into ECONNREFUSED on send n+1, which would drop every second frame while no SDK listens;
            # the robot streams regardless of listeners, and so does this. Bound up front so the source address
            # is known (and stable) before the first frame.
            tx.bind((cfg.command_bind[0], 0))
            tx.setblocking(False)
        except OSError:
            rx.close()
            tx.close()
            raise
        self._rx, self._tx, self._dest = rx, tx, dest
        self._stop.clear()
        self._thread = threading.Thread(target=self._receive_loop, args=(rx,), name="vasimov-udp-rx", daemon=True)
        self._thread.start()
        with self._link_wake:
            self._start_link_timer()  # a link impaired before start

    def close(self) -> None:
        """Stop the receive thread (within ``poll_s``) and the link timer, join them, close both sockets.
        Idempotent; state frames still in flight on an impaired link are discarded."""
        self._stop.set()
        with self._link_wake:
            self._link_wake.notify_all()
        for thread in (self._thread, self._link_thread):
            if thread is not None and thread is not threading.current_thread():
                thread.join()
        self._thread = self._link_thread = None
        for sock in (self._rx, self._tx):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.close()
        self._rx, self._tx = None, None

    def __enter__(self) -> UdpLane:
        if self._rx is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def command_address(self) -> tuple[str, int]:
        """Where commands are received (the bound port when configured with 0)."""
        if self._rx is None:
            raise RuntimeError("UdpLane not started")
        host, port = self._rx.getsockname()[:2]
        return str(host), int(port)

    @property
    def state_source_address(self) -> tuple[str, int]:
        """The local address state frames leave from (an ephemeral port)."""
        if self._tx is None:
            raise RuntimeError("UdpLane not started")
        host, port = self._tx.getsockname()[:2]
        return str(host), int(port)

    @property
    def counters(self) -> dict[str, int]:
        """A JSON-able snapshot of the traffic counters (rx/tx totals, drop classes, the gate's forwarded and
        coalesced commands, the kernel's drops on the command socket) for ``/api/sim/counters``; the per-reason
        command rejections are ``rejections.snapshot()``."""
        out = dict(self.stats.snapshot())
        for name, value in dict(self.gate.counters).items():
            out[f"gate_{name}"] = int(value)
        rx = self._rx
        drops = kernel_drops(rx) if rx is not None else None
        if drops is not None:
            out["rx_kernel_drops"] = drops
        return out

    # ── link impairment ───────────────────────────────────────────────────────────────────────────────────────
    def set_link(self, direction: str, impairment: Impairment) -> None:
        """Impair one direction ("state" or "command") from now on; datagrams in flight keep their times."""
        link = self._links[direction]  # KeyError for an unknown direction: a caller bug, parse first
        with self._link_wake:
            link.set(impairment)
            self._start_link_timer()
            self._link_wake.notify_all()

    def _start_link_timer(self) -> None:
        """The state timer thread, once the lane runs and the state direction is first impaired (lock held)."""
        if self._link_thread is None and self._tx is not None and self._state_link.impairment.active:
            self._link_thread = threading.Thread(target=self._state_link_loop, name="vasimov-udp-link", daemon=True)
            self._link_thread.start()

    def link_settings(self) -> dict[str, Impairment]:
        return {d: link.impairment for d, link in self._links.items()}

    @property
    def link_counters(self) -> dict[str, dict[str, int]]:
        """Per direction: datagrams offered to the link, lost, duplicated, delayed, reordered, dropped past the
        in-flight cap (overflow), released, and queued now."""
        with self._link_lock:
            return {d: link.snapshot() for d, link in self._links.items()}

    def _state_link_loop(self) -> None:
        """Send delayed state frames at their release time; sleeps on the condition in between."""
        link = self._state_link
        with self._link_wake:
            while not self._stop.is_set():
                now = time.monotonic()
                for data in link.pop_due(now):
                    self._send_now(data)
                due = link.next_due()
                self._link_wake.wait(self.config.poll_s if due is None else
                                     min(self.config.poll_s, max(0.0, due - now)))

    # ── out ───────────────────────────────────────────────────────────────────────────────────────────────────
    def send_state(self, data: bytes) -> bool:
        """Hand one state datagram to the kernel (or to the impaired link) without blocking; ``False`` (and a
        count) if it was dropped here. A frame the link loses or delays is counted in ``link_counters``."""
        link = self._state_link
        if not link.busy:
            return self._send_now(data)
        with self._link_wake:
            now = time.monotonic()
            link.offer(data, now)
            for due in link.pop_due(now):  # no delay: out at once, in order, from this thread
                self._send_now(due)
            self._link_wake.notify()  # the timer re-reads next_due
        return True

    def _send_now(self, data: bytes) -> bool:
        tx = self._tx
        if tx is None:
            self.stats.add("tx_dropped_closed")
            return False
        try:
            tx.sendto(data, self._dest)
        except OSError as exc:
            reason = {
                errno.EAGAIN: "tx_dropped_would_block",
                errno.EWOULDBLOCK: "tx_dropped_would_block",
                errno.ENOBUFS: "tx_dropped_no_buffers",
                errno.ECONNREFUSED: "tx_dropped_refused",
                errno.EMSGSIZE: "tx_dropped_too_large",
            }.get(exc.errno or 0, "tx_dropped_error")
            self.stats.add(reason)
            # A refused port is the normal state with no SDK running: debug only.
            level = logging.DEBUG if reason == "tx_dropped_refused" else logging.WARNING
            self._log(level, reason, "state datagram dropped: %s", exc)
            return False
        self.stats.add("tx_frames")
        self._tap("tx", self._dest, data)
        return True

    # ── in ────────────────────────────────────────────────────────────────────────────────────────────────────
    def _receive_loop(self, rx: socket.socket) -> None:
        cfg = self.config
        if cfg.rx_nice > 0:
            with contextlib.suppress(OSError):
                tid = threading.get_native_id()
                os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + cfg.rx_nice))
        poller = select.poll()
        poller.register(rx, select.POLLIN)
        link = self._command_link
        window_start, window_read = time.monotonic(), 0
        while not self._stop.is_set():
            now = time.monotonic()
            due = self.gate.next_due(now)
            if link.busy:
                with self._link_lock:
                    arrival = link.next_due()
                if arrival is not None:
                    due = arrival if due is None else min(due, arrival)
            wait_s = cfg.poll_s if due is None else min(cfg.poll_s, max(0.0, due - now))
            if not poller.poll(wait_s * 1000.0):
                now = time.monotonic()
                self._arrive_commands(now)
                self._forward_due(now)
                continue
            # The read cap is a window, not a per-wake count: a reader that keeps pace with a fast sender (reading
            # a few datagrams per wake and never finding a full batch) must not read past batch_max per period.
            now = time.monotonic()
            if now - window_start >= cfg.batch_period_s:
                window_start, window_read = now, 0
            batch: list[tuple[bytes, Peer]] = []
            while window_read + len(batch) < cfg.batch_max:
                try:
                    data, peer = rx.recvfrom(_RECV_BYTES)
                except BlockingIOError:
                    break
                except OSError as exc:
                    if self._stop.is_set():
                        return
                    # ECONNREFUSED and friends can surface on a UDP socket's next recv; none is fatal.
                    self.stats.add("rx_socket_error")
                    self._log(logging.WARNING, "rx_socket_error", "command socket error: %s", exc)
                    break
                batch.append((data, (str(peer[0]), int(peer[1]))))
            now = time.monotonic()
            if link.busy:  # through the impaired link: what arrives is handled in _arrive_commands
                with self._link_lock:
                    for item in batch:
                        link.offer(item, now)
                self._arrive_commands(now)
            else:
                for data, peer in batch:
                    self._handle_datagram(data, peer, now)
            self._forward_due(now)
            window_read += len(batch)
            if window_read >= cfg.batch_max:
                # this period's reads are spent: a flood. Let it queue (and overflow, counted by the kernel) rather
                # than spin, until the window ends.
                self._stop.wait(max(0.0, window_start + cfg.batch_period_s - time.monotonic()))

    def _arrive_commands(self, now: float) -> None:
        """Command datagrams the impaired link delivers by ``now``, handled as if they had just been read."""
        link = self._command_link
        if not link.busy:
            return
        with self._link_lock:
            arrived = link.pop_due(now)
        for data, peer in arrived:
            self._handle_datagram(data, peer, now)

    def _handle_datagram(self, data: bytes, peer: Peer, now: float | None = None) -> None:
        """One datagram, start to finish; nothing here may raise into the loop."""
        now = time.monotonic() if now is None else now
        self.stats.add("rx_datagrams")
        if not self._budgets.take(peer, now):
            self.stats.add("rx_shed_source_budget")
            self._log(logging.WARNING, "shed", "datagrams from %s:%d above %.0f/s: dropped unread", peer[0], peer[1],
                      self.config.max_decodes_per_source_s)
            return
        self._tap("rx", peer, data)
        try:
            cmd = decode_command(data, self._source)
        except Exception:  # decode_command promises not to raise; if it ever does, the lane still lives
            cmd = Rejection(reason=Reason.DECODER_ERROR, detail="decoder raised")
            log.exception("decode_command raised")
        if isinstance(cmd, Rejection):
            count = self.rejections.add(cmd.reason)
            self._log(
                logging.WARNING,
                f"reject:{cmd.reason}",
                "dropped a command from %s:%d: %s %s (%d so far)",
                peer[0],
                peer[1],
                cmd.reason,
                cmd.detail,
                count,
            )
            return
        before = self.gate.counters["coalesced"]
        out = self.gate.offer(peer, cmd, now)
        if self.gate.counters["coalesced"] > before or (not out and not isinstance(cmd, DampCommand)):
            self._log(logging.WARNING, "rate", "commands from %s:%d above %.0f/s: newest kept, older coalesced",
                      peer[0], peer[1], self.config.gate.rate_per_source)
        for c in out:
            self._deliver(c, peer)

    def _forward_due(self, now: float) -> None:
        for peer, cmd in self.gate.due(now):
            self._deliver(cmd, peer)

    def _deliver(self, cmd: RobotCommand, peer: Peer) -> None:
        self.stats.add("rx_commands")
        try:
            self._on_command(cmd, peer)
        except Exception:
            self.stats.add("callback_error")
            self._log(logging.ERROR, "callback", "on_command raised for %r", cmd)
            log.debug("on_command traceback", exc_info=True)

    def _log(self, level: int, key: str, msg: str, *args: object) -> None:
        """A log line per ``key`` per ``log_interval_s`` at most, carrying how many it stands for."""
        suppressed = self._log_gate.allow(key)
        if suppressed is not None:
            log.log(level, RateLimitedLog.with_count(msg % args if args else msg, suppressed))

    def _tap(self, direction: Direction, peer: Peer, data: bytes) -> None:
        if self._on_datagram is None:
            return
        try:
            self._on_datagram(direction, peer, data)
        except Exception:
            self.stats.add("tap_error")
            self._log(logging.ERROR, "tap", "on_datagram raised")
