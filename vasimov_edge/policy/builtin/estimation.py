"""State estimation for the built-in walker: pelvis, COM and capture point from IMU + encoders + footprints.

Why a module of its own: the real robot's policy gets no base position or velocity, only the IMU and the joint
encoders, so the controller estimates them itself and everything downstream must use only that estimate. Keeping it
here makes that boundary visible. Odometry: a planted sole is assumed fixed on flat ground (the gait says which sole
anchors the estimate); the COM rate comes from the joint rates relative to that sole, filtered against the planned
acceleration because the anchor sole may rock onto a heel or toe for a tick or two.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
from numpy.typing import NDArray

from vasimov_edge.policy.builtin.config import ControllerConfig
from vasimov_edge.policy.builtin.footsteps import FootPose
from vasimov_edge.policy.builtin.kinematics import SIDES, RobotKinematics, roll_pitch_yaw
from vasimov_edge.policy.interface import PolicyInput

Vec = NDArray[np.float64]


@dataclass
class Reading:
    """One tick's sensor readings, loaded into the controller's model (pelvis-origin, world-aligned frame)."""

    R: Vec  # pelvis attitude (IMU)
    q: Vec
    qd: Vec
    gyro: Vec
    sole: dict[str, tuple[Vec, Vec]]  # sole poses relative to the pelvis origin (world-aligned)
    com_rel: Vec  # COM relative to the pelvis origin


@dataclass
class Estimate:
    """One tick's state estimate, odometry frame unless noted."""

    R: Vec  # pelvis attitude (IMU)
    rpy: tuple[float, float, float]
    sole: dict[str, tuple[Vec, Vec]]  # sole poses relative to the pelvis origin (world-aligned)
    base: Vec  # pelvis origin
    com: Vec
    comv: Vec
    dcm: Vec  # (2,)
    gyro: Vec


class StateEstimator:
    """Leg odometry and a COM-velocity filter; ``omega`` is the pendulum's natural frequency (1/s)."""

    def __init__(self, cfg: ControllerConfig, kin: RobotKinematics, omega: float) -> None:
        self.cfg = cfg
        self.kin = kin
        self.omega = omega
        self.reset()

    def reset(self) -> None:
        self._v_est: Vec | None = None

    def read(self, inp: PolicyInput) -> Reading:
        """Load the IMU attitude and encoder angles into the model; the sole poses and COM relative to the pelvis."""
        kin = self.kin
        quat = np.asarray(inp.quat, dtype=np.float64)
        q = np.asarray(inp.q, dtype=np.float64)
        qd = np.asarray(inp.qd, dtype=np.float64)
        gyro = np.asarray(inp.gyro, dtype=np.float64)
        R = np.zeros(9)
        mujoco.mju_quat2Mat(R, quat / np.linalg.norm(quat))
        R = R.reshape(3, 3)
        kin.set_measured(quat, q)
        sole = {s: kin.sole_pose(s) for s in SIDES}
        return Reading(R=R, q=q, qd=qd, gyro=gyro, sole=sole, com_rel=kin.com())

    def estimate(self, r: Reading, feet: dict[str, FootPose], anchors: dict[str, float], planned_acc: Vec) -> Estimate:
        """Pelvis and COM in the odometry frame from the ``anchors`` soles (weights) resting on their ``feet``
        footprints; ``planned_acc`` (2,) is the COM plan's acceleration, the velocity filter's prediction."""
        kin = self.kin
        base = np.zeros(3)
        comv = np.zeros(3)
        for s, w in anchors.items():
            base += w * (feet[s].pos - r.sole[s][0])
            comv += w * kin.com_velocity_rel_sole(s, r.gyro, r.qd)
        com = base + r.com_rel
        comv = self._filter_velocity(comv, planned_acc)
        return Estimate(R=r.R, rpy=roll_pitch_yaw(r.R), sole=r.sole, base=base, com=com, comv=comv,
                        dcm=com[:2] + comv[:2] / self.omega, gyro=r.gyro)

    def _filter_velocity(self, v_meas: Vec, planned_acc: Vec) -> Vec:
        """COM velocity: the planned acceleration's prediction corrected by the kinematic measurement.

        The kinematic rate assumes the anchor sole is still; when it rocks onto a heel or toe the measurement jumps
        for a tick or two, so each tick's correction is limited.
        """
        cfg = self.cfg
        v = v_meas.copy()
        if self._v_est is not None:
            pred = self._v_est.copy()
            pred[:2] += cfg.control_dt * planned_acc
            innov = np.clip(v_meas - pred, -cfg.velocity_innovation_limit, cfg.velocity_innovation_limit)
            v = pred + cfg.velocity_filter_gain * innov
        self._v_est = v.copy()
        return v
