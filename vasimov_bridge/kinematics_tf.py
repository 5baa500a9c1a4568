"""Link transforms of Asimov 1 from joint angles and the base pose, for Foxglove's 3D panel.

The URDF on ``/robot_description`` names its links after the MuJoCo bodies and puts each link frame on the body
frame (``vasimov.model.urdf``), so the viewer draws the robot right when it gets, for every link, the pose of that
body relative to its parent, plus ``world -> pelvis_link``. tf2_msgs is not installable here, so the bridge sends
these as Foxglove ``FrameTransforms``; this module computes them.

The numbers follow MuJoCo's own forward kinematics (``mj_kinematics``) for the same model, term by term:
a body sits at ``body_pos``/``body_quat`` in its parent, each hinge then turns it by ``q - qpos0`` about the joint
axis through the joint anchor ``jnt_pos``; a free joint places the root body directly at its (normalised) pose.
Tests compare the composed transforms with ``MjData.xpos``/``xquat`` for random angles and base poses.

Pure: a compiled kinematic model in, numbers out; no ROS, no SDK.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import mujoco
import numpy as np
from numpy.typing import NDArray

from vasimov.frames import quat_multiply, rotate
from vasimov.model.mjcf import load_model

WORLD_FRAME = "world"


@dataclass(frozen=True)
class LinkTransform:
    """Pose of ``child`` in ``parent``: translation (m) and rotation as a unit quaternion (x, y, z, w)."""

    parent: str
    child: str
    translation: tuple[float, float, float]
    rotation_xyzw: tuple[float, float, float, float]


@dataclass(frozen=True)
class _Link:
    name: str
    parent: str
    pos: NDArray[np.float64]  # body_pos in the parent frame
    quat: NDArray[np.float64]  # body_quat (w, x, y, z)
    slot: int | None  # index into the joint vector, None for a body without a hinge
    axis: NDArray[np.float64]  # unit hinge axis in the body frame
    anchor: NDArray[np.float64]  # jnt_pos in the body frame
    ref: float  # qpos0 of the hinge: the angle at which the body frame is the one the MJCF declares


class KinematicTree:
    """The robot's body tree, resolved once; ``transforms()`` turns a joint state into one pose per link."""

    def __init__(self, model: mujoco.MjModel | None = None) -> None:
        model = model if model is not None else load_model(floor=False, gantry=False)

        def name(i: int) -> str:
            return mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, i) or f"body_{i}"

        links: list[_Link] = []
        joint_names: list[str] = []
        root: str | None = None
        for b in range(1, model.nbody):
            parent = int(model.body_parentid[b])
            njnt = int(model.body_jntnum[b])
            j = int(model.body_jntadr[b])
            if njnt == 1 and model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
                if parent != 0 or root is not None:
                    raise ValueError(f"body {name(b)!r}: only one free-floating root under the world is supported")
                root = name(b)
                continue
            if njnt > 1 or (njnt == 1 and model.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE):
                raise ValueError(f"body {name(b)!r}: only bodies with one hinge or none are supported")
            slot = None
            axis = np.zeros(3)
            anchor = np.zeros(3)
            ref = 0.0
            if njnt == 1:
                slot = len(joint_names)
                joint_names.append(mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j))
                axis = np.array(model.jnt_axis[j], dtype=float)
                axis /= np.linalg.norm(axis)
                anchor = np.array(model.jnt_pos[j], dtype=float)
                ref = float(model.qpos0[model.jnt_qposadr[j]])
            links.append(_Link(name(b), WORLD_FRAME if parent == 0 else name(parent),
                               np.array(model.body_pos[b], dtype=float), np.array(model.body_quat[b], dtype=float),
                               slot, axis, anchor, ref))
        if root is None:
            raise ValueError("the model has no free-floating root body")
        self.root = root
        self.links: tuple[_Link, ...] = tuple(links)
        self.joint_names: tuple[str, ...] = tuple(joint_names)
        self._slot_of = {n: i for i, n in enumerate(self.joint_names)}
        self._orders: dict[tuple[str, ...], NDArray[np.intp]] = {}
        self._hinged = np.array([link.slot is not None for link in links])
        self._slots = np.array([link.slot if link.slot is not None else 0 for link in links], dtype=np.intp)
        self._refs = np.array([link.ref for link in links])
        self._axes = np.array([link.axis for link in links]).reshape(-1, 3)
        self._anchors = np.array([link.anchor for link in links]).reshape(-1, 3)
        self._pos = np.array([link.pos for link in links]).reshape(-1, 3)
        self._quats = np.array([link.quat for link in links]).reshape(-1, 4)

    @property
    def link_names(self) -> tuple[str, ...]:
        return (self.root, *(link.name for link in self.links))

    def order_for(self, names: Sequence[str]) -> NDArray[np.intp]:
        """Index array taking a message's joint vector (in ``names`` order) to this tree's joint order.

        Every joint of the tree must be named exactly once; extra names are refused too, since they mean the
        message describes another robot. Cached per name tuple (a publisher keeps its order).
        """
        key = tuple(names)
        order = self._orders.get(key)
        if order is not None:
            return order
        unknown = [n for n in key if n not in self._slot_of]
        missing = [n for n in self.joint_names if n not in key]
        if unknown or missing or len(set(key)) != len(key):
            raise ValueError(f"joint names do not match the robot: unknown {unknown}, missing {missing}, "
                             f"{len(key) - len(set(key))} duplicated; expected the {len(self.joint_names)} joints "
                             f"{list(self.joint_names)}")
        position = {n: i for i, n in enumerate(key)}
        order = np.array([position[n] for n in self.joint_names], dtype=np.intp)
        self._orders[key] = order
        return order

    def transforms(self, q: Sequence[float] | NDArray[np.float64], base_pos: Sequence[float],
                   base_quat_wxyz: Sequence[float]) -> list[LinkTransform]:
        """``world -> root`` from the base pose, then every link in its parent; ``q`` in ``joint_names`` order."""
        qv = np.asarray(q, dtype=float)
        if qv.shape != (len(self.joint_names),):
            raise ValueError(f"expected {len(self.joint_names)} joint angles, got shape {qv.shape}")
        if not np.isfinite(qv).all():
            bad = [self.joint_names[i] for i in np.flatnonzero(~np.isfinite(qv))]
            raise ValueError(f"non-finite joint angle for {bad}")
        pos = np.asarray(base_pos, dtype=float)
        quat = np.asarray(base_quat_wxyz, dtype=float)
        if pos.shape != (3,) or quat.shape != (4,) or not (np.isfinite(pos).all() and np.isfinite(quat).all()):
            raise ValueError(f"base pose must be a finite position (3) and quaternion (4), got {pos}, {quat}")
        norm = float(np.linalg.norm(quat))
        if norm < 1e-9:
            raise ValueError("base orientation quaternion has zero length")
        quat = quat / norm  # MuJoCo normalises the free joint's quaternion the same way
        out = [_transform(WORLD_FRAME, self.root, pos, quat)]
        # all links at once: each is relative to its parent, so they are independent of each other
        angles = np.where(self._hinged, qv[self._slots] - self._refs, 0.0) if len(qv) else np.zeros(len(self.links))
        half = 0.5 * angles
        turn = np.concatenate([np.cos(half)[:, None], self._axes * np.sin(half)[:, None]], axis=1)
        rot = quat_multiply(self._quats, turn)
        # the hinge turns the body about its anchor: the anchor stays where the un-turned body puts it
        trans = self._pos + rotate(self._quats, self._anchors) - rotate(rot, self._anchors)
        for i, link in enumerate(self.links):
            out.append(_transform(link.parent, link.name, trans[i], rot[i]))
        return out


def _transform(parent: str, child: str, trans: NDArray[np.float64], quat_wxyz: NDArray[np.float64]) -> LinkTransform:
    return LinkTransform(parent, child, (float(trans[0]), float(trans[1]), float(trans[2])),
                         (float(quat_wxyz[1]), float(quat_wxyz[2]), float(quat_wxyz[3]), float(quat_wxyz[0])))


def compose_world_poses(transforms: Sequence[LinkTransform]) -> dict[str, tuple[NDArray[np.float64],
                                                                               NDArray[np.float64]]]:
    """Each frame's pose in ``world`` (position, quaternion w, x, y, z) by chaining parent-relative transforms;
    parents must come before children, as ``KinematicTree.transforms`` orders them."""
    poses: dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]] = {
        WORLD_FRAME: (np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]))}
    for t in transforms:
        if t.parent not in poses:
            raise ValueError(f"frame {t.child!r} comes before its parent {t.parent!r}")
        p_pos, p_quat = poses[t.parent]
        x, y, z, w = t.rotation_xyzw
        local = np.array([w, x, y, z])
        poses[t.child] = (p_pos + rotate(p_quat, np.asarray(t.translation)), quat_multiply(p_quat, local))
    return poses


__all__ = ["WORLD_FRAME", "KinematicTree", "LinkTransform", "compose_world_poses"]
