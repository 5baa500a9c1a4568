"""Command scripts: parsing, and a velocity entry that holds until the next entry (re-sent like a client's keepalive,
inside the firmware's 2 s staleness watchdog), on the pure player and in the single-process closed loop."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vasimov.commands import DampCommand, StandCommand, VelocityCommand
from vasimov_edge import command_script
from vasimov_edge.firmware import Mode
from vasimov_edge.policy.builtin import BuiltinController
from vasimov_tools.closed_loop import ClosedLoop

DT = 0.02  # control tick
README_SCRIPT = [{"t": 0.1, "cmd": "stand"}, {"t": 4.0, "cmd": "velocity", "vx": 0.2}, {"t": 9.0, "cmd": "damp"}]


def _play(entries: list[dict], until: float) -> list[tuple[float, object]]:
    """(tick time, command) for every command the player hands out on a 50 Hz tick clock up to ``until``."""
    player = command_script.ScriptPlayer(command_script.parse(entries))
    out = []
    for k in range(round(until / DT) + 1):
        t = k * DT
        out.extend((t, c) for c in player.due(t))
    return out


def test_a_velocity_entry_is_re_sent_every_keepalive_until_the_next_entry() -> None:
    sent = _play(README_SCRIPT, 12.0)
    assert isinstance(sent[0][1], StandCommand) and sent[0][0] == pytest.approx(0.1)
    velocities = [t for t, c in sent if isinstance(c, VelocityCommand)]
    assert all(c.vx == 0.2 for _, c in sent if isinstance(c, VelocityCommand))
    assert velocities[0] == pytest.approx(4.0) and velocities[-1] == pytest.approx(8.9)
    gaps = np.diff(velocities)
    assert np.allclose(gaps, command_script.KEEPALIVE_S)  # 0.1 s, far inside the 2 s watchdog
    assert len(velocities) == 50
    damp = [t for t, c in sent if isinstance(c, DampCommand)]
    assert damp == [pytest.approx(9.0)]
    assert not [t for t, c in sent if t > 9.0 + 1e-9]  # the DAMP entry ended the hold


def test_a_zero_velocity_is_not_held_and_a_held_one_lasts_to_the_end() -> None:
    sent = _play([{"t": 1.0, "cmd": "velocity"}, {"t": 2.0, "cmd": "velocity", "vyaw": -0.3}], 5.0)
    zero = [t for t, c in sent if isinstance(c, VelocityCommand) and c.vyaw == 0.0]
    assert zero == [pytest.approx(1.0)]  # sent once: silence gives the same zero from the watchdog
    held = [t for t, c in sent if isinstance(c, VelocityCommand) and c.vyaw == -0.3]
    assert held[0] == pytest.approx(2.0) and held[-1] == pytest.approx(5.0) and len(held) == 31


def test_any_entry_ends_a_hold_and_rewind_starts_over() -> None:
    entries = [{"t": 0.5, "cmd": "velocity", "vx": 0.1}, {"t": 1.0, "cmd": "stand"}]
    player = command_script.ScriptPlayer(command_script.parse(entries))
    first = [(k * DT, c) for k in range(100) for c in player.due(k * DT)]
    assert [t for t, c in first if isinstance(c, VelocityCommand)] == pytest.approx([0.5, 0.6, 0.7, 0.8, 0.9])
    player.rewind()
    again = [(k * DT, c) for k in range(100) for c in player.due(k * DT)]
    assert again == first


def test_keepalive_period_is_validated() -> None:
    for bad in (0.0, -1.0, math.nan):
        with pytest.raises(command_script.ScriptError):
            command_script.ScriptPlayer([], keepalive_s=bad)


def test_readme_script_walks_five_seconds_in_the_closed_loop() -> None:
    """The README's example in the lockstep single-process loop (the graph's data flow): the firmware follows
    vx 0.2 from t = 4.0 s to the DAMP at 9.0 s, 5 s, not the 2 s its staleness watchdog would allow a single
    packet, and the robot walks forward the whole time."""
    loop = ClosedLoop.create(BuiltinController())
    player = command_script.ScriptPlayer(command_script.parse(README_SCRIPT))
    followed: list[float] = []
    pos: dict[float, np.ndarray] = {}
    while loop.firmware_time < 9.0 - 1e-9:
        t = loop.firmware_time
        for cmd in player.due(t):
            loop.submit(cmd)
        rec = loop.step_tick()
        if rec.firmware.mode is Mode.MOVE and rec.firmware.velocity_command[0] == pytest.approx(0.2):
            followed.append(t)
        for mark in (4.0, 6.5, 9.0 - DT):
            if abs(t - mark) < 1e-9:
                pos[mark] = loop.plant.truth().base_pos.copy()
    assert followed[0] == pytest.approx(4.0) and followed[-1] == pytest.approx(9.0 - DT)
    assert len(followed) == round(5.0 / DT)  # every tick from 4.0 to 8.98 s
    assert loop.firmware.counters["velocity_timeouts"] == 0
    late = float(pos[9.0 - DT][0] - pos[6.5][0])  # after the 2 s a single packet would have lasted (+0.5 s)
    total = float(pos[9.0 - DT][0] - pos[4.0][0])
    print(f"README script: forward {total:.2f} m over 4.0-9.0 s, {late:.2f} m of it after 6.5 s")
    assert late > 0.25 and total > 0.5, (late, total)
