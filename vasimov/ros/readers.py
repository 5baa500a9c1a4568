"""Has *that* node's reader matched this writer? For volatile messages a node must act on.

Why: a volatile message published before the acting node's reader has matched the writer is lost, and a writer's
match count does not say whose readers it counts. A recorder (`vasimov up --record`), a Foxglove client or a
`ros2 topic echo` may match first; a count alone then let a request through that only they heard (CI saw a fault
injection the plant never received because the edge's reader, on the same topic, had matched first).

DDS matches endpoints (SEDP) and ROS publishes its graph (node names) on separate channels, in no fixed order, so the
rule asks both: every named node has a reader in the graph, and the writer has matched at least as many readers as
the graph shows that can match it (QoS-compatible ones: an incompatible reader never matches and must not block).
"""

from __future__ import annotations

from typing import Any

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy


def unmatched_readers(node: Any, publisher: Any, names: tuple[str, ...]) -> list[str]:
    """The nodes of ``names`` not yet known to read ``publisher``'s topic with a QoS that can match it, or all of them
    while the writer has matched fewer readers than the graph holds compatible ones. Empty: publish."""
    if not names:
        return []
    matched = publisher.get_subscription_count()
    if matched == 0:
        return list(names)
    compatible = [info for info in node.get_subscriptions_info_by_topic(publisher.topic_name)
                  if can_match(publisher.qos_profile, info.qos_profile)]
    seen = {info.node_name for info in compatible}
    missing = [name for name in names if name not in seen]
    if missing:
        return missing
    return [] if matched >= len(compatible) else list(names)


def can_match(writer: QoSProfile, reader: QoSProfile) -> bool:
    """Whether DDS can match this reader to this writer on the two policies this project's writers set: a reliable
    reader needs a reliable writer, a transient-local reader a transient-local one. (rclpy's ``qos_check_compatible``
    reads a graph-reported "infinite" deadline and lease against a profile's 0 = default and calls every pair an
    error.)"""
    if reader.reliability == ReliabilityPolicy.RELIABLE and writer.reliability == ReliabilityPolicy.BEST_EFFORT:
        return False
    return not (reader.durability == DurabilityPolicy.TRANSIENT_LOCAL
                and writer.durability == DurabilityPolicy.VOLATILE)
