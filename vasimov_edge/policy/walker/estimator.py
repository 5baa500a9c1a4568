"""State estimation from what the robot's policy reads: IMU orientation and joint encoders, nothing else.

The measured joint angles and the IMU's orientation pose a rigid-body copy of the robot (Pinocchio through placo)
around its pelvis; the COM and the soles then follow by forward kinematics. Leg odometry: the *anchor* sole (the
stance foot; in double support the most recently landed one) is taken to rest where the gait put it, so the COM in
the odometry frame is that sole's pose plus the measured sole-to-COM vector. Everything the balance laws use is
relative to the soles, so a landing a few centimetres off the plan shifts the odometry, not the balance.
The COM velocity relative to the anchor sole comes from the joint rates and the gyro through the Jacobians
(``J_com - J_sole``, base angular velocity = gyro), low-pass filtered. A finite difference of the odometry position
was tried first: a sole rolling onto its toe or the anchor switching at touchdown showed up as velocity spikes of
1-3 m/s that threw the next foothold far out (measured while walking at 0.4 m/s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import placo
from numpy.typing import NDArray

from vasimov import joints
from vasimov.frames import forward_pitch

Vec = NDArray[np.float64]
SIDES = ("left", "right")


def quat_to_matrix(q: Vec) -> NDArray[np.float64]:
    """Rotation matrix of a unit quaternion (w, x, y, z); a zero or non-finite quaternion gives the identity."""
    q = np.asarray(q, dtype=np.float64)
    n = float(np.linalg.norm(q))
    if not math.isfinite(n) or n < 1e-9:
        return np.eye(3)
    w, x, y, z = q / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def yaw_of(r: NDArray[np.float64]) -> float:
    """Heading of a rotation matrix (yaw of its x axis)."""
    return math.atan2(r[1, 0], r[0, 0])


@dataclass
class Estimate:
    com: Vec  # (3,) odometry frame
    com_vel: Vec  # (2,)
    feet: dict[str, Vec]  # side -> (3,) sole position, odometry frame (anchor sole = its planned pose)
    feet_yaw: dict[str, float]
    feet_pitch: dict[str, float]  # rad, each sole's forward axis above the horizontal (toe up > 0)
    base_yaw: float  # IMU heading
    tilt: float  # rad from upright


class Estimator:
    """COM, COM velocity and soles in the odometry frame from IMU + encoders (see the module docstring)."""

    def __init__(self, robot: placo.HumanoidRobot, dt: float, vel_filter: float) -> None:
        self.robot = robot
        self.dt = dt
        self.vel_filter = vel_filter
        self.names = joints.SIM_NAMES
        self.v_index = np.array([robot.get_joint_v_offset(n) for n in self.names], dtype=np.intp)
        self._qd = np.zeros(robot.model.nv)
        self.reset()

    def reset(self) -> None:
        self.com_vel = np.zeros(2)
        self._started = False

    def update(self, quat: Vec, q: Vec, anchor: str, anchor_pos: Vec, anchor_yaw: float, gyro: Vec | None = None,
               qd: Vec | None = None) -> Estimate:
        """One tick: pose the model, place it so the ``anchor`` sole sits at ``anchor_pos`` (x, y and its ground
        height) with the measured relative yaw kept, and return the estimate."""
        robot = self.robot
        for name, value in zip(self.names, q, strict=True):
            robot.set_joint(name, float(value))
        r = quat_to_matrix(quat)
        t = np.eye(4)
        t[:3, :3] = r
        robot.set_T_world_fbase(t)
        robot.update_kinematics()
        frames = {s: robot.get_T_world_frame(f"{s}_foot") for s in SIDES}
        com = np.asarray(robot.com_world(), dtype=np.float64)
        # odometry: the anchor sole's measured pose is rotated about the vertical so its yaw matches the plan's,
        # then shifted onto the planned position (the IMU heading still gives the absolute yaw separately)
        a = frames[anchor]
        dyaw = anchor_yaw - yaw_of(a[:3, :3])
        c, s = math.cos(dyaw), math.sin(dyaw)
        rz = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        origin = a[:3, 3]
        shift = np.array([anchor_pos[0], anchor_pos[1], anchor_pos[2]])

        def to_odom(p: Vec) -> Vec:
            return shift + rz @ (p - origin)

        com_o = to_odom(com)
        feet = {sd: to_odom(frames[sd][:3, 3]) for sd in SIDES}
        feet_yaw = {sd: yaw_of(rz @ frames[sd][:3, :3]) for sd in SIDES}
        feet_pitch = {sd: forward_pitch(frames[sd][:3, :3]) for sd in SIDES}
        if gyro is not None and qd is not None:
            v = self._qd
            v[:] = 0.0
            v[3:6] = gyro  # the free flyer's angular velocity is in the base frame, as the gyro measures it
            v[self.v_index] = qd
            jac = np.asarray(robot.com_jacobian()) - np.asarray(
                robot.frame_jacobian(f"{anchor}_foot", "local_world_aligned"))[:3]
            raw = (rz @ (jac @ v))[:2]
            if not np.all(np.isfinite(raw)):
                raw = self.com_vel
            if self._started:
                self.com_vel = self.com_vel + self.vel_filter * (raw - self.com_vel)
            else:
                self.com_vel = raw
                self._started = True
        tilt = math.acos(max(-1.0, min(1.0, float(r[2, 2]))))
        return Estimate(com_o, self.com_vel.copy(), feet, feet_yaw, feet_pitch, yaw_of(r), tilt)

    def rebase(self) -> None:
        """The anchor sole changed; the velocity (relative to a sole at rest) carries over."""
