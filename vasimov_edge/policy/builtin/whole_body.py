"""Whole-body IK of the built-in walker: joint targets that put the COM where the plan wants it, the feet where the
gait wants them, and hold the upper body.

Why a module of its own: this is the only part that turns task-space wishes (a COM point, two sole poses, an upright
pelvis) into 25 joint angles, through the controller's own model (``kinematics.RobotKinematics``), and it owns the
state that belongs to that conversion: the pelvis height slew, the upper body's blend from the takeover pose, the leg
reach limit and the swing leg's solution one tick ahead (for the rate feed-forward).

The pelvis is put where the COM command needs it, at the nominal height (raised in mid single support), upright with
the heading between the feet -- rotated against the measured tilt about the loaded hip (the hip strategy). The swing
IK steers the point below the ankle, so the foot pitches toe-down only as far as the ankle's dorsiflexion stop forces
it, with a small but real pitch weight (a near-zero weight let the IK jump between solutions at 30 rad/s).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import mujoco
import numpy as np
from numpy.typing import NDArray

from vasimov import joints
from vasimov.frames import forward_pitch
from vasimov_edge.policy.builtin.config import ControllerConfig
from vasimov_edge.policy.builtin.estimation import Estimate
from vasimov_edge.policy.builtin.footsteps import SIGN, wrap
from vasimov_edge.policy.builtin.gait import Gait, Mode, min_jerk
from vasimov_edge.policy.builtin.kinematics import SIDES, RobotKinematics, yaw_rotation

Vec = NDArray[np.float64]

WAIST = "waist_yaw_joint"


def rot_exp(v: Vec) -> Vec:
    """Rotation matrix of the rotation vector ``v`` (Rodrigues)."""
    a = float(np.linalg.norm(v))
    if a < 1e-12:
        return np.eye(3)
    k = v / a
    kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + math.sin(a) * kx + (1.0 - math.cos(a)) * (kx @ kx)


class WholeBody:
    """Leg IK for the pelvis and feet, the upper-body posture, and the state they carry from tick to tick."""

    def __init__(self, cfg: ControllerConfig, kin: RobotKinematics) -> None:
        self.cfg = cfg
        self.kin = kin
        self.leg = {s: list(kin.legs[s].joint) for s in SIDES}  # joint-table indices of each leg
        self.leg_mask = np.zeros(joints.NUM_JOINTS, dtype=bool)
        for s in SIDES:
            self.leg_mask[self.leg[s]] = True
        self.shoulder = {s: joints.joint_index(f"{s}_shoulder_pitch_joint") for s in SIDES}
        self.waist = joints.joint_index(WAIST)
        self.hip, self.max_reach = self._leg_reach()
        w = np.ones(6)
        w[4] = cfg.swing_pitch_weight  # rotation about the pelvis y axis: the swing foot may pitch
        self.swing_weights = w
        self.swing_point = {s: np.array([cfg.swing_point_x, 0.0, kin.legs[s].sole_offset[2]]) for s in SIDES}
        self.reset()

    def _leg_reach(self) -> tuple[dict[str, Vec], float]:
        """Hip-pitch axis positions (pelvis frame) and the longest hip-to-sole distance with the knee still bent."""
        kin = self.kin
        q = joints.DEFAULT_POS.copy()
        for side in SIDES:
            leg = kin.legs[side]
            q[leg.joint[3]] = math.copysign(self.cfg.min_knee_bend, joints.DEFAULT_POS[leg.joint[3]])
            q[leg.joint[4]] = 0.0
            q[leg.joint[0]] = 0.0
        kin.set_measured(np.array([1.0, 0.0, 0.0, 0.0]), q)
        hips: dict[str, Vec] = {}
        reach = math.inf
        for side in SIDES:
            leg = kin.legs[side]
            hip_body = kin.model.jnt_bodyid[kin.model.joint(joints.SIM_NAMES[leg.joint[0]]).id]
            hips[side] = kin.meas.xpos[hip_body].copy()
            p, _ = kin.sole_pose(side)
            reach = min(reach, float(np.linalg.norm(p - hips[side])))
        kin.set_measured(np.array([1.0, 0.0, 0.0, 0.0]), joints.DEFAULT_POS)
        return hips, reach

    def reset(self) -> None:
        self.height = self.cfg.stand_pelvis_height
        self.ground_pitch = {s: 0.0 for s in SIDES}  # rad, toe up > 0: each sole's followed ground pitch
        self.ground = 0.0  # m; the soles' mean height the pelvis is kept above (ground_height_follow)
        self.takeover_q = joints.DEFAULT_POS.copy()
        self.takeover_tick = 10**6
        # (swing side, its leg angles this tick, one tick ahead) when a leg swings, for the rate feed-forward
        self.swing_q: tuple[str, Vec, Vec] | None = None
        self.kin.ik_set_posture(joints.DEFAULT_POS)

    def take_over(self, sole: dict[str, tuple[Vec, Vec]], q: Vec) -> None:
        """The backend takes over from the measured pose ``q``: the pelvis height is the measured one, and the upper
        body blends from ``q`` to the stand pose over ``takeover_time``."""
        self.height = -min(sole[s][0][2] for s in SIDES)
        # legs seeded from the measured pose (the IK warm start); arms, waist and neck are set every tick to what
        # they are commanded to (solve), so the IK model's COM is the body's, not the takeover pose's
        self.kin.ik_set_posture(q)
        self.takeover_q = q.copy()
        self.takeover_tick = 0

    def solve(self, est: Estimate, com_xy: Vec, gait: Gait) -> Vec:
        """Joint targets (25): legs for the pelvis pose and the gait's feet; arms and waist hold the stand pose."""
        cfg = self.cfg
        kin = self.kin
        q_des = self._upper_body_posture()
        kin.ik_set_posture(np.where(self.leg_mask, kin.ik.qpos[kin.joint_qpos], q_des))
        goal = cfg.pelvis_height if gait.mode is Mode.WALK else cfg.stand_pelvis_height
        step = cfg.height_rate * cfg.control_dt
        self.height = float(np.clip(goal, self.height - step, self.height + step))
        height = self.height
        if cfg.ground_height_follow and gait.feet:
            # above the soles' mean height (their footprints), followed as fast as the ground can rise under the
            # fastest forward walk on the steepest followed slope
            ground = 0.5 * sum(float(gait.feet[s].pos[2]) for s in SIDES)
            step = cfg.command_limit[0] * math.tan(cfg.max_ground_pitch) * cfg.control_dt
            self.ground = float(np.clip(ground, self.ground - step, self.ground + step))
            height += self.ground
        single = gait.in_single_support()
        hike = 0.0
        if single:
            u = gait.single_support_phase()
            bump = math.sin(math.pi * u) ** 2
            height += cfg.single_support_rise * bump
            hike = -SIGN[gait.stance] * cfg.hip_hike * bump
        if not single and cfg.ground_pitch_follow > 0.0:  # the soles resting flat: standing both, walking the new one
            self._follow_ground(est, SIDES if gait.mode is Mode.STAND else (gait.stance,))
        feet_now = {s: gait.foot_now(s) for s in SIDES}
        yl, yr = feet_now["left"].yaw, feet_now["right"].yaw
        R_des = yaw_rotation(yr + 0.5 * wrap(yl - yr)) @ rot_exp(np.array([hike, cfg.torso_pitch, 0.0]))
        roll, pitch, _ = est.rpy
        err = np.array([roll - hike + cfg.attitude_rate_gain * est.gyro[0],
                        pitch - cfg.torso_pitch + cfg.attitude_rate_gain * est.gyro[1], 0.0])
        R_cmd = R_des @ rot_exp(-np.array([cfg.attitude_gain, cfg.pitch_gain, 0.0]) * err)
        pel = np.append(com_xy - (R_des @ kin.ik_com())[:2], height)
        loaded = [gait.stance] if single else list(SIDES)
        pivot = sum(self.hip[s] for s in loaded) / len(loaded)
        pel = pel + R_des @ pivot - R_cmd @ pivot

        targets: dict[str, tuple[Vec, Vec]] = {}
        weights: dict[str, Vec] = {}
        points: dict[str, Vec] = {}
        for s in SIDES:
            foot = feet_now[s]
            rot = foot.rot()
            if cfg.ground_pitch_follow > 0.0:  # the swing sole lands at its stance sole's pitch
                pitch = self.ground_pitch[gait.stance if single and gait.in_swing(s) else s]
                rot = rot @ rot_exp(np.array([0.0, -pitch, 0.0]))
            targets[s] = (self._clamp_reach(s, R_cmd.T @ (foot.pos - pel)), R_cmd.T @ rot)
            if gait.in_swing(s):
                weights[s] = self.swing_weights
                points[s] = self.swing_point[s]
        sol = kin.solve_legs(targets, weights, iterations=cfg.ik_iterations, points=points)
        self.swing_q = None
        for s in points:
            self.swing_q = (s, sol[s].copy(), self._swing_ahead(s, R_cmd, pel, weights, points, gait))
        for s in SIDES:
            q_des[self.leg[s]] = sol[s]
        if gait.mode is Mode.WALK and (cfg.arm_swing or cfg.waist_swing):
            # counter-swing: the arms and the torso carry yaw angular momentum against the legs', so the stance sole
            # has less to resist. d > 0 when the left foot is ahead: left arm back, right arm forward (both shoulder
            # pitch angles grow with d in this joint convention), torso turned toward the trailing side.
            d = float((R_des.T @ (feet_now["left"].pos - feet_now["right"].pos))[0])
            for s in SIDES:
                q_des[self.shoulder[s]] += cfg.arm_swing * d
            q_des[self.waist] += cfg.waist_swing * d
        return q_des

    def _follow_ground(self, est: Estimate, sides: Sequence[str]) -> None:
        """Move the pitch target of each sole in ``sides`` toward the pitch it is measured at (``ground_pitch_follow``
        per tick). Called for the soles that rest flat on the ground: both standing; walking, in double support, only
        the one that has just landed (the trailing sole is lifting its heel then: measured, its toe-down roll read as
        a downhill ramp on the way up).

        Why: the plan is flat, so on a ramp a stiff ankle holding the sole flat fights the ramp and tips the body
        downhill; the measured sole pitch (IMU attitude times leg kinematics, ``Estimate.sole``) is the ground's
        under it. Toe up is positive, about the sole's own heading."""
        gain = self.cfg.ground_pitch_follow
        lim = self.cfg.max_ground_pitch
        for s in sides:
            measured = forward_pitch(est.sole[s][1])  # the sole's rotation is world-aligned
            g = self.ground_pitch[s]
            self.ground_pitch[s] = float(np.clip(g + gain * (measured - g), -lim, lim))

    def _upper_body_posture(self) -> Vec:
        """Arms, waist and neck: the stand pose, reached from the pose held at takeover over ``takeover_time``.

        MOVE may begin anywhere in the firmware's STAND ramp (the SDK arms 0.5 s into a 2 s ramp); jumping the arms
        to the stand pose in one tick would throw the body while the legs are still settling.
        """
        q = joints.DEFAULT_POS.copy()
        n = max(1, round(self.cfg.takeover_time / self.cfg.control_dt))
        if self.takeover_tick < n:
            self.takeover_tick += 1
            a = min_jerk(self.takeover_tick / n)
            q += (1.0 - a) * (self.takeover_q - q)
        return q

    def _swing_ahead(self, side: str, R_cmd: Vec, pel: Vec, weights: dict[str, Vec], points: dict[str, Vec],
                     gait: Gait) -> Vec:
        """Swing-leg angles one tick further along the swing (for the rate feed-forward); the IK state is restored."""
        kin = self.kin
        foot = gait.swing_pose(ahead=1.0)
        leg = kin.legs[side]
        saved = kin.ik.qpos[leg.qpos].copy()
        target = (self._clamp_reach(side, R_cmd.T @ (foot.pos - pel)), R_cmd.T @ foot.rot())
        nxt = kin.solve_legs({side: target}, weights, iterations=2, points=points)[side]
        kin.ik.qpos[leg.qpos] = saved
        mujoco.mj_kinematics(kin.model, kin.ik)
        mujoco.mj_comPos(kin.model, kin.ik)
        return nxt

    def _clamp_reach(self, side: str, p: Vec) -> Vec:
        """Pull a sole target back inside the leg's reach, so the IK never straightens the knee into a stomp."""
        v = p - self.hip[side]
        n = float(np.linalg.norm(v))
        return self.hip[side] + v * (self.max_reach / n) if n > self.max_reach else p
