"""The generated Asimov 1 model against the fact sheet: structure, numbers, contact setup, URDF agreement."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import pytest
import yaml

from vasimov.joints import BY_SIM_NAME, DEFAULT_POS, SIM_NAMES, facts
from vasimov.model import build_mjcf, load_model
from vasimov.model.mjcf import (
    FOOT_BODIES,
    GANTRY_EQUALITY,
    IMU_SITE,
    SENSOR_ACCEL,
    SENSOR_GYRO,
    SENSOR_QUAT,
    SENSOR_VELOCIMETER,
)
from vasimov.model.urdf import build_urdf, export_model

SHIPPED = Path(__file__).resolve().parent.parent / "vasimov" / "data" / "asimov1_facts.yaml"
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "reference" / "asimov1_facts.yaml"


def _sheets() -> list[Any]:
    params = [pytest.param(SHIPPED, id="shipped")]
    params.append(pytest.param(SHARED, id="shared",
                               marks=pytest.mark.skipif(not SHARED.exists(), reason="no shared reference sheet")))
    return params


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    return load_model()


def _hinges(sheet: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["joint"]["name"]: b["joint"] for b in sheet["kinematic_tree"]["bodies"]
            if b.get("joint", {}).get("type", "hinge") == "hinge"}


def test_shipped_sheet_is_a_verbatim_copy_of_the_reference() -> None:
    if not SHARED.exists():
        pytest.skip("no shared reference sheet")
    assert SHIPPED.read_bytes() == SHARED.read_bytes()


def test_total_mass(model: mujoco.MjModel) -> None:
    assert float(np.sum(model.body_mass)) == pytest.approx(32.22, abs=0.01)
    assert float(np.sum(model.body_mass)) == pytest.approx(facts()["derived_checks"]["total_mass_kg"], abs=1e-6)


def test_counts(model: mujoco.MjModel) -> None:
    counts = facts()["derived_checks"]["counts"]
    assert (model.nq, model.nv, model.njnt, model.nbody - 1) == (32, 31, 26, 26)
    assert (model.nq, model.nv, model.njnt, model.nbody - 1) == (
        counts["nq"], counts["nv"], counts["njnt"], counts["bodies_excl_world"])
    assert model.nu == 25


def test_options(model: mujoco.MjModel) -> None:
    opt = facts()["simulation_options"]["mjcf_option"]
    assert model.opt.timestep == 0.005 == opt["timestep"]
    assert model.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    assert model.opt.solver == mujoco.mjtSolver.mjSOL_NEWTON
    assert model.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC
    assert (model.opt.iterations, model.opt.ls_iterations, model.opt.noslip_iterations) == (
        opt["iterations"], opt["ls_iterations"], opt["noslip_iterations"])
    assert model.opt.impratio == opt["impratio"]


@pytest.mark.parametrize("sheet_path", _sheets())
def test_hinges_match_sheet(model: mujoco.MjModel, sheet_path: Path) -> None:
    sheet = yaml.safe_load(sheet_path.read_text(encoding="utf-8"))
    hinges = _hinges(sheet)
    model_hinges = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(model.njnt)
                    if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE]
    assert sorted(model_hinges) == sorted(hinges) == sorted(SIM_NAMES)
    order = [row["sim_joint"] for row in sheet["firmware_joint_order"]["joints"]]
    assert tuple(order) == SIM_NAMES
    for name, spec in hinges.items():
        j = model.joint(name)
        axis = np.asarray(spec["axis"], dtype=float)
        np.testing.assert_allclose(j.axis, axis / np.linalg.norm(axis), atol=1e-12, err_msg=name)
        np.testing.assert_allclose(j.range, spec["range"], atol=1e-12, err_msg=name)
        assert model.qpos0[j.qposadr[0]] == pytest.approx(spec.get("ref", 0.0), abs=1e-12), name
        assert model.dof_armature[j.dofadr[0]] == pytest.approx(spec["armature"]), name
        assert model.dof_frictionloss[j.dofadr[0]] == pytest.approx(spec["frictionloss"]), name
        assert model.dof_damping[j.dofadr[0]] == 0.0, name  # the PD motor model supplies Kd


def test_passive_damping_is_an_option() -> None:
    damped = load_model(passive_damping=True)
    for name, spec in _hinges(facts()).items():
        assert damped.dof_damping[damped.joint(name).dofadr[0]] == pytest.approx(spec["damping"]), name


def test_bodies_and_inertia_match_sheet(model: mujoco.MjModel) -> None:
    for b in facts()["kinematic_tree"]["bodies"]:
        body = model.body(b["name"])
        parent = model.body(int(body.parentid[0])).name
        assert (parent or "world") == b["parent"]
        np.testing.assert_allclose(body.pos, b["pos"], atol=1e-12)
        np.testing.assert_allclose(body.ipos, b["inertial"]["pos"], atol=1e-12)
        assert body.mass[0] == pytest.approx(b["inertial"]["mass"], rel=1e-12)
        ixx, iyy, izz, ixy, ixz, iyz = b["inertial"]["fullinertia"]
        rot = np.zeros(9)
        mujoco.mju_quat2Mat(rot, body.iquat)
        rot = rot.reshape(3, 3)
        tensor = rot @ np.diag(body.inertia) @ rot.T
        np.testing.assert_allclose(tensor, [[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], atol=1e-12)


def test_actuators_are_named_motors_with_effort_limits(model: mujoco.MjModel) -> None:
    for name in SIM_NAMES:
        act = model.actuator(name)
        assert model.joint(int(act.trnid[0])).name == name
        assert act.gear[0] == 1.0
        effort = BY_SIM_NAME[name].effort_limit
        np.testing.assert_allclose(act.forcerange, [-effort, effort])
        np.testing.assert_allclose(act.ctrlrange, [-effort, effort])


def test_foot_and_floor_contact_parameters(model: mujoco.MjModel) -> None:
    feet = facts()["feet"]
    for side, body_name in FOOT_BODIES.items():
        body = model.body(body_name).id
        spheres = [g for g in range(model.ngeom) if model.geom_bodyid[g] == body and model.geom_contype[g]]
        assert len(spheres) == 4, side
        for k, g in enumerate(spheres, start=1):
            geom = model.geom(g)
            assert geom.name == f"{side}_foot{k}_collision"
            assert geom.type[0] == mujoco.mjtGeom.mjGEOM_SPHERE
            assert geom.size[0] == pytest.approx(0.005)
            np.testing.assert_allclose(geom.friction, feet["friction_mjcf"])
            assert (geom.condim[0], geom.priority[0]) == (3, 1)
        positions = sorted(model.geom_pos[spheres].tolist())
        np.testing.assert_allclose(positions, sorted(feet["sphere_positions_in_ankle_roll_frame"]), atol=1e-12)
    floor = model.geom("floor")
    np.testing.assert_allclose(floor.friction, facts()["simulation_options"]["floor_geom"]["friction"])
    assert (floor.condim[0], floor.priority[0]) == (3, 0)


def test_every_parent_child_pair_is_excluded(model: mujoco.MjModel) -> None:
    pairs = {frozenset((int(a), int(b))) for a, b in zip(model.exclude_signature >> 16,
                                                         model.exclude_signature & 0xFFFF, strict=True)}
    expected = {frozenset((model.body(b["parent"]).id, model.body(b["name"]).id))
                for b in facts()["kinematic_tree"]["bodies"] if b["parent"] != "world"}
    assert len(expected) == 25
    assert expected <= pairs


def test_visual_geoms_neither_collide_nor_weigh(model: mujoco.MjModel) -> None:
    visual = [g for g in range(model.ngeom) if model.geom_group[g] == 2]
    assert len(visual) > 26  # every body drawn
    drawn = {int(model.geom_bodyid[g]) for g in visual}
    assert drawn == set(range(1, model.nbody))
    for g in visual:
        assert model.geom_contype[g] == 0 and model.geom_conaffinity[g] == 0
        assert model.geom_rgba[g][3] > 0.0


def test_sites_sensors_gantry_and_free_joint(model: mujoco.MjModel) -> None:
    for site, spec in facts()["sensors"]["other_sites"].items():
        np.testing.assert_allclose(model.site(site).pos, spec)
    np.testing.assert_allclose(model.site(IMU_SITE).pos, facts()["sensors"]["imu_site"]["pos"])
    for name, kind, dim in ((SENSOR_GYRO, mujoco.mjtSensor.mjSENS_GYRO, 3),
                            (SENSOR_ACCEL, mujoco.mjtSensor.mjSENS_ACCELEROMETER, 3),
                            (SENSOR_QUAT, mujoco.mjtSensor.mjSENS_FRAMEQUAT, 4),
                            (SENSOR_VELOCIMETER, mujoco.mjtSensor.mjSENS_VELOCIMETER, 3)):
        s = model.sensor(name)
        assert (s.type[0], s.dim[0]) == (kind, dim)
        assert model.site(int(s.objid[0])).name == IMU_SITE
    eq = model.equality(GANTRY_EQUALITY)
    assert eq.type[0] == mujoco.mjtEq.mjEQ_WELD and eq.active0[0] == 1
    assert model.body(int(eq.obj2id[0])).name == "pelvis_link"
    assert model.joint("floating_base").type[0] == mujoco.mjtJoint.mjJNT_FREE
    assert load_model(gantry=False).neq == 0
    assert load_model(floor=False).ngeom == model.ngeom - 1


def _lowest_foot_point(model: mujoco.MjModel, joint_pos: np.ndarray) -> float:
    """Bottom of the lowest foot sphere with the pelvis origin at z = 0, upright."""
    data = mujoco.MjData(model)
    for i, name in enumerate(SIM_NAMES):
        data.qpos[model.joint(name).qposadr[0]] = joint_pos[i]
    data.qpos[:3] = 0.0
    data.qpos[3:7] = (1.0, 0.0, 0.0, 0.0)
    mujoco.mj_kinematics(model, data)
    feet = [g for g in range(model.ngeom) if model.geom_contype[g] and model.geom_bodyid[g] in
            {model.body(b).id for b in FOOT_BODIES.values()}]
    return float(np.min(data.geom_xpos[feet, 2] - model.geom_size[feet, 0]))


def test_standing_heights_match_the_sheets_derived_checks() -> None:
    model = load_model(floor=False, gantry=False)
    derived = facts()["derived_checks"]
    zero = model.qpos0[[model.joint(n).qposadr[0] for n in SIM_NAMES]]
    # pelvis at 0.630 with all joints at zero: sphere bottoms 0.35 mm below the ground
    assert 0.630 + _lowest_foot_point(model, zero) == pytest.approx(
        derived["zero_pose_pelvis_z_0_630_foot_sphere_bottom_z"], abs=5e-5)
    assert -_lowest_foot_point(model, np.asarray(DEFAULT_POS)) == pytest.approx(
        derived["default_pose"]["pelvis_z_feet_touching_ground"], abs=5e-5)


def test_scene_steps_under_seeded_noise_without_warnings() -> None:
    model = load_model(gantry=False)
    data = mujoco.MjData(model)
    rng = np.random.default_rng(1234)
    effort = model.actuator_forcerange[:, 1]
    for _ in range(400):
        data.ctrl[:] = rng.uniform(-1.0, 1.0, model.nu) * effort
        mujoco.mj_step(model, data)
    assert data.warning.number.sum() == 0
    assert np.isfinite(data.qpos).all()


# -- URDF ---------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def urdf() -> ET.Element:
    return ET.fromstring(build_urdf())


def test_urdf_links_and_joints_match_mjcf(model: mujoco.MjModel, urdf: ET.Element) -> None:
    links = [link.get("name") for link in urdf.findall("link")]
    assert sorted(links) == sorted(model.body(b).name for b in range(1, model.nbody))
    moving = [j for j in urdf.findall("joint") if j.get("type") != "fixed"]
    assert len(moving) == 25
    assert sorted(j.get("name") for j in moving) == sorted(SIM_NAMES)
    for j in moving:
        name = j.get("name")
        spec = BY_SIM_NAME[name]
        limit = j.find("limit")
        assert float(limit.get("lower")) == pytest.approx(spec.range[0])
        assert float(limit.get("upper")) == pytest.approx(spec.range[1])
        assert float(limit.get("effort")) == spec.effort_limit
        assert float(limit.get("velocity")) == spec.velocity_limit
        child = model.body(j.find("child").get("link"))
        assert model.joint(name).bodyid[0] == child.id
    masses = [float(link.find("inertial/mass").get("value")) for link in urdf.findall("link")]
    assert sum(masses) == pytest.approx(float(np.sum(model.body_mass)), abs=1e-9)


def _rpy_matrix(rpy: list[float]) -> np.ndarray:
    r, p, y = rpy
    rx = np.array([[1, 0, 0], [0, math.cos(r), -math.sin(r)], [0, math.sin(r), math.cos(r)]])
    ry = np.array([[math.cos(p), 0, math.sin(p)], [0, 1, 0], [-math.sin(p), 0, math.cos(p)]])
    rz = np.array([[math.cos(y), -math.sin(y), 0], [math.sin(y), math.cos(y), 0], [0, 0, 1]])
    return rz @ ry @ rx


def _axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    k = axis / np.linalg.norm(axis)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * kx + (1 - math.cos(angle)) * kx @ kx


def test_urdf_kinematics_equal_mjcf_at_the_same_joint_angles(model: mujoco.MjModel, urdf: ET.Element) -> None:
    """Joint angles mean the same pose in both files (elbow ref baked into the URDF origin)."""
    rng = np.random.default_rng(7)
    q = rng.uniform(np.array([BY_SIM_NAME[n].range[0] for n in SIM_NAMES]),
                    np.array([BY_SIM_NAME[n].range[1] for n in SIM_NAMES]))
    data = mujoco.MjData(model)
    for i, name in enumerate(SIM_NAMES):
        data.qpos[model.joint(name).qposadr[0]] = q[i]
    data.qpos[:3] = 0.0
    data.qpos[3:7] = (1.0, 0.0, 0.0, 0.0)
    mujoco.mj_kinematics(model, data)

    frames: dict[str, tuple[np.ndarray, np.ndarray]] = {"pelvis_link": (np.eye(3), np.zeros(3))}
    joints = {j.find("child").get("link"): j for j in urdf.findall("joint")}
    pending = list(joints)
    while pending:
        child = pending.pop(0)
        j = joints[child]
        parent = j.find("parent").get("link")
        if parent not in frames:
            pending.append(child)
            continue
        rot_p, pos_p = frames[parent]
        origin = j.find("origin")
        xyz = np.array([float(v) for v in origin.get("xyz").split()])
        rpy = [float(v) for v in origin.get("rpy").split()]
        axis = np.array([float(v) for v in j.find("axis").get("xyz").split()])
        angle = q[SIM_NAMES.index(j.get("name"))]
        frames[child] = (rot_p @ _rpy_matrix(rpy) @ _axis_angle(axis, angle), pos_p + rot_p @ xyz)
    for name, (rot, pos) in frames.items():
        body = model.body(name).id
        np.testing.assert_allclose(pos, data.xpos[body], atol=1e-9, err_msg=name)
        np.testing.assert_allclose(rot, data.xmat[body].reshape(3, 3), atol=1e-9, err_msg=name)


def test_export_model_writes_loadable_files(tmp_path: Path) -> None:
    paths = export_model(tmp_path / "out")
    assert [p.name for p in paths] == ["asimov1.xml", "asimov1.urdf"]
    reloaded = mujoco.MjModel.from_xml_path(str(paths[0]))
    assert reloaded.nq == 32
    assert ET.parse(paths[1]).getroot().tag == "robot"


def test_build_mjcf_is_deterministic_xml() -> None:
    text = build_mjcf()
    assert text == build_mjcf()  # exported files diff cleanly between runs
    root = ET.fromstring(text)
    assert root.tag == "mujoco" and root.find("actuator") is not None
    assert len(root.findall("actuator/motor")) == 25
