"""Lockstep start-up, the participants' side of `vasimov.lockstep_gate` (read that first: the protocol).

A participant subscribes to the plant's tick topic only once its other inputs are matched, then announces ready on
`topics.LOCKSTEP_READY`. Deferring the tick subscription matters: if a participant read ticks before, say, the
policy's answers could reach it, tick 0 would wait forever. The check runs on a steady-clock timer because sim time
does not move before the first tick. Observers never call anything here: reading the tick topic does not make anyone
a participant; only a declared name that announces ready does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rclpy.clock import Clock, ClockType
from std_msgs.msg import String

from vasimov.ros import qos, topics


def resolved(node: Any, topic: str) -> str:
    """The name `topic` has on the graph for this node, remaps applied. rclpy's graph queries (`count_publishers`,
    `get_*_info_by_topic`) expand a name but do not remap it, so under a namespace (the launch file's `set_remap`
    rules make the code's absolute names relative) the absolute name would find nobody and lockstep never start."""
    return node.resolve_topic_name(topic)


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


def announce_ready(node: Any) -> Any:
    """Tell the plant's lockstep gate that this node (by its name) is ready: call it right after subscribing to the
    tick topic. The announcement is latched, and the node keeps the publisher until it is destroyed: the plant reads
    its disappearance as the participant leaving."""
    pub = node.create_publisher(String, topics.LOCKSTEP_READY, qos.LATCHED)
    pub.publish(String(data=node.get_name()))
    return pub


def join_lockstep(node: Any, inputs: list[Any], subscribe_tick: Callable[[], None], outputs: list[Any] = ()) -> None:
    """A participant's whole join: subscribe to the tick topic once `inputs`/`outputs` are matched
    (`subscribe_when_ready`), then announce ready (the node holds the announcing publisher for its lifetime)."""

    def join() -> None:
        subscribe_tick()
        announce_ready(node)

    subscribe_when_ready(node, inputs, join, outputs)


def ready_announcers(node: Any) -> set[str]:
    """Node names holding a ready announcement on the graph now (the gate's view of who is still there)."""
    return {info.node_name for info in node.get_publishers_info_by_topic(resolved(node, topics.LOCKSTEP_READY))}


def tick_readers(node: Any) -> set[str]:
    """Node names reading the tick topic on the graph now."""
    return {info.node_name for info in node.get_subscriptions_info_by_topic(resolved(node, topics.PLANT_TICK))}


def sample_readers(node: Any) -> set[str]:
    """Node names reading the plant's per-period samples now (the camera takes part through them)."""
    return {info.node_name for info in node.get_subscriptions_info_by_topic(resolved(node, topics.PLANT_SAMPLES))}
