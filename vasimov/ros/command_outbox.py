"""A command publisher that never publishes into the void: messages wait, in order and bounded, until a reader has
matched the writer.

Why: command topics are volatile (a command is about now, not for late joiners), so a message published before the
firmware's reader has matched the writer is simply lost -- and an inlet opens to clients (UDP, WebSocket) the moment
its node starts, while DDS discovery may still be pairing the writer with the edge. `menlo stand` typed at that
moment lost its STAND. Every command inlet publishes through one of these.

Thread-safe: inlets publish from their network threads; `flush()` runs on the node's executor (a timer).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from rclpy.clock import Clock, ClockType

#: messages kept while no reader has matched: ten seconds of an SDK's 10 Hz keepalive
MAX_WAITING = 100
FLUSH_PERIOD_S = 0.02


class CommandOutbox:
    """Wraps a publisher: `publish()` sends at once when a reader is matched and nothing is waiting, else queues."""

    def __init__(self, node: Any, publisher: Any, warn: Callable[[str, str], None],
                 max_waiting: int = MAX_WAITING) -> None:
        self.publisher = publisher
        self.warn = warn
        self.max_waiting = max_waiting
        self.waiting: deque[Any] = deque()
        self.held = 0  # cumulative: messages that had to wait for a reader
        self.dropped = 0  # cumulative: oldest waiting messages dropped past max_waiting
        self.lock = threading.Lock()
        self.timer = node.create_timer(FLUSH_PERIOD_S, self.flush, clock=Clock(clock_type=ClockType.STEADY_TIME))

    def publish(self, msg: Any) -> None:
        with self.lock:
            if self.waiting or self.publisher.get_subscription_count() == 0:
                if len(self.waiting) >= self.max_waiting:
                    self.waiting.popleft()
                    self.dropped += 1
                    self.warn("outbox", f"no reader on {self.publisher.topic_name} yet: {self.dropped} oldest "
                                        "waiting commands dropped")
                self.waiting.append(msg)
                self.held += 1
                return
        self.publisher.publish(msg)

    def flush(self) -> None:
        """Send what waits, in order, once a reader has matched."""
        if not self.waiting or self.publisher.get_subscription_count() == 0:
            return
        with self.lock:  # a message arriving meanwhile queues behind these: order kept
            while self.waiting:
                self.publisher.publish(self.waiting.popleft())

    @property
    def counters(self) -> dict[str, int]:
        return {"held_until_reader": self.held, "dropped_before_reader": self.dropped}
