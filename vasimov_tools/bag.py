"""Writing rosbag2 directories (metadata.yaml + MCAP) that `ros2 bag` reads, without rosbag2: a thin layer over
``rosbags.rosbag2.Writer`` plus what a live recorder needs around it.

No rclpy in here, so every rule is testable on bytes:

* **Types**: the store starts from rosbags' Kilted types; message packages it does not know (vasimov_msgs, or
  anything else discovered on the graph) are registered from the ``.msg`` files installed under
  ``<prefix>/share/<pkg>/msg``, so the bag's metadata and MCAP schemas carry the real definitions.
* **Timestamps** are simulated time: a message whose first field is a ``builtin_interfaces/Time`` (directly or as
  ``std_msgs/Header.stamp``; all of VASIMOV's messages, /clock, JointState, Imu, Odometry) is logged at that stamp,
  read straight from the CDR bytes; any other message at the latest /clock the recorder has seen. So is a stamp
  that cannot be simulated time: zero, ``rcl_interfaces`` messages (/rosout, /parameter_events are stamped by each
  node's own clock, wall time unless it uses sim time), and a stamp more than ``MAX_STAMP_LEAD_NS`` ahead of the
  latest /clock (or, before any /clock, later than ``WALL_CLOCK_NS``): those are counted as ``restamped``.
  Messages that arrive before any simulated time is known are logged at 0 and counted as ``unstamped``.
* **Bounded memory**: subscription callbacks only enqueue (``BagRecorder.offer``, never blocks); one writer thread
  drains the queue into the file. When the queue is full the message is dropped and counted per topic, so a slow
  disk costs messages, never unbounded RAM. Everything is reported by ``close()``.
"""

from __future__ import annotations

import os
import queue
import struct
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rosbags.interfaces import Connection, Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.rosbag2.enums import CompressionFormat, CompressionMode
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosbags.typesys.base import Nodetype
from rosbags.typesys.store import Typestore

#: rosbag2 metadata version written. Jazzy and Kilted write and read 9 (rosbags writes 8 or 9).
BAG_VERSION = 9
TIME_TYPE = "builtin_interfaces/msg/Time"
_SEC_NSEC = {b"\x00": struct.Struct(">iI"), b"\x01": struct.Struct("<iI")}  # CDR encapsulation byte 1: 0 BE, 1 LE
_INFINITE = QosTime(2147483647, 4294967295)  # how rosbag2 writes an infinite duration
#: A stamp this far ahead of the latest /clock is not simulated time (it is some node's wall clock).
MAX_STAMP_LEAD_NS = 10_000_000_000
# a zero stamp counts as sim time 0 only while the latest /clock is within this of the start
ZERO_STAMP_WINDOW_NS = 1_000_000_000
#: Before any /clock: stamps after 2001-09-09 (1e9 s since the epoch) are wall clock, not a simulation's time.
WALL_CLOCK_NS = 1_000_000_000 * 1_000_000_000
#: Packages whose stamps are the publishing node's clock, not the simulation's.
NODE_CLOCK_PACKAGES = ("rcl_interfaces/",)


class BagError(RuntimeError):
    """A bag cannot be opened, a type cannot be resolved, or the writer failed; the message says which."""


# -- types ----------------------------------------------------------------------------------------------------------
def share_directory(package: str) -> Path | None:
    """Where ``package``'s interface files are installed: each AMENT_PREFIX_PATH prefix, then this interpreter's
    prefix (the venv, where `make setup` installs vasimov_msgs and the ROS wheels put theirs)."""
    prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p] + [sys.prefix]
    for prefix in prefixes:
        candidate = Path(prefix) / "share" / package
        if candidate.is_dir():
            return candidate
    return None


def _referenced(fields: Iterable[tuple[str, Any]]) -> set[str]:
    """Type names a parsed message refers to (nested messages, arrays and sequences of them)."""
    out: set[str] = set()
    for _, (kind, detail) in fields:
        if kind == Nodetype.NAME:
            out.add(detail)
        elif kind in (Nodetype.ARRAY, Nodetype.SEQUENCE):
            inner_kind, inner = detail[0]
            if inner_kind == Nodetype.NAME:
                out.add(inner)
    return out


def ensure_type(store: Typestore, msgtype: str, _seen: set[str] | None = None) -> None:
    """Make ``msgtype`` (``pkg/msg/Name``) and everything it references known to ``store``.

    Unknown types are read from ``share/<pkg>/msg/<Name>.msg``; a type the store already has is never redefined
    (rosbags would refuse a different definition). Raises BagError naming the file it looked for.
    """
    seen = set() if _seen is None else _seen
    if msgtype in store.fielddefs or msgtype in seen:
        return
    seen.add(msgtype)
    parts = msgtype.split("/")
    if len(parts) != 3 or parts[1] != "msg":
        raise BagError(f"cannot record type {msgtype!r}: only messages named pkg/msg/Name are supported")
    pkg, _, name = parts
    share = share_directory(pkg)
    path = None if share is None else share / "msg" / f"{name}.msg"
    if path is None or not path.is_file():
        raise BagError(f"no definition for {msgtype}: {path or f'share/{pkg}/msg/{name}.msg'} not found (is the "
                       f"package installed into this environment?)")
    typs = get_types_from_msg(path.read_text(encoding="utf-8"), msgtype)
    for ref in sorted(_referenced(typs[msgtype][1])):
        ensure_type(store, ref, seen)
    store.register(typs)


def make_typestore(packages: Sequence[str] = ("vasimov_msgs",)) -> Typestore:
    """rosbags' Kilted store plus every ``.msg`` of ``packages`` (installed share dirs)."""
    store = get_typestore(Stores.ROS2_KILTED)
    for pkg in packages:
        share = share_directory(pkg)
        if share is None:
            raise BagError(f"package {pkg} is not installed (no share/{pkg}); run `make setup`")
        for path in sorted((share / "msg").glob("*.msg")):
            ensure_type(store, f"{pkg}/msg/{path.stem}")
    return store


def leading_stamp(store: Typestore, msgtype: str) -> bool:
    """True when the message's first field (following first fields of nested messages) is a Time, i.e. its CDR
    bytes 4..12 are that stamp's sec/nanosec. std_msgs/Header qualifies; so do PlantState and the other
    vasimov_msgs (``stamp`` first)."""
    typ = msgtype
    for _ in range(8):
        if typ == TIME_TYPE:
            return True
        fields = store.fielddefs[typ][1]
        if not fields:
            return False
        kind, detail = fields[0][1]
        if kind != Nodetype.NAME:
            return False
        typ = detail
    return False


def cdr_stamp_ns(raw: bytes | memoryview) -> int | None:
    """sec/nanosec at the start of a CDR payload as nanoseconds, or None if too short, negative or malformed."""
    if len(raw) < 12:
        return None
    layout = _SEC_NSEC.get(bytes(raw[1:2]))
    if layout is None:
        return None
    sec, nsec = layout.unpack_from(raw, 4)
    if sec < 0 or nsec >= 1_000_000_000:
        return None
    return sec * 1_000_000_000 + nsec


def qos_from_endpoint(reliable: bool, transient_local: bool) -> Qos:
    """The offered QoS of one publisher as rosbag2 stores it (history/depth unknown to a subscriber, as in
    `ros2 bag record`)."""
    return Qos(QosHistory.UNKNOWN, 0, QosReliability.RELIABLE if reliable else QosReliability.BEST_EFFORT,
               QosDurability.TRANSIENT_LOCAL if transient_local else QosDurability.VOLATILE, _INFINITE, _INFINITE,
               QosLiveliness.AUTOMATIC, _INFINITE, False)


# -- the recorder core ----------------------------------------------------------------------------------------------
@dataclass
class TopicStats:
    topic: str
    msgtype: str
    received: int = 0
    written: int = 0
    dropped: int = 0  # queue full or writer failed
    unstamped: int = 0  # logged at time 0: no stamp in the message and no /clock yet
    restamped: int = 0  # had a stamp that is not simulated time (see module docstring); logged at /clock
    bytes: int = 0


@dataclass
class TopicHandle:
    """What a subscription callback needs to offer a message: the bag connection, how to stamp it, its counters."""

    connection: Connection
    stamped: bool
    stats: TopicStats


@dataclass
class RecordSummary:
    path: Path
    topics: list[TopicStats]
    queue_high_water: int
    queue_capacity: int
    writer_error: str | None
    duration_s: float
    bag_bytes: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def dropped(self) -> int:
        return sum(t.dropped for t in self.topics)

    @property
    def written(self) -> int:
        return sum(t.written for t in self.topics)

    def report(self) -> str:
        """Human summary for the log: one line per topic and the totals that matter (drops first)."""
        payload = sum(t.bytes for t in self.topics)
        lines = [f"bag {self.path}: {self.written} messages on {len(self.topics)} topics, {self.dropped} dropped, "
                 f"{self.bag_bytes / 1e6:.2f} MB on disk ({payload / 1e6:.2f} MB of messages), queue high-water "
                 f"{self.queue_high_water}/{self.queue_capacity}"]
        if self.writer_error:
            lines.append(f"  WRITER FAILED: {self.writer_error}")
        for t in sorted(self.topics, key=lambda s: s.topic):
            note = f", {t.dropped} DROPPED" if t.dropped else ""
            note += f", {t.unstamped} at t=0 (no sim time yet)" if t.unstamped else ""
            note += f", {t.restamped} with non-sim stamps logged at /clock" if t.restamped else ""
            lines.append(f"  {t.topic} [{t.msgtype}]: {t.written}{note}")
        return "\n".join(lines)


_STOP = object()


class BagRecorder:
    """A rosbag2 writer fed from any thread through a bounded queue, written by one thread.

    ``add_topic`` and ``write_direct`` may be called from any thread (they take the writer lock briefly);
    ``offer`` never blocks. ``close`` drains the queue, closes the MCAP file and writes metadata.yaml; it is
    idempotent, so a signal handler and a ``finally`` may both call it.
    """

    def __init__(self, path: Path | str, store: Typestore, *, queue_size: int = 20000, compression: str = "zstd",
                 custom_data: dict[str, str] | None = None) -> None:
        if queue_size < 1:
            raise ValueError(f"queue_size must be >= 1, got {queue_size}")
        if compression not in ("zstd", "none"):
            raise ValueError(f"compression {compression!r}: use 'zstd' (MCAP chunk compression) or 'none'")
        self.path = Path(path)
        self.store = store
        try:
            self.writer = Writer(self.path, version=BAG_VERSION, storage_plugin=StoragePlugin.MCAP)
        except Exception as exc:  # rosbags' WriterError: the path exists
            raise BagError(f"cannot create bag {self.path}: {exc}") from exc
        if compression == "zstd":
            self.writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
        for k, v in (custom_data or {}).items():
            self.writer.set_custom_data(k, v)
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=queue_size)
        self.capacity = queue_size
        self.high_water = 0
        self.topics: dict[str, TopicHandle] = {}
        self.clock_ns: int | None = None
        self.writer_error: str | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._summary: RecordSummary | None = None
        self._t0 = time.monotonic()
        try:
            self.writer.open()
        except Exception as exc:
            raise BagError(f"cannot create bag {self.path}: {exc}") from exc
        self._thread = threading.Thread(target=self._drain, name="bag-writer", daemon=True)
        self._thread.start()

    # -- producer side ---------------------------------------------------------------------------------------------
    def add_topic(self, topic: str, msgtype: str, offered_qos: Sequence[Qos] = ()) -> TopicHandle:
        """Register a topic (its type is resolved from installed .msg files if needed). Idempotent per topic; a
        topic that changes type is refused with BagError (one bag connection per topic keeps readers simple)."""
        with self._lock:
            have = self.topics.get(topic)
            if have is not None:
                if have.stats.msgtype != msgtype:
                    raise BagError(f"{topic} is already recorded as {have.stats.msgtype}, not {msgtype}")
                return have
            if self._closed:
                raise BagError(f"bag {self.path} is closed")
            ensure_type(self.store, msgtype)
            conn = self.writer.add_connection(topic, msgtype, typestore=self.store,
                                              offered_qos_profiles=list(offered_qos))
            stamped = leading_stamp(self.store, msgtype) and not msgtype.startswith(NODE_CLOCK_PACKAGES)
            handle = TopicHandle(conn, stamped, TopicStats(topic, msgtype))
            self.topics[topic] = handle
            return handle

    def set_clock(self, ns: int) -> None:
        """The latest simulated time (from /clock) for messages without a stamp of their own."""
        if self.clock_ns is None or ns > self.clock_ns:
            self.clock_ns = ns

    def timestamp(self, handle: TopicHandle, raw: bytes | memoryview) -> int | None:
        """Log time for ``raw``: its own leading stamp if that is simulated time, else the latest /clock, else None."""
        if handle.stamped:
            ns = cdr_stamp_ns(raw)
            clock = self.clock_ns
            # a zero stamp is the simulation's first step while the clock is still near it (messages of one batch
            # may be taken after a later /clock); later, it is an unset stamp
            if ns or (ns == 0 and (clock is None or clock <= ZERO_STAMP_WINDOW_NS)):
                limit = WALL_CLOCK_NS if clock is None else clock + MAX_STAMP_LEAD_NS
                if ns <= limit:
                    return ns
                handle.stats.restamped += 1
        return self.clock_ns

    def offer(self, handle: TopicHandle, raw: bytes) -> bool:
        """Queue one serialized message; False (and counted) when it had to be dropped. Never blocks."""
        stats = handle.stats
        stats.received += 1
        if self.writer_error is not None or self._closed:
            stats.dropped += 1
            return False
        ts = self.timestamp(handle, raw)
        if ts is None:
            stats.unstamped += 1
            ts = 0
        try:
            self.queue.put_nowait((handle, ts, raw))
        except queue.Full:
            stats.dropped += 1
            return False
        depth = self.queue.qsize()
        if depth > self.high_water:
            self.high_water = depth
        return True

    def write_direct(self, handle: TopicHandle, ts: int, raw: bytes) -> None:
        """Write a message the recorder produced itself (provenance) now, bypassing the queue: it must not drop."""
        with self._lock:
            handle.stats.received += 1
            self._write(handle, ts, raw)

    # -- writer side -----------------------------------------------------------------------------------------------
    def _write(self, handle: TopicHandle, ts: int, raw: bytes) -> None:
        if self.writer_error is not None:
            handle.stats.dropped += 1
            return
        try:
            self.writer.write(handle.connection, ts, raw)
        except Exception as exc:  # disk full, closed file: stop writing, keep counting, report at close
            self.writer_error = f"{type(exc).__name__}: {exc}"
            handle.stats.dropped += 1
            return
        handle.stats.written += 1
        handle.stats.bytes += len(raw)

    def _drain(self) -> None:
        while True:
            item = self.queue.get()
            if item is _STOP:
                return
            with self._lock:
                self._write(*item)
                # write whatever else is already queued under the same lock hold (fewer lock round trips)
                for _ in range(256):
                    try:
                        item = self.queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is _STOP:
                        return
                    self._write(*item)

    def close(self) -> RecordSummary:
        """Drain, close the storage, write metadata.yaml; returns (and caches) the summary."""
        if self._summary is not None:
            return self._summary
        self._closed = True
        self.queue.put(_STOP)  # blocks only until the writer makes room; it is draining
        self._thread.join()
        with self._lock:
            try:
                self.writer.close()
            except Exception as exc:
                self.writer_error = self.writer_error or f"closing: {type(exc).__name__}: {exc}"
        size = sum(p.stat().st_size for p in self.path.glob("*") if p.is_file()) if self.path.is_dir() else 0
        self._summary = RecordSummary(self.path, [h.stats for h in self.topics.values()], self.high_water,
                                      self.capacity, self.writer_error, time.monotonic() - self._t0, size)
        return self._summary
