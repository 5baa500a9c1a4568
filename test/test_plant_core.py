"""The pure plant core: motor model tables, frame helpers, boot/gantry, standing, divergence, pushes."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from vasimov import frames
from vasimov.joints import DEFAULT_POS, EFFORT_LIMIT, NUM_JOINTS, SIM_NAMES, STAND_KD, STAND_KP, VELOCITY_LIMIT
from vasimov.model.mjcf import DEFAULT_GANTRY_HEIGHT, SENSOR_QUAT
from vasimov_plant.motor_model import MotorModel, default_motor_model
from vasimov_plant.physics import GroundTruth, PhysicsError, PlantCore, SensorReading

ZEROS = np.zeros(NUM_JOINTS)
ROBOT_WEIGHT = 32.224913 * 9.81


def stand(core: PlantCore) -> None:
    core.set_command(DEFAULT_POS, ZEROS, STAND_KP, STAND_KD, ZEROS)


def run(core: PlantCore, seconds: float) -> None:
    for _ in range(round(seconds / core.dt)):
        core.step()


@pytest.fixture
def log_in_tmp(tmp_path, monkeypatch) -> None:
    """MuJoCo appends every warning to ./MUJOCO_LOG.TXT; keep the divergence tests' log out of the checkout."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def standing() -> PlantCore:
    """Booted at the default pose on a 0.62 m gantry, released under STAND gains, settled for 1.5 s."""
    core = PlantCore(gantry_height=0.62)
    core.reset(DEFAULT_POS)
    stand(core)
    core.set_gantry(False)
    run(core, 1.5)
    return core


# -- motor model ---------------------------------------------------------------------------------------------------
ONE = dict(effort_limit=[10.0], velocity_limit=[5.0])


@pytest.mark.parametrize(
    ("q", "qd", "q_t", "qd_t", "kp", "kd", "ff", "expected"),
    [
        (0.0, 0.0, 0.1, 0.0, 50.0, 1.0, 0.0, 5.0),  # pure P
        (0.0, 2.0, 0.0, 0.0, 0.0, 2.0, 0.0, -4.0),  # pure D on measured speed
        (0.0, 2.0, 0.0, 3.0, 0.0, 2.0, 0.0, 2.0),  # D tracks the velocity target
        (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 3.5, 3.5),  # feed-forward passes
        (0.0, 0.0, 1.0, 0.0, 500.0, 0.0, 0.0, 10.0),  # clamp high
        (0.0, 0.0, -1.0, 0.0, 500.0, 0.0, 0.0, -10.0),  # clamp low
        (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1e12, 10.0),  # absurd feed-forward is clamped
        (0.2, -1.0, 0.1, 0.0, 40.0, 2.0, 1.0, -1.0),  # all terms: -4 + 2 + 1
    ],
)
def test_motor_law_and_clamp(q, qd, q_t, qd_t, kp, kd, ff, expected) -> None:
    m = MotorModel(**ONE)
    tau = m.compute([q], [qd], [q_t], [qd_t], [kp], [kd], [ff])
    assert tau[0] == pytest.approx(expected)


@pytest.mark.parametrize(
    ("qd", "limit"),
    [(0.0, 10.0), (2.5, 5.0), (-2.5, 5.0), (4.0, 2.0), (5.0, 0.0), (-9.0, 0.0)],
)
def test_speed_torque_envelope(qd: float, limit: float) -> None:
    on = MotorModel(**ONE, speed_torque_envelope=True)
    off = MotorModel(**ONE)
    assert on.torque_limit([qd])[0] == pytest.approx(limit)
    assert off.torque_limit([qd])[0] == 10.0
    tau = on.compute([0.0], [qd], [0.0], [qd], [0.0], [0.0], [1e6])  # kd term zero: only the clamp acts
    assert tau[0] == pytest.approx(limit)


@pytest.mark.parametrize(
    ("effort", "velocity"),
    [([10.0], [0.0]), ([-1.0], [5.0]), ([math.nan], [5.0]), ([10.0, 1.0], [5.0]), ([10.0], [math.inf])],
)
def test_motor_model_rejects_bad_limits(effort, velocity) -> None:
    with pytest.raises(ValueError):
        MotorModel(effort, velocity)


def test_default_motor_model_clamps_every_joint_to_its_effort_limit() -> None:
    m = default_motor_model()
    big = np.full(NUM_JOINTS, 1e9)
    np.testing.assert_array_equal(m.compute(ZEROS, ZEROS, ZEROS, ZEROS, ZEROS, ZEROS, big), EFFORT_LIMIT)
    np.testing.assert_array_equal(m.compute(ZEROS, ZEROS, ZEROS, ZEROS, ZEROS, ZEROS, -big), -EFFORT_LIMIT)
    env = default_motor_model(speed_torque_envelope=True)
    np.testing.assert_allclose(env.torque_limit(VELOCITY_LIMIT / 2), EFFORT_LIMIT / 2)


def test_motor_model_reuses_its_buffer_and_keeps_nan_visible() -> None:
    m = MotorModel(**ONE)
    a = m.compute([0.0], [0.0], [0.1], [0.0], [1.0], [0.0], [0.0])
    b = m.compute([0.0], [math.nan], [0.1], [0.0], [1.0], [1.0], [0.0])
    assert a is b
    assert math.isnan(b[0])  # never hidden by the clamp


# -- frames --------------------------------------------------------------------------------------------------------
def _random_quats(n: int, seed: int = 3) -> np.ndarray:
    q = np.random.default_rng(seed).normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def test_projected_gravity_matches_mujoco_rotation() -> None:
    quats = _random_quats(50)
    g = frames.projected_gravity(quats)
    for q, gi in zip(quats, g, strict=True):
        mat = np.zeros(9)
        mujoco.mju_quat2Mat(mat, q)
        np.testing.assert_allclose(gi, mat.reshape(3, 3).T @ [0.0, 0.0, -1.0], atol=1e-12)
        np.testing.assert_allclose(frames.rotate_inverse(q, frames.rotate(q, [0.3, -1.0, 2.0])), [0.3, -1.0, 2.0])


def test_quat_multiply_composes_rotations_and_matches_mujoco() -> None:
    a, b = _random_quats(20, seed=4), _random_quats(20, seed=5)
    ab = frames.quat_multiply(a, b)  # a batch at once
    for qa, qb, qab in zip(a, b, ab, strict=True):
        res = np.zeros(4)
        mujoco.mju_mulQuat(res, qa, qb)
        np.testing.assert_allclose(qab, res, atol=1e-12)
        np.testing.assert_allclose(frames.rotate(qab, [0.3, -1.0, 2.0]),
                                   frames.rotate(qa, frames.rotate(qb, [0.3, -1.0, 2.0])), atol=1e-12)


@pytest.mark.parametrize(
    ("quat", "gravity"),
    [
        ([1.0, 0.0, 0.0, 0.0], [0.0, 0.0, -1.0]),
        ([math.cos(math.pi / 4), math.sin(math.pi / 4), 0.0, 0.0], [0.0, -1.0, 0.0]),  # rolled 90 deg about x
        ([math.cos(math.pi / 4), 0.0, math.sin(math.pi / 4), 0.0], [1.0, 0.0, 0.0]),  # pitched 90 deg nose down
        ([2.0, 0.0, 0.0, 0.0], [0.0, 0.0, -1.0]),  # non-unit input is normalised
    ],
)
def test_projected_gravity_table(quat, gravity) -> None:
    np.testing.assert_allclose(frames.projected_gravity(quat), gravity, atol=1e-12)


@pytest.mark.parametrize("yaw", [0.0, 0.5, -2.0, 3.0])
def test_yaw_from_quat(yaw: float) -> None:
    q = [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]
    assert frames.yaw_from_quat(q) == pytest.approx(yaw)


@pytest.mark.parametrize("bad", [[0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [math.nan, 0.0, 0.0, 1.0]])
def test_frames_reject_bad_quaternions(bad) -> None:
    with pytest.raises(ValueError):
        frames.projected_gravity(bad)


# -- boot and gantry -----------------------------------------------------------------------------------------------
def test_boot_state_is_limp_on_the_gantry() -> None:
    core = PlantCore()
    assert core.dt == 0.005
    t = core.truth()
    s = core.sensors()
    assert isinstance(t, GroundTruth) and isinstance(s, SensorReading)
    np.testing.assert_allclose(t.base_pos, [0.0, 0.0, DEFAULT_GANTRY_HEIGHT])
    np.testing.assert_allclose(t.base_quat, [1.0, 0.0, 0.0, 0.0])
    model = core.model
    np.testing.assert_allclose(s.q, [model.qpos0[model.joint(n).qposadr[0]] for n in SIM_NAMES])
    assert s.q[SIM_NAMES.index("left_elbow_joint")] == pytest.approx(0.785398)
    assert s.gantry_engaged
    run(core, 1.0)
    t = core.truth()
    s = core.sensors()
    assert abs(t.base_pos[2] - DEFAULT_GANTRY_HEIGHT) < 5e-4  # the weld holds the 32 kg robot
    assert not (t.left_contact or t.right_contact)  # straight legs hang clear of the floor
    assert s.accel[2] == pytest.approx(9.81, abs=0.2)  # specific force of a body held against gravity
    np.testing.assert_allclose(s.tau, 0.0)  # limp: zero gains
    assert (core.time, core.step_count) == (pytest.approx(1.0), 200)


def test_gantry_releases_and_re_engages_only_on_reset() -> None:
    core = PlantCore()
    core.set_gantry(True)  # already engaged: no-op
    core.set_gantry(False)
    assert not core.sensors().gantry_engaged
    with pytest.raises(RuntimeError, match="reset"):
        core.set_gantry(True)
    run(core, 0.3)
    assert core.truth().base_pos[2] < DEFAULT_GANTRY_HEIGHT - 0.005  # dropped onto its (limp) legs
    assert core.truth().left_contact
    core.reset()
    assert core.sensors().gantry_engaged


@pytest.mark.parametrize(
    ("gantry_height", "boot_pose"),
    [(None, None), (0.62, DEFAULT_POS)],
    ids=["boot-limp-stand-then-release", "default-pose-at-0.62"],
)
def test_released_robot_stands_under_stand_gains(gantry_height, boot_pose) -> None:
    core = PlantCore() if gantry_height is None else PlantCore(gantry_height=gantry_height)
    core.reset(boot_pose)
    stand(core)
    run(core, 2.0)  # the firmware's 2 s stand ramp happens on the gantry
    core.set_gantry(False)
    heights = []
    for _ in range(round(5.0 / core.dt)):
        core.step()
        heights.append(core.truth().base_pos[2])
        assert core.projected_gravity()[2] < -0.99  # upright throughout
    t = core.truth()
    assert 0.60 <= t.base_pos[2] <= 0.62
    assert min(heights[200:]) >= 0.60 and max(heights[200:]) <= 0.62  # settled within 1 s of release
    assert np.hypot(*t.base_pos[:2]) < 0.05
    assert t.left_contact and t.right_contact
    assert t.left_force + t.right_force == pytest.approx(ROBOT_WEIGHT, rel=0.02)
    assert np.max(np.abs(core.sensors().q - DEFAULT_POS)) < 0.06


def test_sensors_describe_the_same_instant_as_the_state(standing: PlantCore) -> None:
    core = standing
    core.apply_push("pelvis_link", [0.0, 60.0, 0.0], 0.1)
    run(core, 0.05)
    s = core.sensors()
    d, m = core.data, core.model
    base = m.joint("floating_base")
    np.testing.assert_allclose(s.gyro, d.qvel[base.dofadr[0] + 3 : base.dofadr[0] + 6], atol=1e-12)
    np.testing.assert_allclose(s.imu_quat, d.qpos[base.qposadr[0] + 3 : base.qposadr[0] + 7], atol=1e-12)
    np.testing.assert_allclose(s.q, [d.qpos[m.joint(n).qposadr[0]] for n in SIM_NAMES])
    np.testing.assert_allclose(s.tau, [d.actuator_force[m.actuator(n).id] for n in SIM_NAMES])
    sensor = m.sensor(SENSOR_QUAT)
    np.testing.assert_allclose(core.projected_gravity(),
                               frames.projected_gravity(d.sensordata[sensor.adr[0] : sensor.adr[0] + 4]))
    assert s.time == core.time


def test_readings_are_snapshots(standing: PlantCore) -> None:
    s = standing.sensors()
    q = s.q.copy()
    run(standing, 0.1)
    standing.apply_push("pelvis_link", [100.0, 0.0, 0.0], 0.05)
    run(standing, 0.1)
    np.testing.assert_array_equal(s.q, q)


def test_same_seed_and_commands_give_identical_runs() -> None:
    runs = []
    for _ in range(2):
        core = PlantCore(seed=5)
        rng = np.random.default_rng(11)
        core.set_gantry(False)
        for _ in range(200):
            core.set_command(ZEROS, ZEROS, ZEROS, ZEROS, rng.uniform(-1, 1, NUM_JOINTS) * EFFORT_LIMIT)
            core.step()
        runs.append(core.data.qpos.copy())
    np.testing.assert_array_equal(runs[0], runs[1])


# -- divergence ----------------------------------------------------------------------------------------------------
def test_seeded_random_torques_for_5s_raise_nothing() -> None:
    core = PlantCore(seed=0)
    rng = np.random.default_rng(2024)
    core.set_gantry(False)
    vmax = 0.0
    for k in range(round(5.0 / core.dt)):
        if k % 10 == 0:  # 50 ms torque bursts, the full effort range of every joint
            core.set_command(ZEROS, ZEROS, ZEROS, ZEROS, rng.uniform(-1.0, 1.0, NUM_JOINTS) * EFFORT_LIMIT)
        core.step()
        vmax = max(vmax, float(np.abs(core.data.qvel).max()))
    assert core.data.warning.number.sum() == 0
    assert not core.faulted
    assert vmax < core.max_speed


@pytest.mark.parametrize("field", ["qvel", "qpos"])
def test_nan_injection_raises_and_latches_until_reset(field: str, log_in_tmp: None) -> None:
    core = PlantCore()
    stand(core)
    run(core, 0.1)
    getattr(core.data, field)[10] = math.nan
    with pytest.raises(PhysicsError) as err:
        core.step()
    assert err.value.kind in ("mujoco_warning", "non_finite")
    assert core.faulted
    with pytest.raises(PhysicsError) as again:
        core.step()
    assert again.value.kind == "faulted"
    core.reset()
    run(core, 0.1)
    assert not core.faulted


def test_absurd_push_is_caught_as_divergence(log_in_tmp: None) -> None:
    core = PlantCore()
    core.set_gantry(False)
    core.apply_push("pelvis_link", [1e7, 0.0, 0.0], 0.01)
    with pytest.raises(PhysicsError) as err:
        run(core, 0.05)
    assert err.value.kind in ("speed", "mujoco_warning", "non_finite")


def test_physics_error_kinds_are_closed() -> None:
    with pytest.raises(ValueError):
        PhysicsError("oops", "not a kind")


def test_absurd_but_finite_torque_command_is_clamped_not_diverged() -> None:
    core = PlantCore()
    core.set_command(ZEROS, ZEROS, ZEROS, ZEROS, np.full(NUM_JOINTS, 1e12))
    core.step()
    np.testing.assert_allclose(core.sensors().tau, EFFORT_LIMIT)


@pytest.mark.parametrize(
    ("arg", "value", "match"),
    [
        ("position", np.full(NUM_JOINTS, math.nan), "finite"),
        ("torque_ff", np.r_[ZEROS[:-1], math.inf], "neck_pitch_joint"),
        ("kp", np.r_[-1.0, ZEROS[1:]], "left_hip_pitch_joint"),
        ("kd", np.zeros(NUM_JOINTS - 1), "shape"),
    ],
)
def test_set_command_validates_at_the_edge(arg: str, value: np.ndarray, match: str) -> None:
    core = PlantCore()
    cmd = dict(position=ZEROS, velocity=ZEROS, kp=ZEROS, kd=ZEROS, torque_ff=ZEROS)
    cmd[arg] = value
    with pytest.raises(ValueError, match=match):
        core.set_command(**cmd)


def test_reset_rejects_a_pose_outside_the_joint_ranges() -> None:
    core = PlantCore()
    pose = np.array(DEFAULT_POS)
    pose[SIM_NAMES.index("left_knee_joint")] = -0.5
    with pytest.raises(ValueError, match="left_knee_joint"):
        core.reset(pose)


# -- pushes --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("direction", [(1.0, 0.0, 0.0), (0.0, -1.0, 0.0), (-0.7071, 0.7071, 0.0)])
def test_push_changes_base_velocity_in_the_push_direction(standing: PlantCore, direction) -> None:
    core = standing
    u = np.asarray(direction)
    v0 = core.truth().base_lin_vel
    core.apply_push("pelvis_link", 150.0 * u, 0.1)  # 15 N*s: 0.47 m/s if the feet did not resist
    run(core, 0.1)
    dv = core.truth().base_lin_vel - v0
    assert dv @ u > 0.2  # m/s gained along the push
    assert np.linalg.norm(dv - (dv @ u) * u) < 0.5 * (dv @ u)
    assert not core.data.xfrc_applied.any()  # the push ended after its duration


def test_push_lasts_its_duration_in_whole_steps(standing: PlantCore) -> None:
    core = standing
    body = core.model.body("waist_yaw_link").id
    core.apply_push("waist_yaw_link", [0.0, 0.0, 5.0], 0.02)  # 4 steps
    for _ in range(3):
        core.step()
        assert core.data.xfrc_applied[body, 2] == 5.0
    core.step()
    assert not core.data.xfrc_applied.any()


def test_push_on_unknown_body_lists_valid_names() -> None:
    core = PlantCore()
    with pytest.raises(KeyError, match=r"pelvis_link.*left_ankle_roll_link"):
        core.apply_push("torso", [1.0, 0.0, 0.0], 0.1)
    with pytest.raises(ValueError):
        core.apply_push("pelvis_link", [1.0, 0.0, 0.0], 0.0)


def test_truth_agrees_with_the_frame_helpers(standing: PlantCore) -> None:
    core = standing
    adr = core.model.joint("floating_base").dofadr[0]
    core.data.qvel[adr + 3 : adr + 6] = (0.3, -0.2, 0.5)  # spin the base a little
    core.step()
    t = core.truth()
    w_body = core.data.qvel[adr + 3 : adr + 6]
    np.testing.assert_allclose(t.base_ang_vel, frames.rotate(t.base_quat, w_body), atol=1e-12)
    assert t.base_yaw == pytest.approx(frames.yaw_from_quat(t.base_quat), abs=1e-12)
    assert t.base_yaw != 0.0
