"""A node whose publishers and subscriptions carry no QoS-event handlers unless asked for.

Why: rclpy gives every publisher and subscription two default event handlers (incompatible QoS, incompatible type),
each one more waitable that the classic executor re-enters, adds to its wait set and checks on every wake-up, and
one more condition Fast DDS attaches and detaches in every wait. The plant has 15 publishers: 30 handlers walked
50 times a second for warnings that only fire when someone connects with a mismatched profile. The hot nodes of
the control loop are built on this class; measured in docs/performance.md. A call that passes its own
``event_callbacks`` keeps them.
"""

from __future__ import annotations

from typing import Any

from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.node import Node

_NO_PUBLISHER_EVENTS = PublisherEventCallbacks(use_default_callbacks=False)
_NO_SUBSCRIPTION_EVENTS = SubscriptionEventCallbacks(use_default_callbacks=False)


class LeanNode(Node):
    """``rclpy.node.Node`` with ``event_callbacks`` defaulting to none (see the module docstring)."""

    def create_publisher(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("event_callbacks", _NO_PUBLISHER_EVENTS)
        return super().create_publisher(*args, **kwargs)

    def create_subscription(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("event_callbacks", _NO_SUBSCRIPTION_EVENTS)
        return super().create_subscription(*args, **kwargs)
