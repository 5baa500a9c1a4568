"""`vasimov replay BAG`: a recording's motor commands open loop into the plant, residuals against the log.

The pure replay on a log made by driving a PlantCore by hand (exact, and a changed command shows), then the real
thing: a lockstep run of the graph recorded with `vasimov up --record` (stand, balance, a short walk) replays through
the CLI with residuals at numerical noise."""

from __future__ import annotations

import json
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest
from harness import VENV_BIN, Graph, graph_env, next_domain_id

from vasimov.control_rate import CONTROL_DECIMATION
from vasimov.joints import DEFAULT_POS, NUM_JOINTS
from vasimov_plant.physics import PlantCore
from vasimov_tools import replay as rp


def _state(core: PlantCore, command_tick: int) -> SimpleNamespace:
    s = core.sensors()
    return SimpleNamespace(step=core.step_count, epoch=0, command_tick=command_tick, position=s.q.copy(),
                           velocity=s.qd.copy(), effort=s.tau.copy(), imu_orientation=s.imu_quat,
                           imu_angular_velocity=s.gyro, imu_linear_acceleration=s.accel)


def _hand_log(ticks: int = 60) -> rp.Log:
    """The plant driven like the plant node does: damping at boot, then per tick a command for 4 steps (a ramp to
    the default pose with the gantry lowering, later a sway), the steps logged as PlantState would carry them."""
    core = PlantCore(seed=2)
    z = np.zeros(NUM_JOINTS)
    core.set_command(z, z, z, np.full(NUM_JOINTS, rp.DAMP_KD), z)
    states, commands = [_state(core, -1)], {}
    for k in range(ticks):
        a = min(1.0, k / 30)
        pos = a * DEFAULT_POS + 0.05 * np.sin(0.2 * k) * (k > 30)
        cmd = SimpleNamespace(tick=k, epoch=0, position=pos, velocity=z, kp=np.full(NUM_JOINTS, 80.0),
                              kd=np.full(NUM_JOINTS, 3.0), torque_ff=z, gantry_engaged=True, gantry_lowering=True)
        commands[k] = cmd
        core.set_command(cmd.position, cmd.velocity, cmd.kp, cmd.kd, cmd.torque_ff)
        core.set_gantry(True, True)
        for _ in range(CONTROL_DECIMATION):
            core.step()
            states.append(_state(core, k))
    return rp.Log(states=states, commands=commands, seed=2)


def test_replay_of_an_exact_log_has_zero_residuals():
    doc = rp.replay(_hand_log())
    assert doc["steps"] == doc["logged_steps"] == 240 and doc["end"] == "end of the log"
    assert doc["max_position"] == 0.0 and doc["max_velocity"] == 0.0 and doc["max_torque"] == 0.0
    assert all(v["max"] == 0.0 for v in doc["imu"].values())


def test_a_changed_command_shows_in_the_residuals():
    log = _hand_log()
    log.commands[40].position = log.commands[40].position + 0.05  # one tick's targets off by 0.05 rad
    doc = rp.replay(log)
    assert doc["max_position"] > 1e-3 and doc["max_torque"] > 1.0
    assert doc["series"]["position"][39] == 0.0 and doc["series"]["position"][41] > 0.0  # from tick 40 on


def test_missing_command_ends_the_replay_with_the_reason():
    log = _hand_log()
    del log.commands[20]
    doc = rp.replay(log)
    assert doc["steps"] == 80 and "no motor command for tick 20" in doc["end"]


def test_not_a_bag_is_refused(tmp_path, capsys):
    assert rp.main([str(tmp_path)]) == 2
    assert "not a rosbag2 directory" in capsys.readouterr().err


@pytest.mark.graph
def test_lockstep_recording_replays_at_numerical_noise(tmp_path):
    script = tmp_path / "script.yaml"
    # stand, balance when armed (menlo stand -y && menlo balance -y), then a short walk
    script.write_text("- {t: 0.1, cmd: stand}\n- {t: 1.0, cmd: velocity, vx: 0.0}\n"
                      "- {t: 2.0, cmd: velocity, vx: 0.15}\n")
    bag = tmp_path / "bag"
    g = Graph("--lockstep", "--duration", "3", "--seed", "4", "--script", str(script), "--record", str(bag),
              "foxglove:=false", "binary_port:=0")
    try:
        rc = g.proc.wait(timeout=180)
    finally:
        g.stop()
    assert rc == 0, g.output()[-4000:]
    out = tmp_path / "replay"
    res = subprocess.run([str(VENV_BIN / "vasimov"), "replay", str(bag), "--out", str(out)], capture_output=True,
                         text=True, timeout=300, env=graph_env(next_domain_id()))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    doc = json.loads((out / "replay.json").read_text())
    assert doc["seed"] == 4 and doc["end"] == "end of the log", doc["end"]
    assert doc["steps"] == doc["logged_steps"] == 600, (doc["steps"], doc["logged_steps"])
    assert not any("model differs" in n for n in doc["notes"]), doc["notes"]
    assert doc["max_position"] < 1e-6 and doc["max_velocity"] < 1e-6 and doc["max_torque"] < 1e-6, (
        doc["max_position"], doc["max_velocity"], doc["max_torque"])
    assert all(v["max"] < 1e-6 for v in doc["imu"].values()), doc["imu"]
    # the walk happened: the robot moved its legs well away from the boot pose
    assert max(abs(v) for v in doc["worst_joint_series"]["logged"]) > 0.1
    page = (out / "replay.html").read_text()
    assert "<table>" in page and page.count("<svg") == 7
    assert "max residual: position" in res.stdout
