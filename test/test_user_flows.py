"""The flows users type, through the firmware core, in lockstep: `menlo stand -y && menlo balance -y && menlo walk`
with every delay a person or a shell leaves between them.

The single-process loop (`vasimov_tools.closed_loop`) is the lockstep graph's proven bit-identical twin, so a sweep here
covers the graph's behaviour at a fraction of its cost; the graph itself is driven by the real CLI in
test_readme_flow.py. The SDK's cadence is reproduced: `stand` returns once the firmware is armed, `balance` sends
one zero velocity and returns in MOVE, `walk` re-sends its velocity every 0.1 s and ends with one zero.
"""

from __future__ import annotations

import math

import pytest

from vasimov.commands import DampCommand, StandCommand
from vasimov.frames import projected_gravity
from vasimov_edge.firmware import Mode
from vasimov_edge.policy.builtin import BuiltinController
from vasimov_tools import walk_bench as wb
from vasimov_tools.closed_loop import ClosedLoop

DELAYS = [round(0.25 * k, 2) for k in range(21)]  # 0 .. 5 s


def _walk_flow(balance_delay: float, walk_delay: float, vx: float = 0.3, duration: float = 3.0,
               rest: float = 4.0) -> dict[str, float | bool | str]:
    """stand; `balance_delay` s later balance; `walk_delay` s later walk vx for `duration`; then `rest` s."""
    loop = ClosedLoop.create(BuiltinController())
    lowest, worst_gz, latched = math.inf, -math.inf, False

    def tick() -> None:
        nonlocal lowest, worst_gz, latched
        out = loop.step_tick().firmware
        tr = loop.plant.truth()
        lowest = min(lowest, float(tr.base_pos[2]))
        worst_gz = max(worst_gz, float(projected_gravity(tr.base_quat)[2]))
        latched = latched or out.fault_latched

    wb.stand_and_balance(loop, balance_delay)
    for _ in range(round(walk_delay / wb.CONTROL_DT)):
        tick()
    start = loop.plant.truth()
    keepalive = wb.VelocityKeepalive(loop)
    for _ in range(round(duration / wb.CONTROL_DT)):
        keepalive.send(vx, 0.0, 0.0)
        tick()
    keepalive.send(0.0, 0.0, 0.0)  # the SDK's one zero at the end of a timed walk
    for _ in range(round(rest / wb.CONTROL_DT)):
        tick()
    end = loop.plant.truth()
    d = end.base_pos - start.base_pos
    fw = loop.last_fw
    assert fw is not None
    return {"forward": float(d[0] * math.cos(start.base_yaw) + d[1] * math.sin(start.base_yaw)),
            "lowest": lowest, "worst_gz": worst_gz, "latched": latched, "mode": fw.mode.name,
            "gantry": fw.gantry_engaged}


def _upright(r: dict) -> bool:
    return not r["latched"] and r["lowest"] > 0.5 and r["worst_gz"] < -0.9


@pytest.mark.parametrize("delay", DELAYS)
def test_stand_balance_walk_never_falls_whatever_the_delay_before_balance(delay: float) -> None:
    r = _walk_flow(balance_delay=delay, walk_delay=0.0)
    assert _upright(r), r
    assert r["mode"] == Mode.MOVE.name and not r["gantry"], r
    assert r["forward"] >= 0.6, r


@pytest.mark.parametrize("delay", DELAYS)
def test_stand_balance_walk_never_falls_whatever_the_delay_before_walk(delay: float) -> None:
    r = _walk_flow(balance_delay=0.0, walk_delay=delay)
    assert _upright(r), r
    assert r["forward"] >= 0.6, r


def test_the_gantry_lowers_the_robot_onto_its_feet_while_it_stands_up() -> None:
    """On the hook through STAND, soles on the floor carrying most of the weight by the end of the ramp; the hook
    comes off as the policy takes over and the robot stands on its own."""
    loop = ClosedLoop.create(BuiltinController())
    weight = float(loop.plant.model.body_subtreemass[1]) * 9.81
    boot_hook = loop.plant.gantry_hook_height
    for _ in range(10):
        loop.step_tick()
    tr = loop.plant.truth()
    assert tr.left_force == 0.0 and tr.right_force == 0.0  # limp, hanging: feet just clear of the floor
    wb.stand_and_balance(loop, balance_delay=2.0)  # wait out the ramp on the hook, then balance
    assert loop.plant.gantry_hook_height < boot_hook - 0.01  # it came down with the feet
    for _ in range(50):
        loop.step_tick()
    tr = loop.plant.truth()
    assert not loop.plant.gantry_engaged
    assert tr.left_force + tr.right_force == pytest.approx(weight, rel=0.2)
    assert 0.6 < tr.base_pos[2] < 0.63


def test_a_robot_left_standing_stays_on_the_hook_and_a_damp_leaves_it_hanging() -> None:
    loop = ClosedLoop.create(BuiltinController())
    loop.submit(StandCommand())
    for _ in range(round(6.0 / wb.CONTROL_DT)):
        fw = loop.step_tick().firmware
    assert fw.mode is Mode.STAND and fw.gantry_engaged
    loop.submit(DampCommand())
    for _ in range(round(3.0 / wb.CONTROL_DT)):
        fw = loop.step_tick().firmware
    tr = loop.plant.truth()
    assert fw.mode is Mode.DAMP and not fw.fault_latched and tr.base_pos[2] > 0.55
    assert projected_gravity(tr.base_quat)[2] < -0.99  # hanging upright
