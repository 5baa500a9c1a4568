"""Lockstep start-up: a participant subscribes to the plant's tick topic only once its other inputs are matched.

The plant starts the first tick when its tick readers include every participant; if a participant joined the tick
topic before, say, the policy's answers could reach it, tick 0 would wait forever. Deferring the tick subscription
until the node's other subscriptions see their publishers turns "joined the tick topic" into "ready". The check runs
on a steady-clock timer because sim time does not move before the first tick.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rclpy.clock import Clock, ClockType


def writers_matched(node: Any, publishers: list[Any]) -> bool:
    """Every reader the graph knows of is matched by each writer itself: a volatile writer delivers only to readers
    it has matched when it writes, and a reader seeing the writer does not imply the reverse."""
    return all(pub.get_subscription_count() >= node.count_subscribers(pub.topic_name) for pub in publishers)


def subscribe_when_ready(node: Any, inputs: list[Any], subscribe: Callable[[], None], outputs: list[Any] = (),
                         period_s: float = 0.02) -> None:
    """Call `subscribe()` once every subscription in `inputs` has a matched publisher and every publisher in
    `outputs` has matched every reader the graph knows of (so no reader, a recorder say, misses tick 0)."""
    state: dict[str, Any] = {}

    def check() -> None:
        if all(sub.get_publisher_count() > 0 for sub in inputs) and writers_matched(node, list(outputs)):
            state["timer"].cancel()
            node.destroy_timer(state["timer"])
            subscribe()

    state["timer"] = node.create_timer(period_s, check, clock=Clock(clock_type=ClockType.STEADY_TIME))
