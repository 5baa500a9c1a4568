"""Edge's UDP connector, as the SDK sees it: commands in on one port, state pushed to one configured destination.

Sockets and one receive thread, no rclpy: the node hands in callbacks and calls ``send_state``. Contract facts
this follows (``docs/menlo_sdk_contract.md`` section 1.1):

* commands are accepted from **any** sender and nothing is ever sent back to the sender; state goes to one
  preconfigured destination (127.0.0.1:8851 by default) whether or not anyone listens, from boot, in every mode;
* there is no verdict channel: a bad datagram is dropped, counted by reason, and logged at a bounded rate.

Load behaviour: the receive socket has a fixed kernel buffer, so a flood is dropped by the OS rather than queued in
Python. The thread decodes every datagram it reads (cheap) but forwards at most ``max_commands_per_s`` commands
to the callback (a token bucket) so a flood cannot monopolise the node; DAMP is exempt, a stop is never shed by
this lane. ``send_state`` never blocks: the send socket is non-blocking and a full buffer, a refused port
(Linux reports an ICMP port-unreachable on a connected UDP socket as ``ECONNREFUSED`` on a later call) or any
other ``OSError`` drops that one frame and counts it.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import math
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from vasimov.commands import CommandSource, DampCommand, Rejection, RobotCommand
from vasimov_bridge.sdk_wire import RejectionCounter, decode_command

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
    #: Kernel receive buffer. 256 KiB holds ~0.1 s of a 10k/s flood of max-size commands; excess is dropped by the
    #: OS, so memory stays flat whatever arrives.
    recv_buffer_bytes: int = 256 * 1024
    #: Commands handed to ``on_command`` per second, burst included (DAMP exempt). The SDK sends at most ~60/s
    #: (set_joints at 50 Hz plus the 10 Hz keepalive).
    max_commands_per_s: float = 1000.0
    #: Each rejection reason / send failure is logged at most once per this many seconds, with the count since.
    log_interval_s: float = 5.0
    #: How often the receive thread wakes to notice ``close()``; bounds close latency.
    poll_s: float = 0.1

    def __post_init__(self) -> None:
        for name in ("command_bind", "state_destination"):
            host, port = getattr(self, name)
            if not isinstance(host, str) or not 0 <= int(port) <= 65535:
                raise ValueError(f"{name} must be (host, port 0..65535), got {getattr(self, name)!r}")
        if self.state_destination[1] == 0:
            raise ValueError("state_destination needs a real port (the SDK listens on 8851 by default)")
        if self.recv_buffer_bytes < 4096:
            raise ValueError("recv_buffer_bytes must be >= 4096")
        for name in ("max_commands_per_s", "log_interval_s", "poll_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be finite and positive, got {value!r}")


class _RateLimitedLog:
    """One line per key per interval, carrying how many events it stands for, so a flood of junk cannot flood the
    log while the first occurrence is still reported at once."""

    def __init__(self, interval_s: float) -> None:
        self._interval = interval_s
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, level: int, key: str, msg: str, *args: object) -> None:
        now = time.monotonic()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self._interval:
                self._suppressed[key] = self._suppressed.get(key, 0) + 1
                return
            self._last[key] = now
            skipped = self._suppressed.pop(key, 0)
        if skipped:
            log.log(level, msg + " (+%d more since the last report)", *args, skipped)
        else:
            log.log(level, msg, *args)


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
        self._log = _RateLimitedLog(self.config.log_interval_s)
        self._rx: socket.socket | None = None
        self._tx: socket.socket | None = None
        self._dest: Peer = ("", 0)  # resolved state destination, the peer of every "tx" tap
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._tokens = self.config.max_commands_per_s
        self._tokens_at = time.monotonic()

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
            rx.settimeout(cfg.poll_s)
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

    def close(self) -> None:
        """Stop the receive thread (within ``poll_s``), join it, close both sockets. Idempotent."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        self._thread = None
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
        """A JSON-able snapshot of the traffic counters (rx/tx totals, drop classes) for ``/api/sim/counters``;
        the per-reason command rejections are ``rejections.snapshot()``."""
        return self.stats.snapshot()

    # ── out ───────────────────────────────────────────────────────────────────────────────────────────────────
    def send_state(self, data: bytes) -> bool:
        """Hand one state datagram to the kernel without blocking; ``False`` (and a count) if it was dropped."""
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
        while not self._stop.is_set():
            try:
                data, peer = rx.recvfrom(_RECV_BYTES)
            except TimeoutError:
                continue
            except OSError as exc:
                if self._stop.is_set():
                    return
                # ECONNREFUSED and friends can surface on a UDP socket's next recv; none is fatal.
                self.stats.add("rx_socket_error")
                self._log(logging.WARNING, "rx_socket_error", "command socket error: %s", exc)
                continue
            self._handle_datagram(data, (str(peer[0]), int(peer[1])))

    def _handle_datagram(self, data: bytes, peer: Peer) -> None:
        """One datagram, start to finish; nothing here may raise into the loop."""
        self.stats.add("rx_datagrams")
        self._tap("rx", peer, data)
        try:
            cmd = decode_command(data, self._source)
        except Exception:  # decode_command promises not to raise; if it ever does, the lane still lives
            cmd = Rejection(reason="DECODER_ERROR", detail="decoder raised")
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
        if not isinstance(cmd, DampCommand) and not self._take_token():
            self.stats.add("rx_rate_limited")
            self._log(logging.WARNING, "rate", "command rate above %.0f/s: shedding", self.config.max_commands_per_s)
            return
        self.stats.add("rx_commands")
        try:
            self._on_command(cmd, peer)
        except Exception:
            self.stats.add("callback_error")
            self._log(logging.ERROR, "callback", "on_command raised for %r", cmd)
            log.debug("on_command traceback", exc_info=True)

    def _take_token(self) -> bool:
        """Token bucket: refills at ``max_commands_per_s``, holds at most one second's worth."""
        rate = self.config.max_commands_per_s
        now = time.monotonic()
        self._tokens = min(rate, self._tokens + (now - self._tokens_at) * rate)
        self._tokens_at = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def _tap(self, direction: Direction, peer: Peer, data: bytes) -> None:
        if self._on_datagram is None:
            return
        try:
            self._on_datagram(direction, peer, data)
        except Exception:
            self.stats.add("tap_error")
            self._log(logging.ERROR, "tap", "on_datagram raised")
