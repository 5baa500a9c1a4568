"""A command publisher that never publishes into the void: messages wait, in order and bounded, until a reader has
matched the writer.

Why: command topics are volatile (a command is about now, not for late joiners), so a message published before the
firmware's reader has matched the writer is simply lost -- and an inlet opens to clients (UDP, WebSocket) the moment
its node starts, while DDS discovery may still be pairing the writer with the edge. `menlo stand` typed at that
moment lost its STAND. Every command inlet publishes through one of these.

"A reader" means the node that acts on the commands (the edge, by name), not any reader: with `vasimov up --record`
the recorder also reads the command topics and may match first, and a count alone then let a STAND through that only
the bag heard (the same race the SDK bridge's sim requests had).

Thread-safe: inlets publish from their network threads; `flush()` runs on the node's executor (a timer). The timer
runs only while commands wait (before the edge's reader has matched, or while the edge is gone). Idle, it is
cancelled: a running 50 Hz timer was 50 executor wake-ups a second in every inlet node (two in the Foxglove bridge),
each a rebuild of rclpy's wait set, for nothing (docs/performance.md).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from rclpy.clock import Clock, ClockType

from vasimov.ros import node_names
from vasimov.ros.readers import unmatched_readers

#: messages kept while no reader has matched: ten seconds of an SDK's 10 Hz keepalive
MAX_WAITING = 100
FLUSH_PERIOD_S = 0.02


class CommandOutbox:
    """Wraps a publisher: `publish()` sends at once when a reader is matched and nothing is waiting, else queues."""

    def __init__(self, node: Any, publisher: Any, warn: Callable[[str, str], None],
                 max_waiting: int = MAX_WAITING, reader: str = node_names.EDGE) -> None:
        self.node = node
        self.publisher = publisher
        self.reader = reader
        self.reader_seen = False  # the reader has matched once (from then on a count above zero suffices)
        self.warn = warn
        self.max_waiting = max_waiting
        self.waiting: deque[Any] = deque()
        self.held = 0  # cumulative: messages that had to wait for a reader
        self.dropped = 0  # cumulative: oldest waiting messages dropped past max_waiting
        self.lock = threading.Lock()
        self.timer = node.create_timer(FLUSH_PERIOD_S, self.flush, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.timer.cancel()  # started by the first message that has to wait

    def publish(self, msg: Any) -> None:
        with self.lock:
            if self.waiting or not self.reader_matched():
                if len(self.waiting) >= self.max_waiting:
                    self.waiting.popleft()
                    self.dropped += 1
                    self.warn("outbox", f"no reader on {self.publisher.topic_name} yet: {self.dropped} oldest "
                                        "waiting commands dropped")
                self.waiting.append(msg)
                self.held += 1
                if self.timer.is_canceled():
                    self.timer.reset()  # flush() runs again until the queue is out
                return
        self.publisher.publish(msg)

    def flush(self) -> None:
        """Send what waits, in order, once a reader has matched; with nothing left waiting, stop the timer
        (``publish`` restarts it when a message has to wait)."""
        with self.lock:
            if not self.waiting:
                self.timer.cancel()
                return
        if not self.reader_matched():
            return
        with self.lock:  # a message arriving meanwhile queues behind these: order kept
            while self.waiting:
                self.publisher.publish(self.waiting.popleft())
            self.timer.cancel()

    @property
    def idle(self) -> bool:
        """The flush timer is stopped (nothing waits)."""
        return self.timer.is_canceled()

    def reader_matched(self) -> bool:
        """The acting node's reader has matched (``vasimov.ros.readers``); asked of the graph only until it first
        has, then a match count above zero suffices (the query is not free, and a flood publishes here thousands of
        times a second)."""
        if self.reader_seen:
            return self.publisher.get_subscription_count() > 0
        self.reader_seen = not unmatched_readers(self.node, self.publisher, (self.reader,))
        return self.reader_seen

    @property
    def counters(self) -> dict[str, int]:
        return {"held_until_reader": self.held, "dropped_before_reader": self.dropped}
