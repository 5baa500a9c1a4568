"""The head camera's parameters and the pure camera maths: intrinsics from the field of view, depth linearisation,
the REP 103 optical frame.

One place for every number of the camera (issue 22): the model (``vasimov.model.mjcf``) mounts it from
:data:`HEAD_CAMERA`, the renderer (``vasimov.model.render``) sizes its buffers and clip planes from it, the camera
node (``vasimov_bridge.camera_node``) fills ``CameraInfo`` from :func:`intrinsics` and the Foxglove bridge puts the
optical frame on ``/tf`` from :func:`optical_frame_in_body`.

The fact sheet has no camera (no model, mount or field of view), so the numbers are ASSUMED (FIDELITY.md,
"Head camera"): a 58 deg vertical field of view (Intel RealSense D435's depth imager, 87 x 58 deg, the most common
robot-head RGB-D camera), 320 x 240 at 15 Hz, clip planes 0.05 m / 20 m, mounted behind the visor of the head
(``neck_pitch_link``) looking along the head's +x, so it pans and tilts with the neck joints.

Pure: numbers in, numbers out; no MuJoCo, no ROS.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

HEAD_CAMERA_NAME = "head_camera"  # the MJCF camera
HEAD_CAMERA_BODY = "neck_pitch_link"  # the link it is fixed to
HEAD_OPTICAL_FRAME = "head_camera_optical_frame"  # REP 103 optical frame: z forward, x right, y down
# MuJoCo's camera frame in the body: looking along -z with +y up; here camera x = body -y (right), camera y = body +z
# (up), so -z = body +x (forward, the visor's facing).
_MJ_CAM_XYAXES = (0.0, -1.0, 0.0, 0.0, 0.0, 1.0)


@dataclass(frozen=True)
class CameraSpec:
    """A pinhole camera: image size (px), vertical field of view (deg), frame rate (Hz), clip planes (m) and its
    mount (position in the body frame, m). Square pixels, principal point at the image centre, no distortion."""

    width: int = 320
    height: int = 240
    vfov_deg: float = 58.0
    rate_hz: float = 15.0
    near: float = 0.05
    far: float = 20.0
    body: str = HEAD_CAMERA_BODY
    pos: tuple[float, float, float] = (0.086, 0.0, 0.065)  # just in front of the visor (mjcf._add_visuals)

    def __post_init__(self) -> None:
        problems = []
        if not (isinstance(self.width, int) and 16 <= self.width <= 4096):
            problems.append(f"width must be an integer in [16, 4096], got {self.width!r}")
        if not (isinstance(self.height, int) and 16 <= self.height <= 4096):
            problems.append(f"height must be an integer in [16, 4096], got {self.height!r}")
        if not (math.isfinite(self.vfov_deg) and 1.0 <= self.vfov_deg <= 170.0):
            problems.append(f"vfov_deg must be in [1, 170], got {self.vfov_deg!r}")
        if not (math.isfinite(self.rate_hz) and 0.1 <= self.rate_hz <= 120.0):
            problems.append(f"rate_hz must be in [0.1, 120], got {self.rate_hz!r}")
        if not (math.isfinite(self.near) and math.isfinite(self.far) and 0.0 < self.near < self.far):
            problems.append(f"clip planes must satisfy 0 < near < far, got near={self.near!r} far={self.far!r}")
        if problems:
            raise ValueError("camera: " + "; ".join(problems))

    def with_(self, **changes: object) -> CameraSpec:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)  # type: ignore[arg-type]


HEAD_CAMERA = CameraSpec()


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole intrinsics in pixels, ROS ``CameraInfo``/OpenCV convention: pixel centres at integer coordinates, so
    the centre of a w x h image is ((w - 1) / 2, (h - 1) / 2)."""

    fx: float
    fy: float
    cx: float
    cy: float
    width: int
    height: int

    @property
    def k(self) -> list[float]:
        """The 3x3 camera matrix K, row-major (CameraInfo.k)."""
        return [self.fx, 0.0, self.cx, 0.0, self.fy, self.cy, 0.0, 0.0, 1.0]

    @property
    def p(self) -> list[float]:
        """The 3x4 projection matrix P, row-major (CameraInfo.p): a monocular camera, Tx = Ty = 0."""
        return [self.fx, 0.0, self.cx, 0.0, 0.0, self.fy, self.cy, 0.0, 0.0, 0.0, 1.0, 0.0]

    def project(self, point_optical: np.ndarray) -> tuple[float, float]:
        """Pixel (u, v) of a point given in the optical frame (z > 0 in front)."""
        x, y, z = (float(v) for v in point_optical)
        return self.fx * x / z + self.cx, self.fy * y / z + self.cy


def intrinsics(spec: CameraSpec) -> Intrinsics:
    """fx = fy from the vertical field of view (MuJoCo's ``fovy`` is vertical; its pixels are square), the
    principal point at the image centre (OpenGL's symmetric frustum: the optical axis meets the image between the
    middle pixels)."""
    f = (spec.height / 2.0) / math.tan(math.radians(spec.vfov_deg) / 2.0)
    return Intrinsics(fx=f, fy=f, cx=(spec.width - 1) / 2.0, cy=(spec.height - 1) / 2.0, width=spec.width,
                      height=spec.height)


def linearise_depth(zbuffer: np.ndarray, near: float, far: float) -> np.ndarray:
    """Metres along the optical axis from a perspective z-buffer read with MuJoCo's default depth map
    (``mjDEPTH_ZERONEAR``: 0 at the near plane, 1 at the far plane): ``z = n f / (f - d (f - n))``.

    Where nothing was hit (the buffer at the far plane: sky, or anything beyond ``far``) the result is NaN, the
    REP 118 convention for "no return" in ``32FC1`` depth images (0 would read as "too close")."""
    d = np.asarray(zbuffer, dtype=np.float32)
    n, f = np.float32(near), np.float32(far)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (n * f) / (f - d * (f - n))
    z[d >= np.float32(1.0) - np.float32(1e-7)] = np.nan
    return z


def optical_frame_in_body(spec: CameraSpec) -> tuple[tuple[float, float, float], tuple[float, float, float, float]]:
    """The REP 103 optical frame in the camera's body: translation (m) and rotation (x, y, z, w).

    Optical axes in body axes: z (forward) = body +x, x (right) = body -y, y (down) = body -z; the rotation matrix's
    columns are those three vectors."""
    r = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
    return tuple(float(v) for v in spec.pos), _quat_xyzw(r)  # type: ignore[return-value]


def mujoco_xyaxes() -> tuple[float, ...]:
    """The MJCF ``xyaxes`` of the camera: MuJoCo's camera frame (x right, y up, looking along -z) in the body."""
    return _MJ_CAM_XYAXES


def _quat_xyzw(r: np.ndarray) -> tuple[float, float, float, float]:
    """Unit quaternion (x, y, z, w) of a rotation matrix (Shepperd's method, largest-diagonal branch)."""
    t = float(np.trace(r))
    if t > 0.0:
        s = math.sqrt(t + 1.0) * 2.0
        w, x, y, z = 0.25 * s, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s
    else:
        i = int(np.argmax(np.diag(r)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = math.sqrt(1.0 + r[i, i] - r[j, j] - r[k, k]) * 2.0
        q = [0.0, 0.0, 0.0]
        q[i] = 0.25 * s
        q[j] = (r[j, i] + r[i, j]) / s
        q[k] = (r[k, i] + r[i, k]) / s
        w = (r[k, j] - r[j, k]) / s
        x, y, z = q
    return (x, y, z, w)
