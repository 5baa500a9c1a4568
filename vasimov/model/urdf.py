"""URDF of Asimov 1 for RViz / Foxglove, derived from the same MJCF the simulator runs.

Geometry is read back from the *compiled* MuJoCo model rather than re-derived from the sheet, so what the viewer
draws is exactly what MuJoCo simulates (the collision shapes) and displays (the primitive visuals). URDF has no
capsule, so each capsule becomes a cylinder plus two end spheres, as the upstream URDF does.

Joint zero: the MJCF elbows carry ``ref = +/-0.785398``; the URDF instead rotates the elbow joint origin by
``Rot(axis, -ref)`` so that a joint angle means the same physical pose in both (the sheet's ``elbow_ref_note``)
and ``/joint_states`` from the plant can drive the URDF unchanged.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np
from numpy.typing import NDArray

from vasimov.joints import BY_SIM_NAME
from vasimov.model.mjcf import MODEL_NAME, build_mjcf

URDF_FILE = f"{MODEL_NAME}.urdf"
MJCF_FILE = f"{MODEL_NAME}.xml"
VISUAL_GROUP = 2


def _fmt(values: NDArray[np.float64] | list[float] | tuple[float, ...], digits: int = 15) -> str:
    """Numbers rounded to ``digits`` significant figures (sheet values are 15-digit; this hides float32 and
    rotation round-off noise), with ``-0.0`` and round-off dust below 1e-15 printed as ``0.0``."""
    return " ".join(repr(float(f"{float(v):.{digits}g}") + 0.0) if abs(v) > 1e-15 else "0.0" for v in values)


def _rpy(mat: NDArray[np.float64]) -> NDArray[np.float64]:
    """URDF fixed-axis roll/pitch/yaw (R = Rz(yaw) Ry(pitch) Rx(roll)) of a rotation matrix."""
    pitch = math.asin(max(-1.0, min(1.0, -mat[2, 0])))
    if abs(mat[2, 0]) < 1.0 - 1e-9:
        roll = math.atan2(mat[2, 1], mat[2, 2])
        yaw = math.atan2(mat[1, 0], mat[0, 0])
    else:  # gimbal lock: put everything into yaw
        roll = 0.0
        yaw = math.atan2(-mat[0, 1], mat[1, 1])
    return np.array([roll, pitch, yaw])


def _quat_mat(quat: NDArray[np.float64]) -> NDArray[np.float64]:
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, np.asarray(quat, dtype=np.float64))
    return mat.reshape(3, 3)


def _origin(parent: ET.Element, pos: NDArray[np.float64], mat: NDArray[np.float64] | None = None) -> None:
    rpy = np.zeros(3) if mat is None else _rpy(mat)
    ET.SubElement(parent, "origin", xyz=_fmt(pos), rpy=_fmt(rpy))


def _shape(
    link: ET.Element,
    tag: str,
    name: str,
    pos: NDArray[np.float64],
    mat: NDArray[np.float64],
    geometry: tuple[str, dict[str, str]],
    rgba: NDArray[np.float32] | None,
) -> None:
    el = ET.SubElement(link, tag, name=name)
    _origin(el, pos, mat)
    geom_el = ET.SubElement(el, "geometry")
    ET.SubElement(geom_el, geometry[0], geometry[1])
    if rgba is not None:
        material = ET.SubElement(el, "material", name=f"{name}_material")
        ET.SubElement(material, "color", rgba=_fmt(rgba, digits=4))


def _add_geom(link: ET.Element, model: mujoco.MjModel, g: int, tag: str, name: str) -> None:
    """One MuJoCo geom as URDF primitives (capsule -> cylinder + two spheres)."""
    gtype = model.geom_type[g]
    size = model.geom_size[g]
    pos = model.geom_pos[g].copy()
    mat = _quat_mat(model.geom_quat[g])
    rgba = model.geom_rgba[g] if tag == "visual" else None
    if gtype == mujoco.mjtGeom.mjGEOM_CAPSULE:
        radius, half = float(size[0]), float(size[1])
        _shape(link, tag, name, pos, mat, ("cylinder", {"radius": _fmt([radius]), "length": _fmt([2 * half])}), rgba)
        for k, sign in enumerate((1.0, -1.0)):
            end = pos + sign * half * mat[:, 2]
            _shape(link, tag, f"{name}_end{k}", end, np.eye(3), ("sphere", {"radius": _fmt([radius])}), rgba)
    elif gtype == mujoco.mjtGeom.mjGEOM_CYLINDER:
        _shape(link, tag, name, pos, mat,
               ("cylinder", {"radius": _fmt([size[0]]), "length": _fmt([2 * size[1]])}), rgba)
    elif gtype == mujoco.mjtGeom.mjGEOM_SPHERE:
        _shape(link, tag, name, pos, mat, ("sphere", {"radius": _fmt([size[0]])}), rgba)
    elif gtype == mujoco.mjtGeom.mjGEOM_BOX:
        _shape(link, tag, name, pos, mat, ("box", {"size": _fmt(2 * size)}), rgba)
    else:
        raise ValueError(f"geom {name!r}: type {mujoco.mjtGeom(gtype).name} has no URDF primitive here")


def link_names() -> tuple[str, ...]:
    """The robot's links, i.e. its MJCF bodies without the world, floor and gantry (what a push may name)."""
    model = mujoco.MjModel.from_xml_string(build_mjcf(floor=False, gantry=False))
    return tuple(mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b) for b in range(1, model.nbody))


def build_urdf() -> str:
    """The robot (no floor, no gantry) as URDF text; link names = MJCF body names, joint names = MJCF joints."""
    model = mujoco.MjModel.from_xml_string(build_mjcf(floor=False, gantry=False))
    root = ET.Element("robot", name=MODEL_NAME)

    def name_of(obj: mujoco.mjtObj, i: int) -> str:
        return mujoco.mj_id2name(model, obj, i) or f"{obj.name}_{i}"

    for b in range(1, model.nbody):
        bname = name_of(mujoco.mjtObj.mjOBJ_BODY, b)
        link = ET.SubElement(root, "link", name=bname)
        inertial = ET.SubElement(link, "inertial")
        _origin(inertial, model.body_ipos[b])
        ET.SubElement(inertial, "mass", value=_fmt([model.body_mass[b]]))
        # MuJoCo stores principal moments in the iquat frame; URDF readers expect the full tensor in the link frame.
        rot = _quat_mat(model.body_iquat[b])
        tensor = rot @ np.diag(model.body_inertia[b]) @ rot.T
        ET.SubElement(inertial, "inertia", ixx=_fmt([tensor[0, 0]]), iyy=_fmt([tensor[1, 1]]),
                      izz=_fmt([tensor[2, 2]]), ixy=_fmt([tensor[0, 1]]), ixz=_fmt([tensor[0, 2]]),
                      iyz=_fmt([tensor[1, 2]]))
        for g in np.flatnonzero(model.geom_bodyid == b):
            gname = name_of(mujoco.mjtObj.mjOBJ_GEOM, int(g))
            collides = (model.geom_contype[g] | model.geom_conaffinity[g]) != 0
            if collides:
                _add_geom(link, model, int(g), "collision", gname)
            elif model.geom_group[g] == VISUAL_GROUP:  # the MJCF already mirrors each capsule as a visual
                _add_geom(link, model, int(g), "visual", gname)

    for b in range(1, model.nbody):
        parent = int(model.body_parentid[b])
        if parent == 0:
            continue  # the floating base: URDF has no free joint, the viewer places it from odometry/TF
        if model.body_jntnum[b] != 1:
            raise ValueError(f"body {name_of(mujoco.mjtObj.mjOBJ_BODY, b)!r} needs exactly one joint for URDF")
        j = int(model.body_jntadr[b])
        jname = name_of(mujoco.mjtObj.mjOBJ_JOINT, j)
        if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE:
            raise ValueError(f"joint {jname!r} is not a hinge")
        axis = model.jnt_axis[j] / np.linalg.norm(model.jnt_axis[j])
        ref = float(model.qpos0[model.jnt_qposadr[j]])
        # child frame = origin * Rot(axis, q); the MJCF body frame is reached at q = ref.
        quat_body = model.body_quat[b].copy()
        quat_ref = np.zeros(4)
        mujoco.mju_axisAngle2Quat(quat_ref, axis, -ref)
        quat = np.zeros(4)
        mujoco.mju_mulQuat(quat, quat_body, quat_ref)
        joint = ET.SubElement(root, "joint", name=jname, type="revolute")
        _origin(joint, model.body_pos[b], _quat_mat(quat))
        ET.SubElement(joint, "parent", link=name_of(mujoco.mjtObj.mjOBJ_BODY, parent))
        ET.SubElement(joint, "child", link=name_of(mujoco.mjtObj.mjOBJ_BODY, b))
        ET.SubElement(joint, "axis", xyz=_fmt(axis))
        spec = BY_SIM_NAME[jname]
        lo, hi = (float(v) for v in model.jnt_range[j])
        ET.SubElement(joint, "limit", lower=_fmt([lo]), upper=_fmt([hi]), effort=_fmt([spec.effort_limit]),
                      velocity=_fmt([spec.velocity_limit]))
        ET.SubElement(joint, "dynamics", damping=_fmt([model.dof_damping[model.jnt_dofadr[j]]]),
                      friction=_fmt([model.dof_frictionloss[model.jnt_dofadr[j]]]))

    ET.indent(root)
    return '<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def export_model(directory: str | Path) -> list[Path]:
    """Write ``asimov1.xml`` (the full scene) and ``asimov1.urdf`` into ``directory`` (created if missing)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / MJCF_FILE, out / URDF_FILE]
    paths[0].write_text(build_mjcf(), encoding="utf-8")
    paths[1].write_text(build_urdf(), encoding="utf-8")
    return paths
