"""The controller's own copy of the robot model: forward kinematics, Jacobians, gravity torques and leg IK.

The built-in walker is allowed exactly what the real robot's policy gets (IMU, encoders, command) plus a model of
itself. This module is that model. It owns a private ``MjData`` that is never stepped: the controller writes the
measured (or desired) joint angles and the IMU attitude into it and reads geometry back. Nothing here touches the
running simulation.

Every index is resolved by name once, in :class:`LegIndex` / :class:`RobotKinematics`, so a change in the MJCF
declaration order cannot silently permute a leg.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np
from numpy.typing import NDArray

from vasimov import joints

SIDES: tuple[str, str] = ("left", "right")
LEG_JOINT_SUFFIXES: tuple[str, ...] = ("hip_pitch", "hip_roll", "hip_yaw", "knee", "ankle_pitch", "ankle_roll")
FOOT_BODY = "{side}_ankle_roll_link"
FOOT_GEOM_PREFIX = "{side}_foot"  # the sheet's contact spheres: <side>_foot<k>_collision
ROOT_BODY = "pelvis_link"

Vec = NDArray[np.float64]

try:  # the LAPACK gesv gufunc np.linalg.solve calls for one right-hand side, without the wrapper's per-call cost
    from numpy.linalg._umath_linalg import solve1 as _gesv
except ImportError:  # pragma: no cover - a numpy without the private module: the public call, same result
    _gesv = None


def solve_small(a: Vec, b: Vec) -> Vec:
    """``np.linalg.solve(a, b)`` bit for bit, for a nonsingular ``a`` (the leg IK's damped normal equations).

    Why: the IK solves two 6x6 systems per iteration, ~9 a tick, and the public wrapper's type checks and error
    state cost ~4x the LU itself. Singularity is not checked: the damping keeps the matrix positive definite.
    """
    if _gesv is None:
        return np.linalg.solve(a, b)
    return _gesv(a, b, signature="dd->d")


def _load_default_model() -> mujoco.MjModel:
    # Imported lazily so this module can be imported (and its pure helpers tested) without compiling a model.
    from vasimov.model.mjcf import load_model

    return load_model(floor=False, gantry=False)


@dataclass(frozen=True)
class LegIndex:
    """Where one leg's six joints live in every index space the controller uses."""

    side: str
    joint: tuple[int, ...]  # joint-table indices (vasimov.joints order), hip pitch .. ankle roll
    qpos: NDArray[np.intp]  # qpos addresses in the controller's model
    dof: NDArray[np.intp]  # dof (qvel / Jacobian column) addresses
    foot_body: int
    sole_offset: Vec  # sole centre in the foot body frame: middle of the contact spheres, on the ground plane
    sole_half_length: float  # half the support rectangle along the foot x axis
    sole_half_width: float  # half the narrower (heel) width of the support rectangle


def yaw_rotation(yaw: float) -> Vec:
    """Rotation matrix about world z."""
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def clamp(x: float, lo: float, hi: float) -> float:
    """``x`` limited to [lo, hi]: ``np.clip``'s result for one number (NaN passes through, ``hi`` wins when lo > hi)
    without its per-call dispatch, which the walker paid ~45 times a tick."""
    return min(max(x, lo), hi)


def rot_log(R: Vec) -> Vec:
    """Rotation vector of ``R`` (axis * angle); accurate enough for IK errors far from pi."""
    # scalar arithmetic (np.trace's sum in its order; math's acos and sin, which gave numpy's bits on every value
    # tried): the leg IK calls this ~8 times a tick, where numpy's per-call dispatch cost more than the arithmetic
    cos_a = clamp(float((R[0, 0] + R[1, 1]) + R[2, 2] - 1.0) * 0.5, -1.0, 1.0)
    a = math.acos(cos_a)
    v = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    if a < 1e-6:
        return 0.5 * v
    return v * (a / (2.0 * math.sin(a)))


def roll_pitch_yaw(R: Vec) -> tuple[float, float, float]:
    """ZYX Euler angles (roll about x, pitch about y, yaw about z) of a body-to-world rotation."""
    yaw = float(np.arctan2(R[1, 0], R[0, 0]))
    pitch = float(np.arcsin(clamp(-R[2, 0], -1.0, 1.0)))
    roll = float(np.arctan2(R[2, 1], R[2, 2]))
    return roll, pitch, yaw


def rotation_from_rpy(roll: float, pitch: float, yaw: float) -> Vec:
    """Inverse of :func:`roll_pitch_yaw` (R = Rz(yaw) Ry(pitch) Rx(roll))."""
    cr, sr = np.cos(roll), np.sin(roll)
    cp, sp = np.cos(pitch), np.sin(pitch)
    cy, sy = np.cos(yaw), np.sin(yaw)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


class RobotKinematics:
    """Kinematics-only Asimov 1: measured-state geometry, COM Jacobian, static torques and two-leg IK.

    Two ``MjData`` are kept: ``meas`` holds the measured state (IMU attitude + encoders) for estimation and
    feed-forward, ``ik`` holds the desired configuration the IK iterates on (warm-started tick to tick). The floating
    base sits at the origin in both; callers work with positions relative to the pelvis, rotated into a
    gravity-aligned frame by the IMU attitude.
    """

    def __init__(self, model: mujoco.MjModel | None = None) -> None:
        self.model = model if model is not None else _load_default_model()
        m = self.model
        self.meas = mujoco.MjData(m)
        self.ik = mujoco.MjData(m)
        self.root_body = m.body(ROOT_BODY).id
        free = [j for j in range(m.njnt) if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
        if len(free) != 1:
            raise ValueError(f"expected one free joint in the model, found {len(free)}")
        self.base_qpos = int(m.jnt_qposadr[free[0]])
        self.base_dof = int(m.jnt_dofadr[free[0]])
        self.joint_qpos = np.array([m.joint(n).qposadr[0] for n in joints.SIM_NAMES], dtype=np.intp)
        self.joint_dof = np.array([m.joint(n).dofadr[0] for n in joints.SIM_NAMES], dtype=np.intp)
        self.legs: dict[str, LegIndex] = {s: self._leg(s) for s in SIDES}
        self._leg_lo = {s: joints.RANGE_LO[list(leg.joint)].copy() for s, leg in self.legs.items()}
        self._leg_hi = {s: joints.RANGE_HI[list(leg.joint)].copy() for s, leg in self.legs.items()}
        self.base_dofs = np.arange(self.base_dof, self.base_dof + 6, dtype=np.intp)
        self._jacp = np.zeros((3, m.nv))
        self._jacr = np.zeros((3, m.nv))
        # one leg's sole Jacobian, position rows then rotation; Fortran order, as np.vstack of the column-indexed
        # mj_jac blocks gave it: the products below then sum in the same order, and the walk stays bit-identical
        self._jac6 = np.zeros((6, len(LEG_JOINT_SUFFIXES)), order="F")
        self._ones6 = np.ones(6)
        self._damped_eye: dict[float, Vec] = {}
        # each leg's stops, and the lines within 1e-9 of them from which a joint counts as on its stop
        self._leg_stops = {s: (self._leg_lo[s], self._leg_hi[s], self._leg_lo[s] + 1e-9, self._leg_hi[s] - 1e-9)
                           for s in self.legs}
        self._jcom = np.zeros((3, m.nv))
        self._bias = np.zeros(m.nv)
        for d in (self.meas, self.ik):
            d.qpos[:] = m.qpos0
            d.qpos[self.base_qpos + 3 : self.base_qpos + 7] = (1.0, 0.0, 0.0, 0.0)
            d.qpos[self.joint_qpos] = joints.DEFAULT_POS
            d.qvel[:] = 0.0
        self.total_mass = float(m.body_subtreemass[self.root_body])

    def _leg(self, side: str) -> LegIndex:
        m = self.model
        names = tuple(f"{side}_{s}_joint" for s in LEG_JOINT_SUFFIXES)
        body = m.body(FOOT_BODY.format(side=side)).id
        prefix = FOOT_GEOM_PREFIX.format(side=side)
        spheres = [
            g
            for g in range(m.ngeom)
            if m.geom_bodyid[g] == body and (m.geom(g).name or "").startswith(prefix)
            and m.geom_type[g] == mujoco.mjtGeom.mjGEOM_SPHERE
        ]
        if len(spheres) < 3:
            raise ValueError(f"{side} foot: expected >= 3 contact spheres named {prefix}*, found {len(spheres)}")
        pos = m.geom_pos[spheres]
        radius = float(m.geom_size[spheres[0], 0])
        lo, hi = pos.min(axis=0), pos.max(axis=0)
        sole = np.array([(lo[0] + hi[0]) / 2.0, (lo[1] + hi[1]) / 2.0, lo[2] - radius])
        # narrowest width among the sphere rows (heel pair) bounds the lateral support everywhere along the foot
        xs = pos[:, 0]
        heel = pos[np.isclose(xs, lo[0])]
        half_width = float((heel[:, 1].max() - heel[:, 1].min()) / 2.0)
        return LegIndex(
            side=side,
            joint=tuple(joints.joint_index(n) for n in names),
            qpos=np.array([m.joint(n).qposadr[0] for n in names], dtype=np.intp),
            dof=np.array([m.joint(n).dofadr[0] for n in names], dtype=np.intp),
            foot_body=body,
            sole_offset=sole,
            sole_half_length=float((hi[0] - lo[0]) / 2.0),
            sole_half_width=half_width,
        )

    # ------------------------------------------------------------------ measured state
    def set_measured(self, quat: Vec, q: Vec) -> None:
        """Load the IMU attitude and the 25 encoder angles; base position stays at the origin."""
        d = self.meas
        d.qpos[self.base_qpos : self.base_qpos + 3] = 0.0
        d.qpos[self.base_qpos + 3 : self.base_qpos + 7] = quat
        d.qpos[self.joint_qpos] = q
        mujoco.mj_kinematics(self.model, d)
        mujoco.mj_comPos(self.model, d)

    def sole_pose(self, side: str, data: mujoco.MjData | None = None) -> tuple[Vec, Vec]:
        """Sole-centre position and foot rotation (world-aligned frame, pelvis origin at 0)."""
        d = self.meas if data is None else data
        leg = self.legs[side]
        R = d.xmat[leg.foot_body].reshape(3, 3)
        return d.xpos[leg.foot_body] + R @ leg.sole_offset, R.copy()

    def com(self, data: mujoco.MjData | None = None) -> Vec:
        d = self.meas if data is None else data
        return d.subtree_com[self.root_body].copy()

    def com_velocity_rel_sole(self, side: str, gyro: Vec, qd: Vec) -> Vec:
        """COM velocity relative to a sole point that is not moving (the stance foot), world-aligned.

        With the stance sole fixed to the ground, the COM velocity follows from the joint rates and the base angular
        velocity alone: ``(J_com - J_sole) @ v`` with the base linear velocity set to zero (it cancels).
        """
        m, d = self.model, self.meas
        v = np.zeros(m.nv)
        v[self.base_dof + 3 : self.base_dof + 6] = gyro  # free-joint angular velocity is in the body frame
        v[self.joint_dof] = qd
        mujoco.mj_jacSubtreeCom(m, d, self._jcom, self.root_body)
        p, _ = self.sole_pose(side)
        mujoco.mj_jac(m, d, self._jacp, None, p, self.legs[side].foot_body)
        return (self._jcom - self._jacp) @ v

    def contact_torques(self, loads: list[tuple[str, Vec, Vec]], data: mujoco.MjData | None = None) -> Vec:
        """Joint torques (25) that carry gravity while the soles push with the planned forces.

        ``loads`` holds ``(side, point, force)``: a pure force (world-aligned, pelvis-origin frame) through a point
        on that sole, normally the planned centre of pressure. During single support the centre of mass is *not*
        above the foot; the planned ground force is ``m (g + c_ddot)`` through the planned ZMP, and the stance leg
        must transmit exactly that. A static balance would instead demand an ankle-roll moment the 17 N*m motor
        and the 4 cm wide sole cannot give, and a hip-roll torque that rolls the pelvis over the stance foot.
        """
        m = self.model
        d = self.meas if data is None else data
        d.qvel[:] = 0.0
        mujoco.mj_rne(m, d, 0, self._bias)
        tau = self._bias[self.joint_dof].copy()
        for side, point, force in loads:
            mujoco.mj_jac(m, d, self._jacp, None, point, self.legs[side].foot_body)
            tau -= self._jacp[:, self.joint_dof].T @ force
        return tau

    def leg_inverse_dynamics(self, side: str, qd_des: Vec, qdd_des: Vec) -> Vec:
        """Torques (6,) that move a free (swing) leg along ``qd_des``/``qdd_des`` against inertia and gravity.

        Rigid-body inverse dynamics of the measured configuration with the pelvis held still: at 50 Hz with
        stiffness-limited PD, a swing leg folding 0.3 rad in 0.15 s otherwise lags its targets by several
        centimetres at the foot and lands ahead of where it was sent.
        """
        m, d = self.model, self.meas
        leg = self.legs[side]
        d.qvel[:] = 0.0
        d.qvel[leg.dof] = qd_des
        d.qacc[:] = 0.0
        d.qacc[leg.dof] = qdd_des
        mujoco.mj_rne(m, d, 1, self._bias)
        d.qvel[:] = 0.0
        return self._bias[leg.dof].copy()

    # ------------------------------------------------------------------ inverse kinematics
    def ik_set_posture(self, q: Vec) -> None:
        """Seed the IK configuration (all 25 joints); legs are then refined by :meth:`solve_legs`."""
        self.ik.qpos[self.joint_qpos] = q

    def solve_legs(
        self,
        targets: dict[str, tuple[Vec, Vec]],
        weights: dict[str, Vec] | None = None,
        iterations: int = 3,
        damping: float = 1e-4,
        points: dict[str, Vec] | None = None,
    ) -> dict[str, Vec]:
        """Leg angles putting each sole at ``targets[side] = (pos, rot)`` in the pelvis frame.

        Damped, weighted Newton steps on the 6-D pose error (position, then rotation vector, pelvis frame),
        warm-started from the previous solution and clamped to the joint ranges. ``weights[side]`` (6,) says which
        task directions may give way when a joint sits on its stop: the swing foot, for instance, may pitch when
        the ankle's small dorsiflexion range (0.35 rad) runs out while the knee folds to lift it. ``points[side]``
        (foot frame) replaces the sole centre as the controlled point; ``targets`` still name the sole-centre pose,
        and the point's target follows from the target rotation.
        """
        m, d = self.model, self.ik
        d.qpos[self.base_qpos : self.base_qpos + 3] = 0.0
        d.qpos[self.base_qpos + 3 : self.base_qpos + 7] = (1.0, 0.0, 0.0, 0.0)
        eye = self._damped_eye.get(damping)
        if eye is None:
            eye = self._damped_eye.setdefault(damping, damping * np.eye(6))
        # what does not change between iterations: each leg's controlled point, its goal, its task weights, its stops
        plan = []
        for side, (p_des, R_des) in targets.items():
            leg = self.legs[side]
            point = leg.sole_offset if points is None or side not in points else points[side]
            w = self._ones6 if weights is None or side not in weights else weights[side]
            plan.append((leg, R_des, point, p_des + R_des @ (point - leg.sole_offset), w, *self._leg_stops[side]))
        err = np.empty(6)
        jac, jacp, jacr = self._jac6, self._jacp, self._jacr
        for _ in range(iterations):
            mujoco.mj_kinematics(m, d)
            for leg, R_des, point, p_goal, w, lo, hi, lo_in, hi_in in plan:
                R = d.xmat[leg.foot_body].reshape(3, 3)
                p = d.xpos[leg.foot_body] + R @ point
                err[:3] = p_goal - p
                err[3:] = rot_log(R_des @ R.T)
                mujoco.mj_jac(m, d, jacp, jacr, p, leg.foot_body)
                jac[:3] = jacp[:, leg.dof]
                jac[3:] = jacr[:, leg.dof]
                q0 = d.qpos[leg.qpos]
                jw = jac.T * w
                dq = solve_small(jw @ jac + eye, jw @ err)
                # active set: a joint on its stop that the step pushes further out is frozen and the step redone
                low = (q0 <= lo_in) & (dq < 0.0)
                stuck = low | ((q0 >= hi_in) & (dq > 0.0))
                if np.count_nonzero(stuck):
                    jac[:, stuck] = 0.0
                    jw = jac.T * w
                    dq = solve_small(jw @ jac + eye, jw @ err)
                d.qpos[leg.qpos] = np.minimum(np.maximum(q0 + dq, lo), hi)  # np.clip's result, without its dispatch
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        return {side: d.qpos[self.legs[side].qpos].copy() for side in targets}

    def ik_com(self) -> Vec:
        """COM of the IK configuration relative to the pelvis origin (after :meth:`solve_legs`)."""
        return self.ik.subtree_com[self.root_body].copy()
