"""The recovery chain through the whole node graph in lockstep (issue 21's "lockstep graph test"): `vasimov up
--lockstep --recovery` with the built-in walker, a command script that stands and balances the robot and then
throws it with a 700 N push. The firmware state on `/vasimov/firmware/state` tells the chain's phases; they must be
what the SDK is promised (docs/recovery.md, "What the SDK sees": STAND, `FALL_DETECTED` raised, `error_flags` 0,
never the latch) and, tick for tick, what the single-process closed loop computes from the same script: the chain
runs in the firmware core that both drive, so the graph adds nothing and loses nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import Graph, wait_for
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosprobe import RosProbe
from vasimov_msgs.msg import FirmwareState, PlantState

from vasimov.alerts import ALERT_FALL_DETECTED
from vasimov.ros import topics

pytestmark = pytest.mark.graph

DURATION = 10.5  # the reference loop: FALLING at 6.4 s, SETTLING at 8.4 s, GETUP_FRONT at 9.5 s
PUSH_T = 6.0  # s: the push's firmware time, a whole number of control ticks
PUSH = (700.0, 0.0, 0.0)
PUSH_S = 0.3
SCRIPT = (f"- {{t: 0.1, cmd: stand}}\n"
          f"- {{t: 4.0, cmd: velocity, vx: 0.0}}\n"  # balance: MOVE/POLICY, off the gantry hook
          f"- {{t: {PUSH_T}, cmd: push, body: pelvis_link, force: {list(PUSH)}, duration: {PUSH_S}}}\n")


def _graph_run(script: Path) -> list[FirmwareState]:
    g = Graph("--lockstep", "--recovery", "--duration", str(DURATION), "--script", str(script), "foxglove:=false",
              "lockstep_participants:=edge,policy,test_probe")
    probe = RosProbe(g.domain)
    try:
        deep = QoSProfile(depth=100_000, reliability=ReliabilityPolicy.RELIABLE)  # a slow probe must not drop
        sub = probe.subscribe(topics.FIRMWARE_STATE, FirmwareState, deep)
        wait_for(lambda: sub.get_publisher_count() > 0, 60, "the probe's reader to match the edge")
        probe.subscribe(topics.PLANT_TICK, PlantState, deep)
        probe.announce_lockstep_ready()
        rc = g.proc.wait(timeout=300)
        assert rc == 0, g.output()[-3000:]
        last = round(DURATION / 0.02)
        wait_for(lambda: (m := probe.last(topics.FIRMWARE_STATE)) is not None and m.tick >= last - 1, 60,
                 "the last firmware states delivered")
        return probe.all(topics.FIRMWARE_STATE)
    finally:
        probe.close()
        g.stop()


def _reference_phases(script: Path, ticks: int) -> dict[int, tuple[str, str, int]]:
    """The same script in the single-process closed loop (firmware core with recovery on, the built-in walker): per
    control tick, the firmware's mode, the chain's phase and error_flags. The plant node applies a script's push
    from the control period of the tick it falls on; here that is the step before that tick's physics."""
    from vasimov_edge import command_script
    from vasimov_edge.firmware import FirmwareParams
    from vasimov_edge.policy.registry import make_backend
    from vasimov_tools.closed_loop import ClosedLoop

    loop = ClosedLoop.create(make_backend("builtin"), seed=0, firmware_params=FirmwareParams(recovery=True))
    player = command_script.ScriptPlayer(command_script.load(str(script)))
    push_tick = round(PUSH_T / loop.control_period)
    out: dict[int, tuple[str, str, int]] = {}
    for _ in range(ticks):
        for cmd in player.due(loop.firmware_time):
            loop.submit(cmd)
        if loop.tick == push_tick:
            loop.plant.apply_push("pelvis_link", PUSH, PUSH_S)
        rec = loop.step_tick()
        out[rec.tick] = (rec.firmware.mode.name, rec.firmware.recovery_phase, int(rec.firmware.error_flags))
    return out


def test_a_knock_down_in_the_graph_runs_the_chain_as_the_single_process_loop_does(tmp_path: Path):
    script = tmp_path / "knock_down.yaml"
    script.write_text(SCRIPT)
    states = _graph_run(script)
    by_tick = {int(m.tick): m for m in states}
    push_tick = round(PUSH_T / 0.02)
    # the chain took the fall: it tripped after the push, protected, settled and started a get-up
    phases = [by_tick[k].recovery_phase for k in sorted(by_tick)]
    seen = list(dict.fromkeys(p for p in phases if p))
    assert seen[:2] == ["FALLING", "SETTLING"], seen
    assert any(p in ("GETUP_FRONT", "GETUP_BACK", "ROLLING") for p in seen), seen
    first_fall = min(k for k, m in by_tick.items() if m.recovery_phase == "FALLING")
    assert push_tick < first_fall <= push_tick + 50, (push_tick, first_fall)
    # what the SDK sees while the chain runs: STAND, the fall alert raised, nothing latched, never DAMP
    chain = [m for m in states if m.recovery_phase]
    assert all(m.mode == FirmwareState.MODE_STAND and m.error_flags == 0 for m in chain)
    assert all(any(a.id == ALERT_FALL_DETECTED for a in m.alerts) for m in chain)
    assert all(m.mode != FirmwareState.MODE_DAMP for m in states if m.tick > push_tick)
    last = states[-1]
    counters = dict(zip(last.counter_names, last.counter_values, strict=True))
    assert counters["recovery_falls"] == 1 and counters.get("fall_latches", 0) == 0, counters
    # tick for tick what the single-process loop computes (the probe may miss the first few states, never later)
    ref = _reference_phases(script, round(DURATION / 0.02) + 1)
    common = sorted(by_tick.keys() & ref.keys())
    assert common[0] <= 50 and common[-1] >= push_tick + 100, (common[0], common[-1])
    got = {k: (by_tick[k].mode_name, by_tick[k].recovery_phase, int(by_tick[k].error_flags)) for k in common}
    diff = [(k, got[k], ref[k]) for k in common if got[k] != ref[k]]
    assert not diff, f"graph vs single-process loop, first differences: {diff[:5]}"
