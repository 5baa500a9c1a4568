"""The lockstep start gate (vasimov.lockstep_gate), alone: declaration, ready handshake, timeouts, leaving."""

import pytest

from vasimov.lockstep_gate import GateError, GateState, LockstepGate, parse_participants

BOTH = ("edge", "policy")


def _gate(**kw) -> LockstepGate:
    return LockstepGate(BOTH, now=0.0, **kw)


def _texts(events) -> str:
    return " | ".join(f"{e.level}: {e.text}" for e in events)


def test_participants_are_parsed_from_the_launch_parameter():
    assert parse_participants("edge,policy") == BOTH
    assert parse_participants(" edge , policy,recorder ") == ("edge", "policy", "recorder")
    for bad in ("", " , ", "edge,edge", "edge,2", "/edge", "edge;policy"):
        with pytest.raises(GateError):
            parse_participants(bad)


def test_the_gate_opens_only_when_every_declared_participant_is_ready_reads_ticks_and_is_wired():
    g = _gate()
    assert "edge ready (1/2)" in _texts(g.announce("edge"))
    assert g.poll(0.1, BOTH, wired=True) == [] and g.state is GateState.WAITING  # policy not ready yet
    g.announce("policy")
    assert g.poll(0.2, ["edge"], wired=True) == [] and not g.is_open  # policy's tick reader not seen yet
    assert g.missing(["edge"]) == ["policy"]
    assert g.poll(0.3, BOTH, wired=False) == [] and not g.is_open  # the plant's writers still matching
    events = g.poll(0.4, BOTH, wired=True)
    assert g.is_open and "all participants ready (edge,policy)" in _texts(events)
    assert g.poll(0.5, BOTH, wired=True) == []  # opens once


def test_readers_of_the_tick_topic_are_not_participants():
    """An observer (a viewer, `ros2 topic echo`) reading ticks neither opens the gate nor holds it shut."""
    g = _gate()
    g.poll(0.0, ["foxglove_bridge", "binary_stream", "_ros2cli_123"], wired=True)
    assert not g.is_open
    g.announce("edge")
    g.announce("policy")
    g.poll(0.1, ["edge", "policy", "foxglove_bridge"], wired=True)
    assert g.is_open


def test_an_undeclared_announcement_is_logged_once_and_ignored():
    g = _gate()
    first = g.announce("recorder")
    assert len(first) == 1 and first[0].level == "warning" and "not a declared participant" in first[0].text
    assert g.announce("recorder") == []  # warned once
    g.announce("edge")
    g.poll(0.1, ["edge", "recorder", "policy"], wired=True)
    assert not g.is_open and g.missing(BOTH) == ["policy"]


def test_a_repeated_announcement_counts_once():
    g = _gate()
    g.announce("edge")
    assert g.announce("edge") == []
    assert g.ready == {"edge"}


def test_a_participant_that_never_comes_fails_the_gate_after_the_join_timeout_naming_it():
    g = _gate(join_timeout=30.0, progress_period=5.0)
    g.announce("edge")
    progress = g.poll(5.0, ["edge"], wired=True)
    assert len(progress) == 1 and progress[0].level == "info" and "policy not ready" in progress[0].text
    assert g.poll(6.0, ["edge"], wired=True) == []  # progress is rate-limited
    events = g.poll(30.0, ["edge"], wired=True)
    assert g.failed and events[0].level == "error"
    assert "within 30 s" in events[0].text and "policy not ready" in events[0].text
    assert g.poll(31.0, BOTH, wired=True) == [] and g.failed  # final


def test_a_zero_join_timeout_waits_forever():
    g = _gate(join_timeout=0.0)
    g.poll(1e6, [], wired=True)
    assert g.state is GateState.WAITING


def test_a_participant_leaving_before_the_start_is_waited_for_again():
    g = _gate()
    g.announce("edge")
    assert g.present(["edge"]) == []
    events = g.present([])  # edge's announcement dropped off the graph
    assert events[0].level == "warning" and "edge left before the start" in events[0].text
    g.announce("policy")
    g.poll(1.0, BOTH, wired=True)
    assert not g.is_open and g.missing(BOTH) == ["edge"]
    g.announce("edge")  # it came back (a new latched announcement)
    g.poll(2.0, BOTH, wired=True)
    assert g.is_open


def test_an_announcement_not_yet_on_the_graph_is_not_a_departure():
    """The message can arrive before the graph shows its publisher: only one seen and then gone has left."""
    g = _gate()
    g.announce("edge")
    assert g.present([]) == [] and g.ready == {"edge"}


def test_a_participant_leaving_after_the_start_fails_the_gate_at_once():
    g = _gate()
    g.announce("edge")
    g.announce("policy")
    g.present(BOTH)
    g.poll(0.1, BOTH, wired=True)
    assert g.is_open
    assert g.present(BOTH) == []
    events = g.present(["edge"])
    assert g.failed and events[0].level == "error" and "policy left the graph" in events[0].text
    assert g.failure == events[0].text


def test_a_participant_never_seen_announcing_that_leaves_after_the_start_still_fails_the_gate():
    """A short run: the gate opens (the graph shows both reading the tick topic) before any presence check saw the
    announcements' writers; a participant that then stops reading the tick topic has left."""
    g = _gate()
    g.announce("edge")
    g.announce("policy")
    g.poll(0.1, BOTH, wired=True)
    assert g.is_open and g.present(BOTH) == []
    events = g.present(["policy"])
    assert g.failed and "edge left the graph" in events[0].text


def test_a_gate_needs_a_participant():
    with pytest.raises(GateError):
        LockstepGate((), now=0.0)
