"""`vasimov topics` and `vasimov echo`: a look at the running graph without the ros2 CLI (not installable from PyPI).

Also the graph helpers the recorder shares: a message class from its type name (``vasimov.ros.message_types``,
re-exported here) and choosing a
subscription QoS that matches what the publishers offer (as `ros2 bag record` and `ros2 topic echo` do: reliable
only if every publisher is reliable, transient-local only if every publisher is), so a viewer never fails to match a
best-effort or latched publisher.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions

from vasimov.ros.message_types import MessageTypeError, message_class

#: `topics` reads the graph once discovery has settled: at least DISCOVERY_S, then until the set of topics and their
#: publisher counts has not changed for DISCOVERY_QUIET_S, at most DISCOVERY_MAX_S (a fresh participant learns the
#: endpoints of a busy seven-node graph over a second or two; there is no "discovery complete" event in DDS).
DISCOVERY_S = 1.0
DISCOVERY_QUIET_S = 0.75
DISCOVERY_MAX_S = 6.0


#: A topic or type that cannot be looked at; the message says why and what exists instead. One error type with the
#: core's message-type lookup, whose failure is the commonest reason.
IntrospectError = MessageTypeError


def adapted_qos(node: Node, topic: str, depth: int) -> QoSProfile:
    """A KEEP_LAST(depth) profile compatible with every current publisher of ``topic``."""
    infos = node.get_publishers_info_by_topic(topic)
    reliable = bool(infos) and all(i.qos_profile.reliability == ReliabilityPolicy.RELIABLE for i in infos)
    latched = bool(infos) and all(i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for i in infos)
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE)


def publisher_qos_flags(node: Node, topic: str) -> list[tuple[bool, bool]]:
    """(reliable, transient_local) for each publisher of ``topic`` (what a bag stores as offered QoS)."""
    return [(i.qos_profile.reliability == ReliabilityPolicy.RELIABLE,
             i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL)
            for i in node.get_publishers_info_by_topic(topic)]


# -- message -> plain data ------------------------------------------------------------------------------------------
def to_plain(value: Any) -> Any:
    """A ROS message (or field value) as dicts, lists and scalars, in field order; bytes become lists of ints."""
    if hasattr(value, "get_fields_and_field_types"):
        return {name: to_plain(getattr(value, name)) for name in value.get_fields_and_field_types()}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, bytes | bytearray):
        return list(value)
    if isinstance(value, list | tuple) or type(value).__name__ == "array":
        return [to_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else (".nan" if math.isnan(v) else ("-.inf" if v < 0 else ".inf"))
    if isinstance(v, str):
        return json.dumps(v) if (v == "" or v.strip() != v or any(c in v for c in ":#{}[],'\"\n")) else v
    return str(v)


def format_yaml(data: Any, indent: int = 0) -> str:
    """The `ros2 topic echo` look: nested mappings indented, arrays of scalars as `- item` lines."""
    pad = "  " * indent
    lines: list[str] = []
    if isinstance(data, dict):
        for k, v in data.items():
            if isinstance(v, dict):
                lines.append(f"{pad}{k}:")
                lines.append(format_yaml(v, indent + 1))
            elif isinstance(v, list):
                if not v:
                    lines.append(f"{pad}{k}: []")
                else:
                    lines.append(f"{pad}{k}:")
                    lines.append(format_yaml(v, indent))
            else:
                lines.append(f"{pad}{k}: {_scalar(v)}")
    elif isinstance(data, list):
        for item in data:
            if isinstance(item, dict):
                body = format_yaml(item, indent + 1).lstrip()
                lines.append(f"{pad}- {body}")
            else:
                lines.append(f"{pad}- {_scalar(item)}")
    else:
        lines.append(f"{pad}{_scalar(data)}")
    return "\n".join(line for line in lines if line != "")


def _json_default(v: Any) -> Any:
    return str(v)


def format_json(data: Any) -> str:
    """One JSON object per line; non-finite floats become null (JSON has no NaN)."""
    def clean(x: Any) -> Any:
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, list):
            return [clean(v) for v in x]
        return x

    return json.dumps(clean(data), default=_json_default, allow_nan=False)


# -- rate measurement -----------------------------------------------------------------------------------------------
@dataclass
class TopicRate:
    topic: str
    types: list[str]
    publishers: int
    subscribers: int
    count: int = 0
    nbytes: int = 0
    first: float | None = None
    last: float | None = None
    note: str = ""
    latched: bool = False  # transient-local: history arrives as a burst on subscribing, so no rate is claimed

    def tick(self, n: int) -> None:
        now = time.monotonic()
        self.first = now if self.first is None else self.first
        self.last = now
        self.count += 1
        self.nbytes += n

    @property
    def rate_hz(self) -> float | None:
        """Messages per second between the first and last arrival; None with fewer than two messages."""
        if self.count < 2 or self.first is None or self.last is None or self.last <= self.first:
            return None
        return (self.count - 1) / (self.last - self.first)


def format_table(rates: Sequence[TopicRate], window_s: float) -> str:
    rows = [("TOPIC", "TYPE", "PUB", "SUB", "RATE_HZ", "MSGS", "AVG_BYTES")]
    for r in sorted(rates, key=lambda r: r.topic):
        hz = None if r.latched else r.rate_hz
        if r.latched:
            rate = "latched"
        elif hz is not None:
            rate = f"{hz:.1f}"
        elif r.count == 1:
            rate = "1 msg"  # slower than the window
        else:
            rate = r.note or "-"
        avg = f"{r.nbytes / r.count:.0f}" if r.count else "-"
        rows.append((r.topic, ",".join(r.types), str(r.publishers), str(r.subscribers), rate, str(r.count), avg))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    out.append(f"({len(rates)} topics; rates measured over {window_s:g} s of wall time)")
    return "\n".join(out)


class _Session:
    """An rclpy context with one node spun by a background thread, for the short-lived CLI commands."""

    def __init__(self, name: str, domain: int | None = None) -> None:
        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain,
                   signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node(name, context=self.context, start_parameter_services=False)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True, name=f"{name}-spin")
        self._thread.start()

    def _spin(self) -> None:
        while not self._stop.is_set() and self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.05)
            except Exception:  # the context is going away
                return

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.executor.shutdown()
        self.node.destroy_node()
        if self.context.ok():
            rclpy.shutdown(context=self.context)


def settle_discovery(node: Node, stop: threading.Event, min_s: float = DISCOVERY_S,
                     quiet_s: float = DISCOVERY_QUIET_S, max_s: float = DISCOVERY_MAX_S) -> None:
    """Return once the graph's topics (names, types, publisher counts) stopped changing; see DISCOVERY_*."""
    t0 = time.monotonic()
    last, since = None, t0
    while not stop.is_set():
        now = time.monotonic()
        view = sorted((t, tuple(ty), node.count_publishers(t)) for t, ty in node.get_topic_names_and_types())
        if view != last:
            last, since = view, now
        if now - t0 >= max_s or (now - t0 >= min_s and now - since >= quiet_s):
            return
        stop.wait(0.1)


def measure_topics(window_s: float = 2.0, domain: int | None = None, stop: threading.Event | None = None
                   ) -> list[TopicRate]:
    """Every topic of the graph with its types, endpoint counts and a rate measured over ``window_s``."""
    stop = stop or threading.Event()
    s = _Session("vasimov_topics", domain)
    try:
        settle_discovery(s.node, stop)
        rates: list[TopicRate] = []
        for topic, types in s.node.get_topic_names_and_types():
            r = TopicRate(topic, list(types), s.node.count_publishers(topic), s.node.count_subscribers(topic))
            rates.append(r)
            if r.publishers == 0:
                r.note = "no publisher"
                continue
            try:
                cls = message_class(types[0])
            except IntrospectError:
                r.note = "type not importable"
                continue
            profile = adapted_qos(s.node, topic, 1000)
            r.latched = profile.durability == DurabilityPolicy.TRANSIENT_LOCAL
            s.node.create_subscription(cls, topic, lambda raw, r=r: r.tick(len(raw)), profile, raw=True)
        stop.wait(window_s)
        return rates
    finally:
        s.close()


def echo(topic: str, *, count: int = 0, as_json: bool = False, wait_s: float = 10.0, out: TextIO | None = None,
         domain: int | None = None, stop: threading.Event | None = None) -> int:
    """Print messages of ``topic`` until ``count`` were printed (0 = until stopped). Returns an exit code:
    0 after printing, 1 if the topic never appeared within ``wait_s`` (the error lists the topics that exist)."""
    out = out or sys.stdout
    stop = stop or threading.Event()
    s = _Session("vasimov_echo", domain)
    try:
        deadline = time.monotonic() + wait_s
        types: list[str] = []
        while not stop.is_set():
            types = dict(s.node.get_topic_names_and_types()).get(topic, [])
            if types and s.node.count_publishers(topic) > 0:
                break
            if time.monotonic() > deadline:
                known = sorted(t for t, _ in s.node.get_topic_names_and_types())
                print(f"vasimov echo: no publisher of {topic} within {wait_s:g} s; topics: {', '.join(known)}",
                      file=sys.stderr)
                return 1
            stop.wait(0.05)
        if stop.is_set():
            return 0
        cls = message_class(types[0])
        printed = 0
        done = threading.Event()
        lock = threading.Lock()

        def on_msg(msg: Any) -> None:
            nonlocal printed
            with lock:
                if done.is_set():
                    return
                data = to_plain(msg)
                out.write((format_json(data) if as_json else format_yaml(data) + "\n---") + "\n")
                out.flush()
                printed += 1
                if count and printed >= count:
                    done.set()

        s.node.create_subscription(cls, topic, on_msg, adapted_qos(s.node, topic, 100))
        while not stop.is_set() and not done.is_set():
            done.wait(0.1)
        return 0
    finally:
        s.close()
