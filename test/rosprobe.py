"""An in-process rclpy observer for tests: subscribes to topics on a private context and records messages."""

from __future__ import annotations

import threading
from typing import Any

import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile

from vasimov.ros import qos
from vasimov.ros.lockstep import announce_ready


class RosProbe:
    def __init__(self, domain: int, name: str = "test_probe") -> None:
        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.messages: dict[str, list[Any]] = {}
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while not self._stop.is_set() and self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.05)
            except Exception:  # context shutting down
                return

    def subscribe(self, topic: str, msg_type: type, profile: QoSProfile = qos.TELEMETRY, keep: int = 100000) -> Any:
        with self.lock:
            self.messages.setdefault(topic, [])

        def cb(msg: Any) -> None:
            with self.lock:
                buf = self.messages[topic]
                buf.append(msg)
                if len(buf) > keep:
                    del buf[: len(buf) - keep]

        return self.node.create_subscription(msg_type, topic, cb, profile)

    def announce_lockstep_ready(self) -> None:
        """Take part in a lockstep run: the graph must declare this probe (``lockstep_participants:=edge,policy,
        <probe name>``); call once the probe reads the tick topic, so the plant's first tick reaches it."""
        announce_ready(self.node)

    def publisher(self, topic: str, msg_type: type, profile: QoSProfile = qos.COMMANDS):
        return self.node.create_publisher(msg_type, topic, profile)

    def count(self, topic: str) -> int:
        with self.lock:
            return len(self.messages.get(topic, []))

    def last(self, topic: str) -> Any | None:
        with self.lock:
            buf = self.messages.get(topic, [])
            return buf[-1] if buf else None

    def all(self, topic: str) -> list[Any]:
        with self.lock:
            return list(self.messages.get(topic, []))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)
