"""Take every message already delivered to a node's subscriptions, without the executor's per-message overhead.

Why: rclpy's executor rebuilds a wait set and wraps each callback in a coroutine for *every* message. The observers
(recorder, Foxglove bridge) receive every message of the graph, ~25 per lockstep tick at thousands of ticks per
second, and on a 2-core machine that overhead is taken straight from the lockstep critical path. Spinning once to
wait, then draining each subscription's queue directly (one ``take_message`` per message, callback called inline)
is the same work minus the executor's share.

Only for nodes whose subscription callbacks do not depend on the executor's ordering between topics (the
observers); timers, services and guard conditions still run through the executor.
"""

from __future__ import annotations

import threading
from typing import Any

from rclpy.exceptions import InvalidHandle
from rclpy.executors import Executor
from rclpy.node import Node


def take_pending(node: Node, budget: int = 10_000) -> int:
    """Run the callback of every message already waiting on ``node``'s subscriptions, at most ``budget`` in all
    (so timers and services get their turn under a flood); return how many ran."""
    done = 0
    for sub in list(node.subscriptions):
        try:
            with sub.handle:
                while done < budget:
                    got: Any = sub.handle.take_message(sub.msg_type, sub.raw)
                    if got is None:
                        break
                    done += 1
                    sub.callback(got[0])
        except InvalidHandle:
            continue  # destroyed meanwhile (a Foxglove client left)
        if done >= budget:
            break
    return done


def spin_once_batched(executor: Executor, node: Node, timeout_sec: float,
                      stop: threading.Event | None = None) -> int:
    """Wait for work once through the executor (which also serves timers and services), then drain the
    subscriptions directly; returns the number of messages taken directly. ``stop`` ends the draining: an observer
    at the lowest priority under a flood (two twins in one domain) could otherwise drain for ever and miss Ctrl-C."""
    executor.spin_once(timeout_sec=timeout_sec)
    taken = 0
    while not (stop is not None and stop.is_set()) and (n := take_pending(node)):
        taken += n
        if n < 10_000:
            break
    return taken
