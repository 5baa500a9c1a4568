"""Link impairment in the UDP lane, seen by the real menlo-sdk (no graph: a state pump stands in for the node).

The SDK's own reactions are the point: the share of state samples it accepts under loss, ``LinkLostError`` from its
keepalive after a blackout longer than its 2 s ``link_timeout``, commands that arrive late, twice, or never.
Rates are compared as ratios against frames sent in the same window, so a loaded machine cannot fake or fail them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from menlo.asimov import LinkLostError, Robot
from test_udp_lane import HOST, HttpApi, HttpConfig, Rig, StatePump, UdpLane, UdpLaneConfig, free_udp_port, wait_for

from vasimov.commands import RobotCommand
from vasimov.link_impairment import PERFECT, Impairment


class TimedRig(Rig):
    """The rig, with the arrival time of every command."""

    arrivals: list[float]


@pytest.fixture
def rig() -> Iterator[TimedRig]:
    state_port = free_udp_port()
    received: list[tuple[RobotCommand, tuple[str, int]]] = []
    arrivals: list[float] = []

    def on_command(cmd: RobotCommand, peer: tuple[str, int]) -> None:
        arrivals.append(time.monotonic())
        received.append((cmd, peer))

    lane = UdpLane(on_command, UdpLaneConfig(command_bind=(HOST, 0), state_destination=(HOST, state_port),
                                             link_seed=1))
    lane.start()
    http = HttpApi(HttpConfig(host=HOST, port=0))
    http.start()
    pump = StatePump(lane, hz=200.0).start()
    r = TimedRig(lane, http, pump, state_port, received)
    r.arrivals = arrivals
    try:
        yield r
    finally:
        pump.stop()
        http.stop()
        lane.close()


class SampleCounter:
    """Counts the samples the SDK accepts (``on_state``, what `menlo status` counts for its rate)."""

    def __init__(self, robot: Robot) -> None:
        self.n = 0
        self._lock = threading.Lock()
        robot.on_state = self._seen

    def _seen(self, _state: object) -> None:
        with self._lock:
            self.n += 1


def _window(rig: Rig, counter: SampleCounter, seconds: float) -> tuple[int, int]:
    """(state frames the lane was handed, samples the SDK accepted) over `seconds`."""
    sent0, got0 = rig.lane.counters.get("tx_frames", 0) + _offered(rig), counter.n
    time.sleep(seconds)  # a measurement window, not a wait for a condition
    return rig.lane.counters.get("tx_frames", 0) + _offered(rig) - sent0, counter.n - got0


def _offered(rig: Rig) -> int:
    """Frames the impaired path took in but has not sent (lost or in flight): with tx_frames, all frames handed in."""
    c = rig.lane.link_counters["state"]
    return c["offered"] - c["released"]


def test_a_perfect_link_takes_the_direct_path(rig: TimedRig) -> None:
    robot = Robot(rig.config())
    try:
        robot.connect(timeout=3.0)
        robot.stand(wait=False)
        wait_for(lambda: len(rig.received) == 1, what="STAND")
    finally:
        robot.close()
    assert all(v == 0 for c in rig.lane.link_counters.values() for v in c.values())


def test_half_the_state_lost_the_sdk_accepts_half(rig: TimedRig) -> None:
    robot = Robot(rig.config())
    try:
        robot.connect(timeout=3.0)
        counter = SampleCounter(robot)
        sent, got = _window(rig, counter, 1.5)
        clean = got / sent
        rig.lane.set_link("state", Impairment(loss=0.5))
        sent_lossy, got_lossy = _window(rig, counter, 3.0)
        lossy = got_lossy / sent_lossy
        print(f"SDK accepted {got}/{sent} unimpaired ({clean:.3f}), {got_lossy}/{sent_lossy} at loss 0.5 "
              f"({lossy:.3f}): ratio {lossy / clean:.3f}")
        assert clean >= 0.95
        assert 0.40 <= lossy / clean <= 0.60
        c = rig.lane.link_counters["state"]
        assert c["lost"] > 0 and c["lost"] + c["released"] + c["queued"] == c["offered"]
        assert not robot.get_state().age_s > 0.5  # half of 200 Hz is still a fresh stream for the SDK
    finally:
        robot.close()


def test_a_three_second_blackout_is_link_lost_and_clearing_restores_the_stream(rig: TimedRig) -> None:
    robot = Robot(rig.config())
    lost: list[tuple[float, LinkLostError]] = []
    try:
        robot.connect(timeout=3.0)
        robot.on_link_lost = lambda exc: lost.append((time.monotonic(), exc))
        start = time.monotonic()
        rig.lane.set_link("state", Impairment(loss=1.0))
        wait_for(lambda: lost, 3.0, "the SDK's LinkLostError")
        elapsed = lost[0][0] - start
        assert 2.0 <= elapsed <= 3.0, elapsed  # link_timeout 2 s, checked by the 10 Hz keepalive
        assert "no state from" in str(lost[0][1])
        with pytest.raises(LinkLostError):
            robot.stand(wait=False)  # the session is dead until close() + connect()
        wait_for(lambda: time.monotonic() - start >= 3.0, 2.0, "the end of the 3 s blackout")
        rig.lane.set_link("state", PERFECT)
    finally:
        robot.close()
    again = Robot(rig.config())
    try:
        again.connect(timeout=3.0)  # the stream is back: a new session hears it at once
        assert again.get_state().age_s < 0.5
    finally:
        again.close()
    c = rig.lane.link_counters["state"]
    assert c["lost"] == c["offered"] > 100 and c["released"] == 0  # every frame of the blackout, counted


def test_commands_arrive_late_twice_or_never(rig: TimedRig) -> None:
    robot = Robot(rig.config())
    try:
        robot.connect(timeout=3.0)
        rig.lane.set_link("command", Impairment(delay_ms=400.0))
        sent_at = time.monotonic()
        robot.stand(wait=False)
        wait_for(lambda: len(rig.received) == 1, 2.0, "the delayed STAND")
        assert rig.arrivals[0] - sent_at >= 0.4

        rig.lane.set_link("command", Impairment(duplicate=1.0))
        robot.stand(wait=False)  # (not a DAMP: the robot's own gate folds a DAMP repeated within 20 ms)
        wait_for(lambda: len(rig.received) == 3, 2.0, "STAND twice")
        assert rig.commands()[1] == rig.commands()[2]  # the same datagram, same sequence

        rig.lane.set_link("command", Impairment(loss=1.0))
        robot.damp(wait=False)
        wait_for(lambda: rig.lane.link_counters["command"]["lost"] == 1, 2.0, "the DAMP to be lost")
        assert len(rig.received) == 3
    finally:
        robot.close()
    c = rig.lane.link_counters["command"]
    assert (c["offered"], c["delayed"], c["duplicated"], c["lost"]) == (3, 1, 1, 1)
