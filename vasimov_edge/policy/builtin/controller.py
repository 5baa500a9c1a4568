"""The built-in model-based walker: balance and walking from IMU + encoders + command, no learned weights.

Method, one control tick (50 Hz):

1. **Estimate** (own kinematic model, never the simulator's state): pelvis attitude from the IMU quaternion,
   sole poses and COM from the encoders, the COM velocity relative to the stance sole from the joint rates and the
   gyro. A leg-odometry frame ("odom") is anchored to the stance sole; each new foothold is measured at touchdown.
2. **Plan**: a fixed-timing gait (double support, then single support) whose footholds come from a *path frame*
   that advances with the commanded twist and is leashed to the robot. The next foothold is moved by the
   predicted divergent-component-of-motion (DCM) error at touchdown: a push or a lag is absorbed where it can be,
   by where the foot lands.
3. **COM reference**: ZMP preview control over the next 1.6 s of footholds (cart-table model), so the COM path the
   joints are told to follow keeps the ZMP inside the stance foot.
4. **Whole-leg IK** puts the pelvis where the COM reference needs it and the soles on their footholds (stance) or
   on a swing curve. Balance feedback enters here: the stance legs rotate the pelvis against the measured tilt
   (hip strategy), and the COM command is moved against the DCM error (ankle strategy, stiff joints turn a
   commanded COM shift into a ZMP shift).
5. **Motor commands**: joint targets for the PD loop, leg/arm gains, gravity-compensation feed-forward from the
   model (weight split between the soles by gait phase) plus ``kd * qd_des`` so moving targets do not lag.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import mujoco
import numpy as np
from numpy.typing import NDArray

from vasimov import joints
from vasimov_edge.policy.builtin.config import ControllerConfig
from vasimov_edge.policy.builtin.kinematics import (
    SIDES,
    RobotKinematics,
    roll_pitch_yaw,
    rot_log,
    rotation_from_rpy,
    yaw_rotation,
)
from vasimov_edge.policy.builtin.preview import GRAVITY, PreviewController, preview_gains
from vasimov_edge.policy.interface import PolicyInput, PolicyOutput

Vec = NDArray[np.float64]

OTHER = {"left": "right", "right": "left"}
SIGN = {"left": 1.0, "right": -1.0}  # lateral side of each foot in the robot frame

_ARM_SHOULDER_PITCH = {"left": "left_shoulder_pitch_joint", "right": "right_shoulder_pitch_joint"}
_WAIST = "waist_yaw_joint"


class Mode(enum.Enum):
    STAND = "stand"
    WALK = "walk"


def _wrap(a: float) -> float:
    return (a + math.pi) % (2.0 * math.pi) - math.pi


def _rot_blend(Ra: Vec, Rb: Vec, w: float) -> Vec:
    """Rotation a fraction ``w`` of the way from ``Ra`` to ``Rb`` (geodesic)."""
    v = rot_log(Ra.T @ Rb) * w
    a = float(np.linalg.norm(v))
    if a < 1e-9:
        return Ra.copy()
    k = v / a
    kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return Ra @ (np.eye(3) + math.sin(a) * kx + (1.0 - math.cos(a)) * (kx @ kx))


def _rot_exp(v: Vec) -> Vec:
    """Rotation matrix of the rotation vector ``v`` (Rodrigues)."""
    a = float(np.linalg.norm(v))
    if a < 1e-12:
        return np.eye(3)
    k = v / a
    kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + math.sin(a) * kx + (1.0 - math.cos(a)) * (kx @ kx)


def _quat_to_mat(quat: Vec) -> Vec:
    m = np.zeros(9)
    q = np.asarray(quat, dtype=np.float64)
    mujoco.mju_quat2Mat(m, q / np.linalg.norm(q))
    return m.reshape(3, 3)


@dataclass
class FootPose:
    """A sole on the ground plane of the odometry frame."""

    pos: Vec  # (3,), z = 0 on the ground
    yaw: float

    def copy(self) -> FootPose:
        return FootPose(self.pos.copy(), self.yaw)

    def rot(self) -> Vec:
        return yaw_rotation(self.yaw)


@dataclass
class Telemetry:
    """What the controller believes, for the bench and for debugging (odometry frame)."""

    mode: str = Mode.STAND.value
    stance: str = "both"
    com: Vec | None = None
    com_ref: Vec | None = None
    dcm_error: Vec | None = None
    compute_s: float = 0.0


class BuiltinController:
    """Model-based balance and walking backend (implements ``PolicyBackend``)."""

    name = "builtin"

    def __init__(self, config: ControllerConfig | None = None, kinematics: RobotKinematics | None = None) -> None:
        self.cfg = config if config is not None else ControllerConfig()
        self.kin = kinematics if kinematics is not None else RobotKinematics()
        cfg = self.cfg
        self.omega = math.sqrt(GRAVITY / self._com_height_nominal())
        horizon = round(cfg.preview_time / cfg.control_dt)
        self.preview = PreviewController(
            preview_gains(cfg.control_dt, self._com_height_nominal(), horizon, r_jerk=cfg.preview_r)
        )
        self._policy_to_joint = joints.POLICY_TO_JOINT
        self._kp, self._kd = self._gain_tables()
        self._arm_pitch = {s: joints.joint_index(n) for s, n in _ARM_SHOULDER_PITCH.items()}
        self._leg_joint = {s: list(self.kin.legs[s].joint) for s in SIDES}
        self.telemetry = Telemetry()
        self._dbg_no_swing_g = False
        self._dbg_no_stance_g = False
        self._hip_pos, self._max_reach = self._leg_reach()
        # joint axis (in its parent frame) per joint index: the sign a pelvis rotation takes in each hip joint
        m = self.kin.model
        self._axis_sign = {j.index: np.round(m.jnt_axis[m.joint(j.sim_name).id]) for j in joints.JOINTS}
        self.reset()

    # ------------------------------------------------------------------ setup
    def _leg_reach(self) -> tuple[dict[str, Vec], float]:
        """Hip-pitch axis positions (pelvis frame) and the longest hip-to-sole distance with the knee still bent."""
        kin = self.kin
        q = joints.DEFAULT_POS.copy()
        hips: dict[str, Vec] = {}
        reach = math.inf
        for side in SIDES:
            leg = kin.legs[side]
            knee = leg.joint[3]
            q[knee] = math.copysign(self.cfg.min_knee_bend, joints.DEFAULT_POS[knee])
            ankle = leg.joint[4]
            q[ankle] = 0.0
            q[leg.joint[0]] = 0.0
        kin.set_measured(np.array([1.0, 0.0, 0.0, 0.0]), q)
        for side in SIDES:
            leg = kin.legs[side]
            hip_body = kin.model.jnt_bodyid[kin.model.joint(joints.SIM_NAMES[leg.joint[0]]).id]
            hips[side] = kin.meas.xpos[hip_body].copy()
            p, _ = kin.sole_pose(side)
            reach = min(reach, float(np.linalg.norm(p - hips[side])))
        kin.set_measured(np.array([1.0, 0.0, 0.0, 0.0]), joints.DEFAULT_POS)
        return hips, reach

    def _com_height_nominal(self) -> float:
        return self.cfg.pelvis_height + 0.017  # COM sits ~17 mm above the pelvis origin in the stand pose

    def _gain_tables(self) -> tuple[Vec, Vec]:
        cfg = self.cfg
        kp = np.empty(joints.NUM_JOINTS)
        kd = np.empty(joints.NUM_JOINTS)
        for j in joints.JOINTS:
            if j.group in ("left_leg", "right_leg"):
                kp[j.index], kd[j.index] = cfg.leg_kp, cfg.leg_kd
            elif j.sim_name == _WAIST:
                kp[j.index], kd[j.index] = cfg.waist_kp, cfg.waist_kd
            else:
                kp[j.index], kd[j.index] = cfg.arm_kp, cfg.arm_kd
        return kp, kd

    def reset(self) -> None:
        """Forget the gait; the next active tick re-anchors odometry on the measured stance."""
        self._initialized = False
        self.mode = Mode.STAND
        self.feet: dict[str, FootPose] = {}
        self.stance = "left"
        self.tick_in_step = 0
        self.ds_len = self.cfg.ds_ticks
        self.swing_from: FootPose | None = None
        self.swing_target: FootPose | None = None
        self.cmd = np.zeros(3)
        self.zero_cmd_steps = 0
        self.stopping = False
        self.path = np.zeros(3)  # x, y, yaw of the path frame in odom
        self.height = self.cfg.pelvis_height
        self.height_start = self.cfg.pelvis_height
        self.t_active = 0.0
        self.q_des_prev: Vec | None = None
        self.q_des = joints.DEFAULT_POS.copy()
        self.kin.ik_set_posture(joints.DEFAULT_POS)
        self.ticks = 0
        self._stance_landed = False
        self._feet_together_done = False
        self._swing_q: tuple[str, Vec | None, Vec, Vec] | None = None
        self._swing_hist: tuple[str, Vec] | None = None
        w = np.ones(6)
        w[4] = self.cfg.swing_pitch_weight  # rotation about the pelvis y axis: the swing foot may pitch
        self._swing_task_weights = w
        self._swing_point = {
            side: np.array([self.cfg.swing_point_x, 0.0, self.kin.legs[side].sole_offset[2]]) for side in SIDES
        }

    # ------------------------------------------------------------------ helpers
    def _zmp_point(self, side: str, foot: FootPose) -> Vec:
        cfg = self.cfg
        return foot.pos[:2] + foot.rot()[:2, :2] @ np.array([cfg.zmp_x_offset, -SIGN[side] * cfg.zmp_y_inset])

    def _stand_zmp(self) -> Vec:
        left, right = self.feet["left"], self.feet["right"]
        mid = 0.5 * (left.pos[:2] + right.pos[:2])
        yaw = _wrap(right.yaw + 0.5 * _wrap(left.yaw - right.yaw))
        return mid + yaw_rotation(yaw)[:2, :2] @ np.array([self.cfg.com_x_offset, 0.0])

    def _slew_command(self, raw: Vec) -> None:
        cfg = self.cfg
        dead = np.array(cfg.command_deadband)
        target = np.where(np.abs(raw) < dead, 0.0, raw)
        rate = np.array(cfg.command_rate) * cfg.control_dt
        self.cmd = self.cmd + np.clip(target - self.cmd, -rate, rate)
        self._cmd_nonzero = bool(np.any(np.abs(target) >= dead))

    def _nominal_foothold(self, side: str, t_ahead: float, path: Vec) -> FootPose:
        """Where ``side`` should stand when the COM passes it, ``t_ahead`` from now, for the current command."""
        x, y, yaw = path
        vx, vy, wz = self.cmd
        # integrate the constant twist (exact arc)
        dyaw = wz * t_ahead
        if abs(wz) > 1e-6:
            sx = (math.sin(yaw + dyaw) - math.sin(yaw)) / wz
            sy = (math.cos(yaw) - math.cos(yaw + dyaw)) / wz
            cx = -(math.cos(yaw) - math.cos(yaw + dyaw)) / wz
            cy = (math.sin(yaw + dyaw) - math.sin(yaw)) / wz
            dx = vx * sx + vy * cx
            dy = vx * sy + vy * cy
        else:
            c, s = math.cos(yaw), math.sin(yaw)
            dx = (c * vx - s * vy) * t_ahead
            dy = (s * vx + c * vy) * t_ahead
        fyaw = yaw + dyaw
        half_w = 0.5 * self.cfg.step_width * SIGN[side]
        back = self.cfg.zmp_x_offset  # the sole centre sits behind the point the COM passes over
        c, s = math.cos(fyaw), math.sin(fyaw)
        pos = np.array([x + dx - s * half_w - c * back, y + dy + c * half_w - s * back, 0.0])
        return FootPose(pos, fyaw)

    def _constrain_step(self, side: str, stance: FootPose, target: FootPose) -> FootPose:
        """Keep a foothold reachable and clear of the stance foot (stance-foot frame limits)."""
        cfg = self.cfg
        rel = stance.rot()[:2, :2].T @ (target.pos[:2] - stance.pos[:2])
        s = SIGN[side]
        rel[0] = float(np.clip(rel[0], -cfg.max_step_length, cfg.max_step_length))
        lat = float(np.clip(s * rel[1], cfg.min_step_width, cfg.max_step_width))
        rel[1] = s * lat
        dyaw = float(np.clip(_wrap(target.yaw - stance.yaw), -cfg.max_step_yaw, cfg.max_step_yaw))
        pos = np.zeros(3)
        pos[:2] = stance.pos[:2] + stance.rot()[:2, :2] @ rel
        return FootPose(pos, stance.yaw + dyaw)

    # ------------------------------------------------------------------ main tick
    def step(self, inp: PolicyInput) -> PolicyOutput:
        """One 50 Hz tick: estimate, plan, reference, IK, motor commands."""
        import time

        t0 = time.perf_counter()
        if not inp.active:
            self.reset()
            out = self._output(joints.DEFAULT_POS.copy(), np.zeros(joints.NUM_JOINTS))
            self.telemetry.compute_s = time.perf_counter() - t0
            return out
        cfg = self.cfg
        q = np.asarray(inp.q, dtype=np.float64)
        qd = np.asarray(inp.qd, dtype=np.float64)
        gyro = np.asarray(inp.gyro, dtype=np.float64)
        R = _quat_to_mat(np.asarray(inp.quat, dtype=np.float64))
        roll, pitch, yaw = roll_pitch_yaw(R)
        kin = self.kin
        kin.set_measured(inp.quat, q)
        sole = {s: kin.sole_pose(s) for s in SIDES}
        com_rel = kin.com()
        if not self._initialized:
            self._initialize(sole, com_rel, yaw, q)
        self.ticks += 1
        self.t_active += cfg.control_dt
        self._slew_command(np.asarray(inp.command, dtype=np.float64))

        # --- estimate: base and COM in odom, anchored on the loaded foot (feet weights by gait phase)
        w_left = self._weight_left()
        base = np.zeros(3)
        comv = np.zeros(3)
        for s in SIDES:
            w = w_left if s == "left" else 1.0 - w_left
            if w <= 0.0:
                continue
            base += w * (self.feet[s].pos - sole[s][0])
            comv += w * kin.com_velocity_rel_sole(s, gyro, qd)
        com = base + com_rel
        dcm = com[:2] + comv[:2] / self.omega

        # --- gait state machine and footholds
        self._advance_path(com, yaw)
        self._update_mode(dcm)
        if self.mode is Mode.WALK:
            self._walk_tick(base, sole, dcm)

        # --- COM reference
        zmp_future = self._zmp_horizon()
        state = self.preview.step(zmp_future)
        if cfg.state_blend > 0.0:
            state[0] += cfg.state_blend * (com[:2] - state[0])
            state[1] += cfg.state_blend * (comv[:2] - state[1])
        com_ref = state[0].copy()
        dcm_ref = state[0] + state[1] / self.omega
        dcm_err = dcm - dcm_ref
        gain = np.array(cfg.stand_dcm_gain if self.mode is Mode.STAND else cfg.walk_dcm_gain)
        com_cmd = com_ref - np.clip(gain * dcm_err, -0.05, 0.05)

        # --- IK
        q_des = self._whole_body_ik(com_cmd, base, R, roll, pitch, gyro, sole)
        tau = np.zeros(joints.NUM_JOINTS)
        if cfg.gravity_ff:
            tau += kin.contact_torques(self._planned_loads(base, state))
        swing_q = self._swing_q
        if cfg.velocity_ff and swing_q is not None and swing_q[1] is not None:
            # swing leg: its targets follow a smooth curve, so rate and acceleration are differentiated from the
            # curve (never from the stance targets, which carry feedback); inverse dynamics replaces gravity
            side, q_prev, q_now, q_next = swing_q
            dt = cfg.control_dt
            qd_des = (q_next - q_prev) / (2.0 * dt)
            qdd_des = (q_next - 2.0 * q_now + q_prev) / (dt * dt)
            idx = self._leg_joint[side]
            tau[idx] = kin.leg_inverse_dynamics(side, qd_des, qdd_des) + self._kd[idx] * qd_des
        self.q_des_prev = q_des.copy()

        tel = self.telemetry
        tel.mode = self.mode.value
        tel.stance = self.stance if self.mode is Mode.WALK else "both"
        tel.com = com
        tel.com_ref = com_ref
        tel.dcm_error = dcm_err
        out = self._output(q_des, tau)
        tel.compute_s = time.perf_counter() - t0
        return out

    def _planned_loads(self, base: Vec, state: Vec) -> list[tuple[str, Vec, Vec]]:
        """Ground forces the COM plan implies, split between the soles, as (side, point, force) in the kinematic
        model's frame (world-aligned, pelvis at the origin).

        Total force ``m (g + c_ddot)`` acts through the plan's ZMP. In double support each sole takes the share
        that puts the combined centre of pressure on the ZMP (its projection on the line between the soles) and
        presses at its own centre shifted like the ZMP; in single support the stance sole takes it all at the ZMP
        clipped into the sole.
        """
        kin = self.kin
        zmp = self.preview.zmp()
        acc = state[2]
        force = kin.total_mass * np.array([acc[0], acc[1], GRAVITY])
        if self.mode is Mode.WALK and self.tick_in_step > self.ds_len:
            side = self.stance
            foot = self.feet[side]
            leg = kin.legs[side]
            rel = foot.rot()[:2, :2].T @ (zmp - foot.pos[:2])
            rel = np.clip(rel, [-leg.sole_half_length, -leg.sole_half_width], [leg.sole_half_length, leg.sole_half_width])
            pt = np.append(foot.pos[:2] + foot.rot()[:2, :2] @ rel, 0.0) - base
            return [(side, pt, force)]
        pl, pr = self.feet["left"].pos[:2], self.feet["right"].pos[:2]
        axis = pl - pr
        w_left = float(np.clip((zmp - pr) @ axis / max(float(axis @ axis), 1e-9), 0.0, 1.0))
        mid = pr + w_left * axis
        loads = []
        for side, w in (("left", w_left), ("right", 1.0 - w_left)):
            if w <= 1e-3:
                continue
            foot = self.feet[side]
            leg = kin.legs[side]
            rel = foot.rot()[:2, :2].T @ (foot.pos[:2] + (zmp - mid) - foot.pos[:2])
            rel = np.clip(rel, [-leg.sole_half_length, -leg.sole_half_width], [leg.sole_half_length, leg.sole_half_width])
            pt = np.append(foot.pos[:2] + foot.rot()[:2, :2] @ rel, 0.0) - base
            loads.append((side, pt, w * force))
        return loads

    def _output(self, q_des: Vec, tau: Vec) -> PolicyOutput:
        p2j = self._policy_to_joint
        q_des = np.clip(q_des, joints.RANGE_LO, joints.RANGE_HI)
        tau = np.clip(tau, -joints.EFFORT_LIMIT, joints.EFFORT_LIMIT)
        return PolicyOutput(
            target=q_des[p2j].copy(), torque_ff=tau[p2j].copy(), kp=self._kp[p2j].copy(), kd=self._kd[p2j].copy()
        )

    # ------------------------------------------------------------------ state machine
    def _initialize(self, sole: dict[str, tuple[Vec, Vec]], com_rel: Vec, yaw: float, q: Vec) -> None:
        ground = -min(sole[s][0][2] for s in SIDES)
        for s in SIDES:
            p, Rs = sole[s]
            pos = p.copy()
            pos[2] = 0.0
            self.feet[s] = FootPose(pos, float(math.atan2(Rs[1, 0], Rs[0, 0])))
        base = np.array([0.0, 0.0, ground])
        com = base + com_rel
        self.preview.reset(com[:2])
        self.path = np.array([com[0], com[1], yaw])
        self.height_start = ground
        self.height = ground
        self.t_active = 0.0
        self.kin.ik_set_posture(q)
        self.q_des = q.copy()
        self._initialized = True

    def _weight_left(self) -> float:
        if self.mode is Mode.STAND:
            return 0.5
        s = 1.0 if self.stance == "left" else 0.0
        if self.tick_in_step < self.ds_len:
            a = (self.tick_in_step + 1) / (self.ds_len + 1)
            return (1.0 - a) * (1.0 - s) + a * s
        return s

    def _advance_path(self, com: Vec, yaw: float) -> None:
        """Move the path frame with the command, leashed to the measured COM and heading."""
        dt = self.cfg.control_dt
        vx, vy, wz = self.cmd
        c, s = math.cos(self.path[2]), math.sin(self.path[2])
        self.path[0] += (c * vx - s * vy) * dt
        self.path[1] += (s * vx + c * vy) * dt
        self.path[2] += wz * dt
        err = self.path[:2] - com[:2]
        rel = np.array([c * err[0] + s * err[1], -s * err[0] + c * err[1]])
        rel = np.clip(rel, -0.12, 0.12)
        self.path[:2] = com[:2] + np.array([c * rel[0] - s * rel[1], s * rel[0] + c * rel[1]])
        self.path[2] = yaw + float(np.clip(_wrap(self.path[2] - yaw), -0.3, 0.3))

    def _update_mode(self, dcm: Vec) -> None:
        cfg = self.cfg
        if self.mode is Mode.STAND:
            err = dcm - self._stand_zmp()
            push = bool(np.any(np.abs(err) > np.array(cfg.recovery_dcm)))
            if self._cmd_nonzero or cfg.step_in_place or push:
                self._start_walking(dcm)

    def _start_walking(self, dcm: Vec) -> None:
        """First swing: the foot on the side we move to (or the unloaded side of a push)."""
        mid = self._stand_zmp()
        yaw = self.feet["right"].yaw + 0.5 * _wrap(self.feet["left"].yaw - self.feet["right"].yaw)
        lat = float(yaw_rotation(yaw)[:2, 1] @ (dcm - mid))
        if abs(self.cmd[1]) > 1e-3:
            swing = "left" if self.cmd[1] > 0 else "right"
        elif abs(self.cmd[2]) > 1e-3:
            swing = "left" if self.cmd[2] > 0 else "right"
        elif abs(lat) > 0.02:
            swing = "left" if lat > 0 else "right"
        else:
            swing = "right"
        self.mode = Mode.WALK
        self.stance = OTHER[swing]
        self.tick_in_step = 0
        self.ds_len = self.cfg.ds_ticks + 5  # a longer first weight shift
        self.swing_from = self.feet[swing].copy()
        self.swing_target = self.feet[swing].copy()
        self._stance_landed = False
        self.zero_cmd_steps = 0
        self.stopping = False

    def _walk_tick(self, base: Vec, sole: dict[str, tuple[Vec, Vec]], dcm: Vec) -> None:
        cfg = self.cfg
        ss = cfg.step_ticks - cfg.ds_ticks
        swing = OTHER[self.stance]
        if self.tick_in_step >= self.ds_len + ss:
            # touchdown of the swing foot: measure where it landed, it becomes the stance foot
            p = base + sole[swing][0]
            p[2] = 0.0
            Rs = sole[swing][1]
            self.feet[swing] = FootPose(p, float(math.atan2(Rs[1, 0], Rs[0, 0])))
            if self.stopping and self._feet_together_done:
                self.mode = Mode.STAND
                self.preview_hold = True
                return
            if self._cmd_nonzero or cfg.step_in_place:
                self.zero_cmd_steps = 0
            else:
                self.zero_cmd_steps += 1
            self.stance = swing
            swing = OTHER[swing]
            self._stance_landed = True
            self.tick_in_step = 0
            self.ds_len = cfg.ds_ticks
            self.swing_from = self.feet[swing].copy()
            self.stopping = self.zero_cmd_steps >= cfg.stop_steps
            self._feet_together_done = False
        # foothold of the current swing foot, re-planned every tick until shortly before touchdown
        remaining = (self.ds_len + ss - self.tick_in_step) * cfg.control_dt
        if remaining > 0.08 or self.swing_target is None:
            self.swing_target = self._plan_swing_target(swing, remaining, dcm)
        self.tick_in_step += 1

    def _plan_swing_target(self, swing: str, remaining: float, dcm: Vec) -> FootPose:
        cfg = self.cfg
        stance = self.feet[self.stance]
        if self.stopping:
            target = FootPose(
                stance.pos + np.append(stance.rot()[:2, 1] * (SIGN[swing] * cfg.step_width), 0.0), stance.yaw
            )
            self._feet_together_done = True
        else:
            t_center = remaining + cfg.double_support_time + 0.5 * (cfg.step_time - cfg.double_support_time)
            target = self._nominal_foothold(swing, t_center, self.path)
        # DCM error at touchdown, predicted with the ZMP on the stance foot
        p = self._zmp_point(self.stance, stance)
        dcm_ref = self.preview.state[0] + self.preview.state[1] / self.omega
        err = (dcm - dcm_ref) * math.exp(self.omega * remaining)
        target.pos[:2] += cfg.dcm_step_gain * np.clip(err, -0.15, 0.15)
        del p
        return self._constrain_step(swing, stance, target)

    # ------------------------------------------------------------------ reference
    def _zmp_horizon(self) -> Vec:
        cfg = self.cfg
        n = self.preview.horizon
        out = np.empty((n, 2))
        if self.mode is Mode.STAND:
            out[:] = self._stand_zmp()
            return out
        ss = cfg.step_ticks - cfg.ds_ticks
        stance_side = self.stance
        prev_pt = self._zmp_point(OTHER[stance_side], self.feet[OTHER[stance_side]])
        if self.ds_len > cfg.ds_ticks:  # first step from standing shifts from the middle
            prev_pt = self._stand_zmp()
        cur_foot = self.feet[stance_side]
        cur_pt = self._zmp_point(stance_side, cur_foot)
        t = self.tick_in_step  # ticks already elapsed in this step (after _walk_tick's increment)
        ds_len = self.ds_len
        next_foot = self.swing_target
        side = stance_side
        stop_after = self.stopping
        k = 0
        t_ahead = 0.0
        while k < n:
            step_len = ds_len + ss
            while t < step_len and k < n:
                if t < ds_len:
                    a = (t + 1) / (ds_len + 1)
                    out[k] = (1.0 - a) * prev_pt + a * cur_pt
                else:
                    out[k] = cur_pt
                t += 1
                k += 1
                t_ahead += cfg.control_dt
            if k >= n:
                break
            # next step: the swing foot lands and becomes the stance
            side = OTHER[side]
            prev_pt = cur_pt
            if next_foot is None:
                break
            if stop_after:
                mid = 0.5 * (cur_foot.pos[:2] + next_foot.pos[:2])
                ds = cfg.ds_ticks
                for j in range(n - k):
                    a = min(1.0, (j + 1) / (ds + 1))
                    out[k + j] = (1.0 - a) * prev_pt + a * mid
                return out
            cur_foot = next_foot
            cur_pt = self._zmp_point(side, cur_foot)
            t_center = t_ahead + cfg.step_time + 0.5 * ss * cfg.control_dt
            next_foot = self._constrain_step(OTHER[side], cur_foot, self._nominal_foothold(OTHER[side], t_center,
                                                                                          self.path))
            stop_after = not self._cmd_nonzero and not cfg.step_in_place and False
            ds_len = cfg.ds_ticks
            t = 0
        if k < n:
            out[k:] = out[k - 1]
        return out

    # ------------------------------------------------------------------ whole-body IK
    def _whole_body_ik(
        self,
        com_cmd: Vec,
        base_meas: Vec,
        R_meas: Vec,
        roll: float,
        pitch: float,
        gyro: Vec,
        sole: dict[str, tuple[Vec, Vec]],
    ) -> Vec:
        cfg = self.cfg
        kin = self.kin
        ss = cfg.step_ticks - cfg.ds_ticks
        # pelvis height ramps from where the robot stands to the nominal height
        a = min(1.0, self.t_active / cfg.height_ramp_time)
        a = a * a * (3.0 - 2.0 * a)
        height = (1.0 - a) * self.height_start + a * cfg.pelvis_height

        # desired pelvis yaw: between the feet (including where the swing foot is going)
        if self.mode is Mode.WALK and self.swing_target is not None:
            yaw_des = self.feet[self.stance].yaw + 0.5 * _wrap(self.swing_target.yaw - self.feet[self.stance].yaw)
        else:
            yaw_des = self.feet["right"].yaw + 0.5 * _wrap(self.feet["left"].yaw - self.feet["right"].yaw)
        R_des = rotation_from_rpy(0.0, cfg.torso_pitch, yaw_des)

        com_b = kin.ik_com()  # COM relative to the pelvis, in the pelvis frame (previous IK solution)
        pel_des = np.array([com_cmd[0], com_cmd[1], 0.0]) - R_des @ com_b
        pel_des[2] = height

        # hip strategy: the loaded legs turn the pelvis against its measured tilt and heading error, about the
        # load-weighted hip point (the stance hip in single support, so the stance leg below the hip -- and the
        # ankle's tiny roll range -- is left alone; between the hips in double support, where the legs change
        # length instead)
        yaw_meas = math.atan2(R_meas[1, 0], R_meas[0, 0])
        err = np.array(
            [
                roll + cfg.attitude_rate_gain * gyro[0],
                (pitch - cfg.torso_pitch) + cfg.attitude_rate_gain * gyro[1],
                _wrap(yaw_meas - yaw_des),
            ]
        )
        gains = np.array([cfg.attitude_gain, cfg.attitude_gain, cfg.yaw_gain])
        R_cmd = R_des @ _rot_exp(-gains * err)
        w_left = self._weight_left()
        pivot = w_left * self._hip_pos["left"] + (1.0 - w_left) * self._hip_pos["right"]
        pel = pel_des + R_des @ pivot - R_cmd @ pivot

        targets: dict[str, tuple[Vec, Vec]] = {}
        weights: dict[str, Vec] = {}
        points: dict[str, Vec] = {}
        for s in SIDES:
            foot = self._foot_now(s, ss)
            Rf = foot.rot()
            w = self._measured_frame_weight(s)
            p_cmd, R_rel_cmd = R_cmd.T @ (foot.pos - pel), R_cmd.T @ Rf
            if w > 0.0:
                p_meas, R_rel_meas = R_meas.T @ (foot.pos - base_meas), R_meas.T @ Rf
                targets[s] = ((1.0 - w) * p_cmd + w * p_meas, _rot_blend(R_rel_cmd, R_rel_meas, w))
            else:
                targets[s] = (p_cmd, R_rel_cmd)
            targets[s] = (self._clamp_reach(s, targets[s][0]), targets[s][1])
            if self.mode is Mode.WALK and s != self.stance and self.tick_in_step > self.ds_len:
                weights[s] = self._swing_task_weights
                points[s] = self._swing_point[s]
        sol = kin.solve_legs(targets, weights, iterations=cfg.ik_iterations, points=points)
        q_des = joints.DEFAULT_POS.copy()
        for s in SIDES:
            q_des[self._leg_joint[s]] = sol[s]
        self._swing_q = self._swing_lookahead(sol, points, weights, R_meas, base_meas, ss)
        if cfg.arm_swing != 0.0 and self.mode is Mode.WALK:
            for s in SIDES:
                rel = self.feet[OTHER[s]].rot()[:2, :2].T @ (self._foot_now(OTHER[s], ss).pos[:2] - pel[:2])
                q_des[self._arm_pitch[s]] += SIGN[s] * cfg.arm_swing * rel[0]
        self._dbg = (targets, pel.copy(), R_des.copy(), height)
        return q_des

    def _clamp_reach(self, side: str, p: Vec) -> Vec:
        """Pull a sole target back inside the leg's reach, so the IK never straightens the knee into a stomp."""
        hip = self._hip_pos[side]
        v = p - hip
        n = float(np.linalg.norm(v))
        if n > self._max_reach:
            return hip + v * (self._max_reach / n)
        return p

    def _measured_frame_weight(self, side: str) -> float:
        """How much a leg is placed from the *measured* pelvis (1) rather than the commanded one (0).

        A swing foot must land where the planner put it whatever the body's tilt, so it is placed from the
        measured pelvis; a stance leg instead carries the pelvis to its command. The switch is blended over a few
        ticks after lift-off and over the double support after touchdown, so targets never jump.
        """
        if self.mode is not Mode.WALK:
            return 0.0
        cfg = self.cfg
        if side != self.stance:
            if self.tick_in_step <= self.ds_len:
                return 0.0
            return min(1.0, (self.tick_in_step - self.ds_len) / cfg.swing_blend_ticks)
        if not self._stance_landed:
            return 0.0
        return max(0.0, 1.0 - self.tick_in_step / max(1, self.ds_len))

    def _swing_lookahead(
        self,
        sol: dict[str, Vec],
        points: dict[str, Vec],
        weights: dict[str, Vec],
        R_meas: Vec,
        base_meas: Vec,
        ss: int,
    ) -> tuple[str, Vec | None, Vec, Vec] | None:
        """Swing-leg angles one tick past the current target, for rate/acceleration feed-forward.

        Returns ``(side, previous target, current target, next target)``; ``None`` outside a swing. The extra
        IK runs on a copy of the warm start, so the main solution is untouched.
        """
        if self.mode is not Mode.WALK or self.tick_in_step <= self.ds_len:
            self._swing_hist = None
            return None
        side = OTHER[self.stance]
        if side not in points:
            self._swing_hist = None
            return None
        kin = self.kin
        foot = self._swing_pose(ss, ahead=1)
        w = self._measured_frame_weight(side)
        p = R_meas.T @ (foot.pos - base_meas)
        R_rel = R_meas.T @ foot.rot()
        del w
        leg = kin.legs[side]
        saved = kin.ik.qpos[leg.qpos].copy()
        nxt = kin.solve_legs({side: (self._clamp_reach(side, p), R_rel)}, weights, iterations=2, points=points)[side]
        kin.ik.qpos[leg.qpos] = saved
        prev = self._swing_hist if self._swing_hist is not None and self._swing_hist[0] == side else None
        self._swing_hist = (side, sol[side].copy())
        return side, (None if prev is None else prev[1]), sol[side].copy(), nxt

    def _foot_now(self, side: str, ss: int) -> FootPose:
        if self.mode is Mode.WALK and side != self.stance and self.tick_in_step > self.ds_len:
            return self._swing_pose(ss)
        return self.feet[side]

    def _swing_pose(self, ss: int, ahead: int = 0) -> FootPose:
        """Swing sole ``ahead`` ticks from now: smooth horizontal transfer, raised-cosine lift, landing flat."""
        cfg = self.cfg
        s = (self.tick_in_step + ahead - self.ds_len) / ss
        s = min(max(s, 0.0), 1.0)
        h_phase = s
        # horizontal motion finishes a little before touchdown so the foot comes down vertically
        sx = min(1.0, s / 0.85)
        b = sx * sx * sx * (10.0 + sx * (-15.0 + 6.0 * sx))
        a0, a1 = self.swing_from, self.swing_target
        assert a0 is not None and a1 is not None
        pos = (1.0 - b) * a0.pos + b * a1.pos
        pos[2] = cfg.swing_height * 0.5 * (1.0 - math.cos(2.0 * math.pi * h_phase))
        yaw = a0.yaw + b * _wrap(a1.yaw - a0.yaw)
        return FootPose(pos, yaw)
