"""The walker's own rigid-body model: the exported URDF plus the named frames placo's humanoid tools look up.

Why a controller-private URDF: ``placo.HumanoidRobot`` finds the soles and the trunk by frame name (``left_foot``,
``right_foot``, ``trunk``; ``left_hip_yaw`` to measure the leg spacing). The public export
(:func:`vasimov.model.urdf.build_urdf`, what RViz/Foxglove draw) names links after the MJCF bodies, so the walker
appends fixed child links carrying those names, placed from the model itself: a sole frame at the middle of the four
contact spheres of each foot, on the plane through their lowest points. Nothing here reads the running plant.
"""

from __future__ import annotations

import functools
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import mujoco
import numpy as np

from vasimov.model.mjcf import build_mjcf
from vasimov.model.urdf import build_urdf

SIDES = ("left", "right")
TRUNK_PARENT = "pelvis_link"


@dataclass(frozen=True)
class Sole:
    """A foot's contact geometry in its ankle-roll link frame (from the model's four contact spheres)."""

    centre: np.ndarray  # (3,) middle of the spheres' footprint, at the height of their lowest points
    half_length: float  # m, toe-heel half extent of the sphere centres
    half_width: float  # m, narrowest half width between sphere centres (the heel pair)


@functools.cache
def soles() -> dict[str, Sole]:
    """Each foot's sole from the compiled MJCF: the collision spheres of its ankle-roll body."""
    model = mujoco.MjModel.from_xml_string(build_mjcf(floor=False, gantry=False))
    out = {}
    for side in SIDES:
        body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, f"{side}_ankle_roll_link")
        geoms = [g for g in np.flatnonzero(model.geom_bodyid == body)
                 if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_SPHERE and model.geom_contype[g] != 0]
        pos = model.geom_pos[geoms]
        radius = model.geom_size[geoms, 0]
        lo, hi = pos.min(axis=0), pos.max(axis=0)
        centre = np.array([(lo[0] + hi[0]) / 2.0, (lo[1] + hi[1]) / 2.0, float((pos[:, 2] - radius).min())])
        out[side] = Sole(centre=centre, half_length=float(hi[0] - lo[0]) / 2.0,
                         half_width=float(np.abs(pos[:, 1]).min()))
    return out


def _fixed_frame(root: ET.Element, name: str, parent: str, xyz: np.ndarray) -> None:
    ET.SubElement(root, "link", name=name)
    joint = ET.SubElement(root, "joint", name=f"{name}_frame", type="fixed")
    ET.SubElement(joint, "origin", xyz=" ".join(f"{v:.9g}" for v in xyz), rpy="0 0 0")
    ET.SubElement(joint, "parent", link=parent)
    ET.SubElement(joint, "child", link=name)


@functools.cache
def walker_urdf() -> str:
    """The exported URDF with the frames placo's humanoid tools need (text; cached per process)."""
    root = ET.fromstring(build_urdf())
    for side, sole in soles().items():
        _fixed_frame(root, f"{side}_foot", f"{side}_ankle_roll_link", sole.centre)
        _fixed_frame(root, f"{side}_hip_yaw", f"{side}_hip_yaw_link", np.zeros(3))
    _fixed_frame(root, "trunk", TRUNK_PARENT, np.zeros(3))
    ET.indent(root)
    return '<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
