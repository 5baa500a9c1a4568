"""Sensor and actuator realism (vasimov.realism, vasimov_plant.realism): the parser's rules, the noise statistics for a
fixed seed, determinism per seed, off = bit-identical, the actuation delay on a step response, each model
randomisation visible in the MuJoCo model by the drawn amount, and the built-in controller still walking with the
``typical`` profile."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from vasimov.frames import projected_gravity
from vasimov.joints import NUM_JOINTS, SIM_NAMES
from vasimov.realism import PROFILES, RealismError, RealismParams, describe, parse_realism
from vasimov_plant.physics import PlantCore
from vasimov_plant.realism import RealismModel

DT = 0.005
UPRIGHT = np.array([1.0, 0.0, 0.0, 0.0])
ZERO3 = np.zeros(3)
Q0 = np.zeros(NUM_JOINTS)


def _model(text: str, seed: int = 7) -> RealismModel:
    """The sensor-error part alone (no MuJoCo model needed for boot/after_step/apply)."""
    m = RealismModel(parse_realism(text), seed, None, None)  # type: ignore[arg-type]
    m.boot((Q0, Q0, Q0, Q0, Q0))
    return m


def _errors(m: RealismModel, steps: int) -> dict[str, np.ndarray]:
    """Per step, what the sensors report for a robot at rest, upright, with every joint at 0 (so readings = errors)."""
    out: dict[str, list] = {"q": [], "qd": [], "gyro": [], "accel": [], "pg": [], "yaw": []}
    for _ in range(steps):
        m.after_step(DT, np.eye(3))
        q, qd, quat, gyro, accel = m.apply(Q0, Q0, UPRIGHT, ZERO3, ZERO3)
        out["q"].append(q)
        out["qd"].append(qd)
        out["gyro"].append(gyro)
        out["accel"].append(accel)
        out["pg"].append(projected_gravity(quat))
        out["yaw"].append(2.0 * math.atan2(quat[3], quat[0]))
    return {k: np.array(v) for k, v in out.items()}


# -- the setting ----
def test_default_is_none_and_everything_off():
    p = parse_realism("")
    assert p == PROFILES["none"] == RealismParams() and not p.enabled
    assert parse_realism("none") == p
    assert PROFILES["typical"].sensors_on and PROFILES["typical"].actuation_on and PROFILES["typical"].model_on
    assert PROFILES["training"].enabled


def test_overrides_profiles_and_single_effects():
    p = parse_realism("typical, delay_steps=3, mass_scale=0.9:1.1, yaw_drift=false")
    assert p.delay_steps == (3, 3) and p.mass_scale == (0.9, 1.1) and p.yaw_drift is False
    assert p.gyro_noise == PROFILES["typical"].gyro_noise
    only = parse_realism("gyro_noise=0.02")  # overrides alone apply on top of none
    assert only == RealismParams(gyro_noise=0.02) and only.sensors_on and not only.actuation_on
    assert describe(only, "gyro_noise=0.02")["params"]["gyro_noise"] == 0.02


@pytest.mark.parametrize(("text", "fragment"), [
    ("noisy", "unknown realism profile 'noisy'; valid: none, typical, training"),
    ("typical,gyro=1", "'gyro=1' is not KEY=VALUE with a known key"),
    ("typical,delay_steps", "is not KEY=VALUE"),
    ("typical,,gyro_noise=0", "empty entry"),
    ("gyro_noise=abc", "expected a number"),
    ("gyro_noise=-1", "gyro_noise must be a finite number >= 0"),
    ("gyro_noise=nan", "gyro_noise must be a finite number >= 0"),
    ("gyro_noise=5", "above its bound"),
    ("delay_steps=6", "delay_steps must be whole steps 0 <= lo <= hi <= 5"),
    ("delay_steps=1.5", "expected LO:HI"),
    ("mass_scale=1.2:0.8", "mass_scale must satisfy 0.5 <= lo <= hi <= 2.0"),
    ("yaw_drift=maybe", "expected true/false"),
    ("noise_shape=pink", "noise_shape must be one of gaussian, uniform"),
])
def test_bad_settings_are_rejected_by_name(text, fragment):
    with pytest.raises(RealismError, match=None) as err:
        parse_realism(text)
    assert fragment in str(err.value)


# -- sensor statistics (fixed seed) ----
def test_white_noise_has_its_size_and_no_mean():
    e = _errors(_model("gyro_noise=0.01,accel_noise=0.05,encoder_noise=0.002,encoder_vel_noise=0.03"), 8000)
    for key, size in (("gyro", 0.01), ("accel", 0.05), ("q", 0.002), ("qd", 0.03)):
        std, mean = e[key].std(axis=0), e[key].mean(axis=0)
        assert np.all(np.abs(std / size - 1.0) < 0.05), (key, std)
        assert np.all(np.abs(mean) < 4.0 * size / math.sqrt(8000)), (key, mean)
    lag1 = np.corrcoef(e["gyro"][:-1, 0], e["gyro"][1:, 0])[0, 1]
    assert abs(lag1) < 0.05  # white: a fresh draw every step


def test_uniform_noise_is_bounded_by_its_half_width():
    e = _errors(_model("noise_shape=uniform,gyro_noise=0.01,encoder_vel_noise=0.5"), 4000)
    assert np.abs(e["gyro"]).max() <= 0.01 and np.abs(e["qd"]).max() <= 0.5
    assert abs(e["gyro"].std() / (0.01 / math.sqrt(3.0)) - 1.0) < 0.05


def test_turn_on_bias_is_constant_within_a_boot_and_redrawn_per_boot():
    m = _model("gyro_bias=0.01,accel_bias=0.2")
    first = _errors(m, 50)
    assert np.ptp(first["gyro"], axis=0).max() == 0.0 and np.ptp(first["accel"], axis=0).max() == 0.0
    biases = []
    for _ in range(400):
        m.boot((Q0, Q0, Q0, Q0, Q0))
        m.after_step(DT, np.eye(3))
        biases.append(m.gyro_bias.copy())
    assert abs(np.std(biases) / 0.01 - 1.0) < 0.08


def test_bias_random_walk_grows_with_the_square_root_of_time():
    finals = []
    for seed in range(300):
        m = _model("gyro_bias_walk=0.002", seed)
        for _ in range(400):  # 2 s
            m.after_step(DT, np.eye(3))
        finals.append(m.gyro_bias.copy())
    assert abs(np.std(finals) / (0.002 * math.sqrt(2.0)) - 1.0) < 0.08


def test_yaw_drift_integrates_the_vertical_gyro_bias_and_leaves_projected_gravity_alone():
    m = _model("gyro_bias=0.01,yaw_drift=true")
    bias_z = m.gyro_bias[2]
    e = _errors(m, 2000)  # 10 s
    assert e["yaw"][-1] == pytest.approx(bias_z * 10.0, rel=1e-9)
    np.testing.assert_allclose(e["pg"], np.tile([0.0, 0.0, -1.0], (2000, 1)), atol=1e-12)
    # tipped on its side (body x up), the body-z bias no longer turns the heading: the drift follows the world vertical
    side = _model("gyro_bias=0.01,yaw_drift=true")
    tipped = np.array([[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])  # body x -> world z
    for _ in range(200):
        side.after_step(DT, tipped)
    assert side.yaw_error == pytest.approx(side.gyro_bias[0] * 1.0, rel=1e-9)
    assert _errors(_model("gyro_bias=0.01,yaw_drift=false"), 200)["yaw"].max() == 0.0


def test_tilt_error_is_what_projected_gravity_sees_with_its_spread_and_correlation_time():
    e = _errors(_model("tilt_noise=0.02,tilt_tau=0.5", 3), 60000)  # 300 s
    pg = e["pg"][:, :2]
    assert np.all(np.abs(pg.std(axis=0) / 0.02 - 1.0) < 0.1)
    lag = int(0.5 / DT)
    rho = np.corrcoef(pg[:-lag, 0], pg[lag:, 0])[0, 1]
    assert rho == pytest.approx(math.exp(-1.0), abs=0.06)


def test_encoder_offsets_are_per_run_within_their_bound_and_survive_a_reboot():
    m = _model("encoder_offset=0.02")
    e = _errors(m, 10)
    assert np.all(np.abs(e["q"][0]) <= 0.02) and np.ptp(e["q"], axis=0).max() == 0.0
    assert np.std(e["q"][0]) > 0.005  # drawn per joint, not one shared value
    m.boot((Q0, Q0, Q0, Q0, Q0))
    np.testing.assert_array_equal(_errors(m, 1)["q"][0], e["q"][0])


# -- the plant ----
def _run(core: PlantCore, steps: int, command: bool = True) -> list:
    if command:
        n = NUM_JOINTS
        core.set_command(np.full(n, 0.1), np.zeros(n), np.full(n, 40.0), np.full(n, 2.0), np.zeros(n))
    out = []
    for _ in range(steps):
        core.step()
        s = core.sensors()
        out.append(np.concatenate([s.q, s.qd, s.tau, s.imu_quat, s.gyro, s.accel]))
    return out


def test_off_is_bit_identical_to_a_plant_without_realism():
    plain = PlantCore(seed=5)
    off = PlantCore(seed=5, realism=parse_realism("none"))
    assert off.realism is None
    a, b = _run(plain, 100), _run(off, 100)
    assert np.array_equal(np.array(a), np.array(b))
    assert plain.data.qpos.tobytes() == off.data.qpos.tobytes()


def test_same_seed_same_run_other_seed_other_draws():
    a = np.array(_run(PlantCore(seed=11, realism=parse_realism("typical")), 60))
    b = np.array(_run(PlantCore(seed=11, realism=parse_realism("typical")), 60))
    c = np.array(_run(PlantCore(seed=12, realism=parse_realism("typical")), 60))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_ideal_sensors_are_the_truth_beside_the_noisy_reading():
    core = PlantCore(seed=2, realism=parse_realism("typical"))
    _run(core, 20)
    noisy, ideal = core.sensors(), core.ideal_sensors()
    assert not np.array_equal(noisy.q, ideal.q) and not np.array_equal(noisy.gyro, ideal.gyro)
    np.testing.assert_array_equal(ideal.q, core.data.qpos[core.index.qpos_adr])
    np.testing.assert_array_equal(core.sensors().q, noisy.q)  # reading twice in a step reads the same sample
    np.testing.assert_array_equal(noisy.tau, ideal.tau)


def test_resetting_twice_at_boot_is_one_boot_and_a_restart_draws_a_new_bias():
    core = PlantCore(seed=4, realism=parse_realism("gyro_bias=0.01"))
    b0 = core.realism.gyro_bias.copy()
    core.reset()
    np.testing.assert_array_equal(core.realism.gyro_bias, b0)
    core.step()
    core.reset()
    assert not np.array_equal(core.realism.gyro_bias, b0)


def _torque_response(delay: int, joint: int = 3, steps: int = 10) -> np.ndarray:
    """Knee torque per step after a position step of 0.2 rad at kp 100, robot limp on the gantry until then."""
    core = PlantCore(seed=0, realism=parse_realism(f"delay_steps={delay}") if delay else None)
    for _ in range(20):
        core.step()
    pos = core.sensors().q.copy()
    kp = np.zeros(NUM_JOINTS)
    kp[joint] = 100.0
    pos[joint] += 0.2
    core.set_command(pos, np.zeros(NUM_JOINTS), kp, np.full(NUM_JOINTS, 2.0), np.zeros(NUM_JOINTS))
    taus = []
    for _ in range(steps):
        core.step()
        taus.append(core.sensors().tau[joint])
    return np.array(taus)


@pytest.mark.parametrize("delay", [1, 3, 5])
def test_actuation_delay_is_measured_on_a_step_response(delay):
    """The commanded step reaches the motor exactly ``delay`` physics steps later than without delay."""
    ref = _torque_response(0)
    late = _torque_response(delay)
    assert ref[0] > 10.0  # undelayed: the first step already pushes (100 * 0.2 = 20 N*m, less the damping)
    first = int(np.argmax(np.abs(late) > 10.0))
    assert first == delay, late
    assert np.all(np.abs(late[:delay]) < 1.0)


def test_motor_strength_scales_the_torque():
    ref = _torque_response(0)
    core = PlantCore(seed=0, realism=parse_realism("motor_strength=0.5"))
    np.testing.assert_allclose(core.realism.strength, 0.5)
    for _ in range(20):
        core.step()
    pos = core.sensors().q.copy()
    kp = np.zeros(NUM_JOINTS)
    kp[3] = 100.0
    pos[3] += 0.2
    core.set_command(pos, np.zeros(NUM_JOINTS), kp, np.full(NUM_JOINTS, 2.0), np.zeros(NUM_JOINTS))
    core.step()
    assert core.sensors().tau[3] == pytest.approx(0.5 * ref[0], rel=1e-9)


def test_each_model_randomisation_is_visible_in_the_model_by_the_drawn_amount():
    base = PlantCore().model
    core = PlantCore(seed=9, realism=parse_realism("training,mass_scale=0.9:1.1,com_offset=0.01,"
                                                   "joint_friction=0.7:1.3"))
    m, drawn = core.model, core.realism.drawn
    for name, s in drawn["mass_scale"].items():
        b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
        assert 0.9 <= s <= 1.1
        assert m.body_mass[b] == pytest.approx(base.body_mass[b] * s, rel=1e-12)
        np.testing.assert_allclose(m.body_inertia[b], base.body_inertia[b] * s, rtol=1e-12)
        shift = np.array(drawn["com_offset"][name])
        if name == "waist_yaw_link":
            shift = shift + np.array(drawn["waist_com_offset"])
        np.testing.assert_allclose(m.body_ipos[b] - base.body_ipos[b], shift, atol=1e-15)
    assert len(drawn["mass_scale"]) == base.nbody - 1 - sum(1 for b in range(1, base.nbody)
                                                            if base.body_rootid[b] != base.body_rootid[1])
    wx, wy, wz = drawn["waist_com_offset"]
    assert 0.0 <= wx <= 0.05 and wy == 0.0 and 0.03 <= wz <= 0.07
    assert m.body_subtreemass[1] == pytest.approx(m.body_mass[1:].sum())  # derived constants recomputed
    for i, name in enumerate(SIM_NAMES):
        dof = core.index.dof_adr[i]
        s = drawn["joint_friction"][name]
        assert 0.7 <= s <= 1.3
        assert m.dof_frictionloss[dof] == pytest.approx(base.dof_frictionloss[dof] * s, rel=1e-12)
    feet = np.flatnonzero(core.index.geom_foot_side > 0)
    assert 0.8 <= drawn["foot_friction"] <= 1.2
    np.testing.assert_allclose(m.geom_friction[feet, 0], base.geom_friction[feet, 0] * drawn["foot_friction"])
    assert 0 <= drawn["delay_steps"] <= 5 and core.realism.delay_steps == drawn["delay_steps"]


def test_the_builtin_controller_stands_and_walks_with_the_typical_profile():
    """A short forward walk in the reference closed loop: the same walk with ideal and with ``typical`` sensors and
    actuators; both stand up, balance and walk forward without a fall (distances in the README)."""
    from vasimov_tools import walk_bench as wb

    scenario = wb.standard_scenarios()["forward_0.2"]
    results = {}
    for realism in ("none", "typical"):
        r = wb.run_scenario(wb.replace(scenario, realism=realism), wb.default_backend_factory)
        results[realism] = r
        assert r.fell_at is None, (realism, r)
    assert results["typical"].along > 0.7 * results["none"].along > 0.5, results
