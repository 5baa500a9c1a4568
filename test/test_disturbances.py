"""Disturbances and boot states without a graph: the rules (sustained force, boot names, script entries), the
plant core's sustained forces and boot poses, the firmware's boot states, and the bridge's view of the events."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from vasimov import joints
from vasimov.boot_states import BOOT_NAMES, BootError, BootState, parse_boot
from vasimov.frames import projected_gravity
from vasimov.sim_control import (
    MAX_SUSTAINED_FORCE_N,
    ROBOT_WEIGHT_N,
    PushError,
    event_json,
    parse_force,
    parse_push,
)
from vasimov_bridge.sim_disturb import DisturbanceView
from vasimov_edge import command_script
from vasimov_edge.firmware import Firmware, FirmwareInputs, Mode
from vasimov_plant.boot_pose import boot
from vasimov_plant.physics import PlantCore

Z25 = np.zeros(joints.NUM_JOINTS)


# -- rules -----------------------------------------------------------------------------------------------------------
def test_the_sustained_force_bound_is_the_robots_weight() -> None:
    assert pytest.approx(32.224913 * 9.81) == ROBOT_WEIGHT_N
    assert MAX_SUSTAINED_FORCE_N == ROBOT_WEIGHT_N
    ok = parse_force({"body": "pelvis_link", "force": [300, 0, 80]})
    assert ok.force == (300.0, 0.0, 80.0) and not ok.clears
    assert parse_force({"body": "pelvis_link", "force": [0, 0, 0]}).clears


@pytest.mark.parametrize(("payload", "rule"), [
    ({"body": "pelvis_link", "force": [320, 0, 0]}, "exceeds 316.1 N, the robot's weight"),
    ({"body": "pelvis_link", "force": [1, 0]}, "list of 3 numbers"),
    ({"body": "pelvis_link", "force": [math.nan, 0, 0]}, "finite"),
    ({"body": "pelvis_link", "force": [1, True, 0]}, "list of 3 numbers"),
    ({"body": "", "force": [1, 0, 0]}, "non-empty body"),
    ({"body": "pelvis_link", "force": [1, 0, 0], "duration": 2}, "no duration"),
    ([1, 2, 3], "JSON object"),
])
def test_a_bad_sustained_force_names_the_rule(payload: object, rule: str) -> None:
    with pytest.raises(PushError, match=rule):
        parse_force(payload)


@pytest.mark.parametrize("duration", [None, "hold"])
def test_a_push_without_a_duration_points_to_the_sustained_force(duration: object) -> None:
    with pytest.raises(PushError, match="sustained force"):
        parse_push({"body": "pelvis_link", "force": [10, 0, 0], "duration": duration})


def test_boot_names_and_numbers() -> None:
    assert BOOT_NAMES == ("gantry", "standing", "lying_back", "lying_front")
    assert parse_boot(None) is parse_boot("") is BootState.GANTRY
    assert parse_boot("Lying_Front") is BootState.LYING_FRONT and parse_boot(1) is BootState.STANDING
    for bad in ("sitting", 7, True, 1.0):
        with pytest.raises(BootError, match="valid: gantry, standing, lying_back, lying_front"):
            parse_boot(bad)


def test_event_lines_are_compact_json_and_refuse_nan() -> None:
    assert json.loads(event_json("push", epoch=1, force=[1.0, 0, 0])) == {"event": "push", "epoch": 1,
                                                                          "force": [1.0, 0, 0]}
    with pytest.raises(ValueError):
        event_json("push", force=[math.nan])


# -- command scripts -------------------------------------------------------------------------------------------------
def test_script_push_and_force_entries_are_checked_at_load_and_played_apart_from_commands() -> None:
    entries = command_script.parse([
        {"t": 0.1, "cmd": "stand"},
        {"t": 2.0, "cmd": "push", "body": "pelvis_link", "force": [80, 0, 0], "duration": 0.15},
        {"t": 3.0, "cmd": "force", "body": "waist_yaw_link", "force": [0, 30, 0]},
        {"t": 4.0, "cmd": "force", "body": "waist_yaw_link", "force": [0, 0, 0]},
    ])
    player = command_script.ScriptPlayer(entries)
    assert [e.t for e in player.entries] == [0.1]
    assert player.disturbances_due(1.98) == []
    push = player.disturbances_due(2.0)
    assert push == [command_script.Disturbance("pelvis_link", (80.0, 0.0, 0.0), 0.15)]
    rest = player.disturbances_due(10.0)
    assert [d.duration for d in rest] == [None, None] and rest[1].force == (0.0, 0.0, 0.0)
    assert player.disturbances_due(10.0) == []
    player.rewind()
    assert len(player.disturbances_due(10.0)) == 3


@pytest.mark.parametrize(("entry", "rule"), [
    ({"t": 1, "cmd": "push", "body": "no_such_link", "force": [1, 0, 0], "duration": 0.1}, "unknown body 'no_such"),
    ({"t": 1, "cmd": "push", "body": "pelvis_link", "force": [2500, 0, 0], "duration": 0.1}, "exceeds 2000"),
    ({"t": 1, "cmd": "push", "body": "pelvis_link", "force": [500, 0, 0], "duration": 2.0}, "impulse"),
    ({"t": 1, "cmd": "push", "body": "pelvis_link", "force": [50, 0, 0]}, "needs a duration"),
    ({"t": 1, "cmd": "force", "body": "pelvis_link", "force": [0, 0, 400]}, "robot's weight"),
])
def test_a_bad_script_disturbance_fails_the_load_naming_entry_and_rule(entry: dict, rule: str) -> None:
    with pytest.raises(command_script.ScriptError, match=rf"entry 0: {entry['cmd']}: .*{rule}"):
        command_script.parse([entry])


# -- plant core ------------------------------------------------------------------------------------------------------
def test_a_sustained_force_adds_to_a_push_holds_after_it_and_clears() -> None:
    core = PlantCore()
    bid = core.index.body_ids["pelvis_link"]
    core.set_force("pelvis_link", [0.0, 30.0, 0.0])
    core.apply_push("pelvis_link", [100.0, 0.0, 0.0], 2 * core.dt)
    assert core.data.xfrc_applied[bid, :3].tolist() == [100.0, 30.0, 0.0]
    core.step()
    core.step()
    assert core.data.xfrc_applied[bid, :3].tolist() == [0.0, 30.0, 0.0]  # the push ended, the force holds
    assert core.sustained_forces == {"pelvis_link": (0.0, 30.0, 0.0)}
    for _ in range(10):
        core.step()
    assert core.data.xfrc_applied[bid, :3].tolist() == [0.0, 30.0, 0.0]
    core.set_force("pelvis_link", [0.0, 0.0, 0.0])
    assert core.sustained_forces == {} and not core.data.xfrc_applied[bid].any()
    core.set_force("pelvis_link", [0.0, 0.0, 50.0])
    core.reset()  # a new life starts without forces
    assert core.sustained_forces == {} and not core.data.xfrc_applied.any()
    with pytest.raises(KeyError, match="unknown body"):
        core.set_force("no_such_link", [1.0, 0.0, 0.0])


def test_the_sustained_force_bound_never_diverges_on_the_exposed_bodies() -> None:
    """At the bound, in every axis direction, hanging and standing; the full sweep (all 26 bodies, 5 s each, 312
    runs) is in FIDELITY.md."""
    core = PlantCore()
    for body in ("neck_pitch_link", "left_wrist_yaw_link", "right_ankle_roll_link", "pelvis_link"):
        for axis in range(3):
            for sign in (1.0, -1.0):
                for state in (BootState.GANTRY, BootState.STANDING):
                    boot(core, state)
                    core.set_command(joints.DEFAULT_POS, Z25, joints.STAND_KP, joints.STAND_KD, Z25)
                    force = np.zeros(3)
                    force[axis] = sign * MAX_SUSTAINED_FORCE_N
                    core.set_force(body, force)
                    for _ in range(int(1.5 / core.dt)):
                        core.step()  # raises PhysicsError on divergence
                    assert not core.faulted


def test_boot_poses_start_at_rest_where_they_say() -> None:
    core = PlantCore()
    boot(core, BootState.GANTRY)
    assert core.gantry_engaged and core.truth().base_pos[2] == pytest.approx(core.gantry_height)
    for state in (BootState.STANDING, BootState.LYING_BACK, BootState.LYING_FRONT):
        boot(core, state)
        s, truth = core.sensors(), core.truth()
        g = projected_gravity(s.imu_quat)
        assert not core.gantry_engaged and core.time == 0.0 and core.step_count == 0
        assert np.abs(core.data.qvel).max() < 0.05, state  # settled
        if state is BootState.STANDING:
            assert g[2] < -0.99 and truth.base_pos[2] == pytest.approx(0.61, abs=0.01)
            assert truth.left_force > 100 and truth.right_force > 100  # on its own feet
            assert np.abs(s.q - joints.DEFAULT_POS).max() < 0.05
        else:
            assert abs(g[2]) < 0.1 and truth.base_pos[2] < 0.15  # on the floor, tilted 90 deg
            assert (g[0] < -0.9) if state is BootState.LYING_BACK else (g[0] > 0.9)  # front up / front down
    boot(core, BootState.STANDING)
    first = core.sensors().q.copy()
    boot(core, BootState.STANDING)
    assert np.array_equal(first, core.sensors().q)  # deterministic


# -- firmware --------------------------------------------------------------------------------------------------------
def _ticks(fw: Firmware, g: list[float], n: int) -> list:
    return [fw.tick(k * 0.02, FirmwareInputs(q=joints.DEFAULT_POS, qd=Z25, projected_gravity=g, tau=Z25))
            for k in range(n)]


def test_firmware_boot_states() -> None:
    fw = Firmware()
    fw.restart(boot=BootState.STANDING)
    outs = _ticks(fw, [0.0, 0.0, -1.0], 30)
    first = outs[0]
    assert first.mode is Mode.STAND and first.stand_ramp_done and not first.gantry_engaged
    assert not first.armed and first.error_flags == 0
    assert np.array_equal(first.position, joints.DEFAULT_POS) and np.array_equal(first.kp, joints.STAND_KP)
    armed_at = next(o.t for o in outs if o.armed)
    assert armed_at == pytest.approx(0.5)  # the firmware's usual upright hold, from the first tick
    for state, g in ((BootState.LYING_BACK, [-1.0, 0.0, 0.0]), (BootState.LYING_FRONT, [1.0, 0.0, 0.0])):
        fw.restart(boot=state)
        out = _ticks(fw, g, 1)[0]
        assert out.mode is Mode.DAMP and out.fault_latched and out.error_flags == 0x101
        assert [a.name for a in out.alerts] == ["FALL_DETECTED"] and not out.gantry_engaged
        assert fw.boot_state is state
    fw.restart()
    out = _ticks(fw, [0.0, 0.0, -1.0], 1)[0]
    assert out.mode is Mode.DAMP and out.gantry_engaged and not out.fault_latched and fw.boot_state is BootState.GANTRY


# -- the bridge's view -----------------------------------------------------------------------------------------------
def test_the_bridge_view_follows_the_plants_events() -> None:
    view = DisturbanceView()
    view.update(event_json("force", epoch=0, sim_time=1.0, step=200, body="pelvis_link", force=[0, 40, 0],
                           cleared=False, active={"pelvis_link": [0, 40, 0]}))
    view.update(event_json("push", epoch=0, sim_time=1.5, step=300, body="pelvis_link", force=[80, 0, 0]))
    view.update("not json")
    snap = view.snapshot()
    assert snap["sustained_forces"] == {"pelvis_link": [0, 40, 0]} and snap["events"]["pushes"] == 1
    assert view.unreadable == 1
    view.update(event_json("restart", epoch=1, sim_time=2.0, step=0, boot="lying_back"))
    view.update(event_json("push", epoch=0, sim_time=1.6, step=320, body="pelvis_link"))  # an old life's, late
    snap = view.snapshot()
    assert snap["sustained_forces"] == {} and snap["boot"] == "lying_back" and snap["epoch"] == 1
    assert snap["events"] == {"pushes": 1, "forces": 1, "restarts": 1, "rejected": 0}
