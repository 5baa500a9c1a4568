"""The one geometry module: quaternion and frame helpers for the plant, the firmware twin, the observation builder,
the SDK bridge's ground truth and the Foxglove TF tree.

Quaternions are MuJoCo order ``[w, x, y, z]`` and describe body-to-world rotations. Every function accepts one
quaternion ``(4,)`` or a batch ``(..., 4)``, so the same code serves a control step and a log analysis. Inputs
are normalised here because quaternions arriving over the wire (or integrated in float32) drift off unit length,
and a 1 % norm error would otherwise show up as a 2 % gravity error in the policy observation.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

GRAVITY_DIR_WORLD = np.array([0.0, 0.0, -1.0])
GRAVITY_DIR_WORLD.setflags(write=False)


def _unit(quat_wxyz: ArrayLike) -> NDArray[np.float64]:
    q = np.asarray(quat_wxyz, dtype=np.float64)
    if q.shape[-1] != 4:
        raise ValueError(f"quaternion must have 4 components [w, x, y, z], got shape {q.shape}")
    n = np.linalg.norm(q, axis=-1, keepdims=True)
    if np.any(n == 0.0) or not np.all(np.isfinite(n)):
        raise ValueError("quaternion must be finite and non-zero")
    return q / n


def _unit_one(q: NDArray[np.float64]) -> tuple[float, float, float, float]:
    """One quaternion ``(4,)`` normalised in scalar arithmetic, bit for bit what :func:`_unit` gives: the norm sums
    the squares in numpy's order for a 4-element reduction (left to right), and ``+ * / sqrt`` are correctly rounded
    in both (``test_frames`` checks it on random quaternions). Why: the plant, the firmware, the policy runner and
    the SDK bridge each take one quaternion per tick, where numpy's per-call overhead was most of the cost (10.8 ->
    1.5 us warm, 2026-12-07)."""
    w, x, y, z = q.tolist()
    n = math.sqrt(w * w + x * x + y * y + z * z)
    if n == 0.0 or not math.isfinite(n):
        raise ValueError("quaternion must be finite and non-zero")
    return w / n, x / n, y / n, z / n


def projected_gravity(quat_wxyz: ArrayLike) -> NDArray[np.float64]:
    """World ``[0, 0, -1]`` expressed in the body frame: ``[0, 0, -1]`` upright, z -> 0 when lying down.

    This is the training observation's ``projected_gravity`` and the firmware's fall/arming test quantity
    (gravity z above -0.5 trips, below -0.87 arms). Closed form of ``R(q)^T @ [0, 0, -1]``, i.e. minus the third
    row of the rotation matrix.
    """
    one = np.asarray(quat_wxyz, dtype=np.float64)
    if one.shape == (4,):  # one quaternion (every per-tick caller): scalar arithmetic, the same bits
        w, x, y, z = _unit_one(one)
        return np.array((-2.0 * (x * z - w * y), -2.0 * (y * z + w * x), -(1.0 - 2.0 * (x * x + y * y))))
    q = _unit(one)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.stack(
        (
            -2.0 * (x * z - w * y),
            -2.0 * (y * z + w * x),
            -(1.0 - 2.0 * (x * x + y * y)),
        ),
        axis=-1,
    )


def yaw_from_quat(quat_wxyz: ArrayLike) -> NDArray[np.float64] | float:
    """Heading (rad, in (-pi, pi]) of the body x axis projected on the ground plane (ZYX yaw)."""
    q = _unit(quat_wxyz)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    yaw = np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    return float(yaw) if yaw.ndim == 0 else yaw


def forward_pitch(rot: ArrayLike) -> float:
    """Elevation (rad, up > 0) of a frame's x axis above the ground plane, from its rotation matrix (3x3,
    frame-to-world). For a sole, the pitch it rests at: toe up > 0, whatever its heading."""
    r = np.asarray(rot, dtype=np.float64)
    return float(np.arctan2(r[2, 0], np.hypot(r[0, 0], r[1, 0])))


def _rotate_one(q: NDArray[np.float64], v: NDArray[np.float64]) -> NDArray[np.float64]:
    """Single quaternion and vector in plain floats: np.cross costs ~20 us a call, and the plant rotates twice per
    physics step."""
    w, x, y, z = (float(c) for c in q)
    vx, vy, vz = (float(c) for c in v)
    tx = 2.0 * (y * vz - z * vy)
    ty = 2.0 * (z * vx - x * vz)
    tz = 2.0 * (x * vy - y * vx)
    return np.array((vx + w * tx + (y * tz - z * ty), vy + w * ty + (z * tx - x * tz), vz + w * tz + (x * ty - y * tx)))


def rotate(quat_wxyz: ArrayLike, vec: ArrayLike) -> NDArray[np.float64]:
    """``R(q) @ v``: a body-frame vector expressed in the world frame."""
    q = _unit(quat_wxyz)
    v = np.asarray(vec, dtype=np.float64)
    if q.shape == (4,) and v.shape == (3,):
        return _rotate_one(q, v)
    u = q[..., 1:]
    w = q[..., :1]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def rotate_inverse(quat_wxyz: ArrayLike, vec: ArrayLike) -> NDArray[np.float64]:
    """``R(q)^T @ v``: a world-frame vector expressed in the body frame."""
    q = _unit(quat_wxyz)
    conj = q * np.array([1.0, -1.0, -1.0, -1.0])
    return rotate(conj, vec)


def quat_multiply(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """Hamilton product ``a * b`` of ``[w, x, y, z]`` quaternions (one or a batch each, broadcast): the rotation
    ``b`` followed by ``a``, e.g. a parent's orientation times a child's relative one. Not normalised: the product
    of unit quaternions is one, and callers that compose many keep their own inputs unit length."""
    p = np.asarray(a, dtype=np.float64)
    q = np.asarray(b, dtype=np.float64)
    aw, ax, ay, az = p[..., 0], p[..., 1], p[..., 2], p[..., 3]
    bw, bx, by, bz = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.stack((aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw), axis=-1)
