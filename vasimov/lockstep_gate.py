"""The lockstep start gate: the plant publishes tick 0 only once every declared participant is ready.

Why a gate at all: in lockstep nothing moves until tick k is answered, and a tick published before a participant reads
the tick topic is never delivered to it (volatile topic): tick 0 would wait forever. Why by declaration: participants
used to be counted as readers of the tick topic, so any observer reading it (a viewer, `ros2 topic echo`) started the
run early or had to know to stay away. Now the participants are named, and readers of the tick topic are only readers.

The protocol (ROS side in `vasimov.ros.lockstep`):

1. The plant's parameter ``lockstep_participants`` declares the participants by node name, comma-separated
   (launch/bringup.launch.yaml: ``edge,policy``; ``vasimov up --record`` appends ``recorder``).
2. A participant subscribes to the tick topic once its own inputs are matched, then announces ready: it publishes its
   node name on ``topics.LOCKSTEP_READY`` (latched, so a plant that starts later still reads it)
   (`vasimov.ros.lockstep.join_lockstep` does both; `announce_ready` only the announcement).
3. The gate opens when every declared participant has announced ready, the plant's graph shows each one reading the
   tick topic, and the plant's writers have matched every reader it knows of (``wired``). Then tick 0 goes out.

Defined failures, each logged:

* an announcement from an undeclared name is ignored (a warning names it and the declared set);
* while waiting, a progress line names who is missing every ``progress_period`` seconds;
* a participant that never comes: after ``join_timeout`` seconds (0 = wait forever) the gate FAILS, naming the missing
  ones; the plant exits non-zero (a lockstep run is a batch run: better a clear error than a silent hang);
* a participant that leaves (its announcement's node drops off the graph) before the gate opens is waiting for
  again; after it opened (when the node stops reading the tick topic) the gate FAILS at once: nobody would ever
  answer the current tick.

Testing one node alone (no graph): declare the fake peer's node name, e.g. start the plant with
``lockstep_participants:=fake_edge``, and have that node subscribe to the tick topic, then call
``vasimov.ros.lockstep.announce_ready(node)`` (it publishes ``node.get_name()``); the plant also waits until some node
publishes motor commands. A lone edge or policy runner needs no gate: it joins the tick topic (and announces) once a
publisher of its other input exists, so a fake peer only has to publish that input and the ticks.

This module is pure (no rclpy): the plant feeds it announcements, graph observations and the time.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a ROS node name (no namespace)


class GateError(ValueError):
    """A participant declaration that cannot be right (a configuration error, raised at start-up)."""


def parse_participants(text: str) -> tuple[str, ...]:
    """``"edge, policy"`` -> ``("edge", "policy")``: node names, comma-separated, at least one, no duplicates."""
    names = tuple(n.strip() for n in str(text).split(",") if n.strip())
    if not names:
        raise GateError("lockstep_participants is empty: a lockstep run needs at least one participant to answer "
                        "its ticks (e.g. 'edge,policy')")
    bad = [n for n in names if not NAME.fullmatch(n)]
    if bad:
        raise GateError(f"lockstep_participants: {bad} are not node names (comma-separated names, e.g. 'edge,policy')")
    if len(set(names)) != len(names):
        raise GateError(f"lockstep_participants: {list(names)} names a participant twice")
    return names


class GateState(enum.Enum):
    WAITING = "waiting"
    OPEN = "open"
    FAILED = "failed"


@dataclass(frozen=True)
class GateEvent:
    """Something the owner should log: ``level`` is ``info``, ``warning`` or ``error``."""

    level: str
    text: str


class LockstepGate:
    """Declared participants, their ready announcements, and the decision to start (or to give up)."""

    def __init__(self, participants: Iterable[str], *, now: float, join_timeout: float = 0.0,
                 progress_period: float = 5.0) -> None:
        self.participants: tuple[str, ...] = tuple(participants)
        if not self.participants:
            raise GateError("a lockstep gate needs at least one participant")
        self.join_timeout = float(join_timeout)
        self.progress_period = float(progress_period)
        self.state = GateState.WAITING
        self.ready: set[str] = set()
        self.seen: set[str] = set()  # ready participants the graph has shown with their announcement
        self.undeclared: set[str] = set()  # warned about once each
        self.started = now
        self.next_progress = now + progress_period
        self.failure: str | None = None

    # -- inputs --------------------------------------------------------------------------------------------------
    def announce(self, name: str) -> list[GateEvent]:
        """A participant said it is ready (it reads the tick topic and its own inputs are matched)."""
        if name not in self.participants:
            if name in self.undeclared:
                return []
            self.undeclared.add(name)
            declared = ",".join(self.participants)
            return [GateEvent("warning", f"lockstep: ignoring a ready announcement from {name!r}, which is not a "
                                         f"declared participant (lockstep_participants: {declared})")]
        if name in self.ready or self.state is not GateState.WAITING:
            return []  # the latched announcement again (a re-match): nothing new
        self.ready.add(name)
        return [GateEvent("info", f"lockstep: participant {name} ready ({len(self.ready)}/{len(self.participants)})")]

    def present(self, names: Iterable[str]) -> list[GateEvent]:
        """Who the graph shows now: before the start the nodes holding a ready announcement, after it the nodes
        reading the tick topic. A ready participant seen once and now gone has left: before the start it is waited
        for again; after the start the gate fails."""
        names = set(names)
        events: list[GateEvent] = []
        for name in sorted(self.ready):
            if name in names:
                self.seen.add(name)
            elif name in self.seen:
                self.seen.discard(name)
                if self.state is GateState.OPEN:
                    self.state = GateState.FAILED
                    self.failure = (f"lockstep: participant {name} left the graph; nobody will answer the current "
                                    "tick, stopping")
                    events.append(GateEvent("error", self.failure))
                elif self.state is GateState.WAITING:
                    self.ready.discard(name)
                    events.append(GateEvent("warning", f"lockstep: participant {name} left before the start; "
                                                       "waiting for it again"))
        return events

    def poll(self, now: float, tick_readers: Iterable[str], wired: bool) -> list[GateEvent]:
        """Decide: open (everyone ready, reading the tick topic, and ``wired``: the plant's writers matched every
        reader it knows of), fail (join timeout), or report progress."""
        if self.state is not GateState.WAITING:
            return []
        readers = set(tick_readers)
        if not self.missing(readers) and wired:
            self.state = GateState.OPEN
            # the graph shows every participant reading the tick topic now: from here on that is its presence (its
            # announcement's writer may not be on the graph yet, and a run can end before it ever is)
            self.seen = set(self.participants)
            return [GateEvent("info", f"lockstep: all participants ready ({','.join(self.participants)}) after "
                                      f"{now - self.started:.1f} s; starting")]
        if self.join_timeout > 0 and now - self.started >= self.join_timeout:
            self.state = GateState.FAILED
            self.failure = (f"lockstep: not every participant was ready within {self.join_timeout:g} s: "
                            f"{self.describe(readers, wired)}")
            return [GateEvent("error", self.failure)]
        if now >= self.next_progress:
            self.next_progress = now + self.progress_period
            return [GateEvent("info", f"lockstep: waiting {now - self.started:.0f} s: {self.describe(readers, wired)}")]
        return []

    # -- views ---------------------------------------------------------------------------------------------------
    @property
    def is_open(self) -> bool:
        return self.state is GateState.OPEN

    @property
    def failed(self) -> bool:
        return self.state is GateState.FAILED

    def missing(self, tick_readers: Iterable[str] = ()) -> list[str]:
        """Declared participants not yet both ready and seen reading the tick topic."""
        readers = set(tick_readers)
        return [n for n in self.participants if n not in self.ready or n not in readers]

    def describe(self, tick_readers: Iterable[str], wired: bool) -> str:
        readers = set(tick_readers)
        parts = []
        for n in self.participants:
            if n not in self.ready:
                parts.append(f"{n} not ready")
            elif n not in readers:
                parts.append(f"{n} ready, its tick reader not on the graph yet")
        if not parts and not wired:
            parts.append("every participant ready; the plant's writers are still matching their readers")
        return "; ".join(parts) or "nothing missing"
