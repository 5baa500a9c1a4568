"""`vasimov.ros.readers` and the command outbox on real rclpy endpoints in one process: a message for the edge waits
while only another node (a recorder) reads its topic, and goes out, in order, once the edge's reader has matched."""

from __future__ import annotations

import pytest
from harness import next_domain_id, wait_for
from rosprobe import RosProbe
from std_msgs.msg import String

from vasimov.ros import node_names, qos
from vasimov.ros.command_outbox import CommandOutbox
from vasimov.ros.readers import unmatched_readers

TOPIC = "/vasimov/test/commands"


@pytest.fixture
def probes():
    made: list[RosProbe] = []
    domain = next_domain_id()

    def make(name: str) -> RosProbe:
        made.append(RosProbe(domain, name=name))
        return made[-1]

    yield make
    for p in made:
        if p.context.ok():  # a test may have closed one itself (a node leaving)
            p.close()


def test_another_nodes_reader_is_not_the_acting_one(probes):
    writer = probes("sdk_bridge")
    pub = writer.publisher(TOPIC, String, qos.COMMANDS)
    assert unmatched_readers(writer.node, pub, (node_names.EDGE,)) == [node_names.EDGE]
    probes("recorder").subscribe(TOPIC, String, qos.COMMANDS)
    wait_for(lambda: pub.get_subscription_count() == 1, 20, "the recorder's reader to match")
    assert unmatched_readers(writer.node, pub, (node_names.EDGE,)) == [node_names.EDGE]
    # an edge whose reader cannot match this writer (transient local against volatile) does not count either
    probes(node_names.EDGE).subscribe(TOPIC, String, qos.LATCHED)
    wait_for(lambda: writer.node.count_subscribers(TOPIC) == 2, 20, "the edge's reader in the graph")
    assert unmatched_readers(writer.node, pub, (node_names.EDGE,)) == [node_names.EDGE]
    assert unmatched_readers(writer.node, pub, ()) == []


def test_the_outbox_holds_commands_until_the_edge_reads(probes):
    writer = probes("sdk_bridge")
    warnings: list[str] = []
    outbox = CommandOutbox(writer.node, writer.publisher(TOPIC, String, qos.COMMANDS),
                           lambda key, text: warnings.append(text))
    assert outbox.idle, "the flush timer runs with nothing waiting"
    recorder = probes("recorder")
    recorder.subscribe(TOPIC, String, qos.COMMANDS)
    wait_for(lambda: outbox.publisher.get_subscription_count() == 1, 20, "the recorder's reader to match")
    outbox.publish(String(data="stand"))  # from this thread, while the probe's executor spins the timer
    assert outbox.counters["held_until_reader"] == 1 and len(outbox.waiting) == 1, "went out with no edge reading"
    assert not outbox.idle, "a held command did not start the flush timer"
    edge = probes(node_names.EDGE)
    edge.subscribe(TOPIC, String, qos.COMMANDS)
    wait_for(lambda: edge.count(TOPIC) == 1, 20, "the held command at the edge")
    wait_for(lambda: outbox.idle, 5, "the flush timer to stop once the queue is out")
    outbox.publish(String(data="balance"))  # the edge has matched: straight out, behind the held one
    assert outbox.idle and not outbox.waiting
    wait_for(lambda: edge.count(TOPIC) == 2, 20, "the next command at the edge")
    assert [m.data for m in edge.all(TOPIC)] == ["stand", "balance"]
    wait_for(lambda: recorder.count(TOPIC) == 2, 20, "both commands in the recording too")
    assert outbox.counters == {"held_until_reader": 1, "dropped_before_reader": 0} and not warnings


def test_the_outbox_holds_again_while_the_edge_is_gone(probes):
    """The edge leaves (a crash, a restart): commands wait again, the timer runs again, and they reach the next
    edge in order."""
    writer = probes("sdk_bridge")
    outbox = CommandOutbox(writer.node, writer.publisher(TOPIC, String, qos.COMMANDS), lambda key, text: None)
    first = probes(node_names.EDGE)
    first.subscribe(TOPIC, String, qos.COMMANDS)
    wait_for(lambda: outbox.reader_matched(), 20, "the first edge's reader to match")
    outbox.publish(String(data="stand"))
    wait_for(lambda: first.count(TOPIC) == 1, 20, "the first command at the first edge")
    assert outbox.idle
    first.close()
    wait_for(lambda: outbox.publisher.get_subscription_count() == 0, 20, "the first edge to leave")
    outbox.publish(String(data="balance"))
    outbox.publish(String(data="walk"))
    assert list(m.data for m in outbox.waiting) == ["balance", "walk"] and not outbox.idle
    second = probes(node_names.EDGE)
    second.subscribe(TOPIC, String, qos.COMMANDS)
    wait_for(lambda: second.count(TOPIC) == 2, 20, "the held commands at the second edge")
    assert [m.data for m in second.all(TOPIC)] == ["balance", "walk"]
    wait_for(lambda: outbox.idle, 5, "the flush timer to stop again")
