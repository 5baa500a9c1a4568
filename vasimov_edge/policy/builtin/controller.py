"""The built-in model-based walker: balance and walking from IMU + encoders + command, no learned weights.

Why this shape. Asimov 1's feet are 4-5.6 cm wide with +/-0.1 rad of ankle roll and only 0.05 rad of ankle
dorsiflexion left at the stand pose, and the policy interface gives no force sensing. A stiff position-controlled
walker that tracks a ZMP-preview COM path (the first probe's method) has no margin: the real centre of pressure
sits on a sole edge within a step, the foot pivots on one corner, loses its yaw friction and spins. So:

* **Standing** (zero command): stiff ankles hold the COM over the feet; a ZMP-preview reference plus
  capture-point feedback (the COM command moves against the DCM error, so the stiff joints shift the pressure
  the right way) rejects pushes.
* **Walking**: the stance ankle is made nearly free (low gains) and carries only a feed-forward torque that puts
  the pressure at the sole centre, so the robot is an inverted pendulum on a known pivot and nothing asks the
  narrow foot for a moment it cannot give. Balance is by **foot placement**: every tick the divergent component
  of motion (DCM) is measured relative to the pivot, predicted to touchdown, and the swing foot is sent where
  the DCM must sit at the start of the next step for the commanded velocity (linear-inverted-pendulum orbit).
  The stance leg only keeps the pelvis height and the torso upright (IMU feedback through the stance hip).
* The swing foot is placed from the *measured* pelvis (own kinematic model: IMU attitude + encoders), follows a
  lift curve driven through the ankle point (the foot may pitch toes-down when the ankle stop is reached), and
  gets inverse-dynamics feed-forward so it lands where it was sent.

Everything is computed from what the real robot's policy gets (IMU, encoders, command) plus the controller's
own copy of the model (``kinematics.RobotKinematics``). Odometry: the stance sole is assumed fixed on flat
ground; each new foothold is measured at touchdown.
"""

from __future__ import annotations

import enum
import math
import time
from dataclasses import dataclass, field

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
    yaw_rotation,
)
from vasimov_edge.policy.builtin.preview import GRAVITY, PreviewController, preview_gains
from vasimov_edge.policy.interface import PolicyInput, PolicyOutput

Vec = NDArray[np.float64]

OTHER = {"left": "right", "right": "left"}
SIGN = {"left": 1.0, "right": -1.0}  # lateral side of each foot in the robot frame
COM_ABOVE_PELVIS = 0.017  # m; the stand-pose COM sits this far above the pelvis origin
MAX_COM_SHIFT = 0.05  # m; clamp of the standing capture-point correction

_WAIST = "waist_yaw_joint"


class Mode(enum.Enum):
    STAND = "stand"
    PRELUDE = "prelude"  # stiff weight shift onto the first stance foot
    WALK = "walk"


def _wrap(a: float) -> float:
    return (a + math.pi) % (2.0 * math.pi) - math.pi


def _rot_exp(v: Vec) -> Vec:
    """Rotation matrix of the rotation vector ``v`` (Rodrigues)."""
    a = float(np.linalg.norm(v))
    if a < 1e-12:
        return np.eye(3)
    k = v / a
    kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + math.sin(a) * kx + (1.0 - math.cos(a)) * (kx @ kx)


def _rot_blend(Ra: Vec, Rb: Vec, w: float) -> Vec:
    """Rotation a fraction ``w`` of the way from ``Ra`` to ``Rb`` (geodesic)."""
    return Ra @ _rot_exp(rot_log(Ra.T @ Rb) * w)


def _rot2(yaw: float) -> Vec:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s], [s, c]])


@dataclass
class FootPose:
    """A sole centre on the ground plane of the odometry frame."""

    pos: Vec  # (3,), z = 0 on the ground
    yaw: float

    def copy(self) -> FootPose:
        return FootPose(self.pos.copy(), self.yaw)

    def rot(self) -> Vec:
        return yaw_rotation(self.yaw)


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


@dataclass
class Telemetry:
    """What the controller believes, for the bench and for debugging (odometry frame)."""

    mode: str = Mode.STAND.value
    stance: str = "both"
    com: Vec = field(default_factory=lambda: np.zeros(3))
    dcm: Vec = field(default_factory=lambda: np.zeros(2))
    dcm_error: Vec = field(default_factory=lambda: np.zeros(2))
    steps: int = 0
    compute_s: float = 0.0


class BuiltinController:
    """Model-based balance and walking backend (implements ``PolicyBackend``)."""

    name = "builtin"

    def __init__(self, config: ControllerConfig | None = None, kinematics: RobotKinematics | None = None) -> None:
        self.cfg = config if config is not None else ControllerConfig()
        self.kin = kinematics if kinematics is not None else RobotKinematics()
        cfg = self.cfg
        h_com = cfg.pelvis_height + COM_ABOVE_PELVIS
        self.omega = math.sqrt(GRAVITY / h_com)
        self.preview = PreviewController(
            preview_gains(cfg.control_dt, h_com, round(cfg.preview_time / cfg.control_dt), r_jerk=cfg.preview_r)
        )
        self._p2j = joints.POLICY_TO_JOINT
        self._leg = {s: list(self.kin.legs[s].joint) for s in SIDES}
        self._ankle = {s: (self.kin.legs[s].joint[4], self.kin.legs[s].joint[5]) for s in SIDES}
        self._waist = joints.joint_index(_WAIST)
        self._kp0, self._kd0 = self._gain_tables()
        self._hip, self._max_reach = self._leg_reach()
        w = np.ones(6)
        w[4] = cfg.swing_pitch_weight  # rotation about the pelvis y axis: the swing foot may pitch
        self._swing_weights = w
        self._swing_point = {s: np.array([cfg.swing_point_x, 0.0, self.kin.legs[s].sole_offset[2]]) for s in SIDES}
        self._pivot_local = np.array([cfg.cop_x_offset, 0.0])
        self.telemetry = Telemetry()
        self.reset()

    # ------------------------------------------------------------------ setup
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
        """Forget the gait; the next active tick re-anchors odometry on the measured stance."""
        self._initialized = False
        self.mode = Mode.STAND
        self.feet: dict[str, FootPose] = {}
        self.stance = "left"
        self.tick = 0  # ticks into the current step (walk) or prelude
        self.swing_from: FootPose | None = None
        self.swing_target: FootPose | None = None
        self.cmd = np.zeros(3)
        self._cmd_nonzero = False
        self.heading = 0.0
        self.zero_steps = 0
        self.final_step = False
        self.recovery_steps = 0
        self.steps = 0
        self._landed = False
        self._land_bias = np.zeros(2)
        self._v_est: Vec | None = None
        self._height = self.cfg.pelvis_height
        self._cop: Vec | None = None
        self._preview_needs_reset = True
        self._planned_target: FootPose | None = None
        self._swing_hist: tuple[str, Vec] | None = None
        self._swing_q: tuple[str, Vec | None, Vec, Vec] | None = None
        self.kin.ik_set_posture(joints.DEFAULT_POS)
        self.telemetry = Telemetry()

    # ------------------------------------------------------------------ main tick
    def step(self, inp: PolicyInput) -> PolicyOutput:
        """One 50 Hz tick: estimate, gait logic, pelvis/foot targets, IK, motor commands."""
        t0 = time.perf_counter()
        if not inp.active:
            self.reset()
            out = self._output(joints.DEFAULT_POS.copy(), np.zeros(joints.NUM_JOINTS), self._kp0, self._kd0)
            self.telemetry.compute_s = time.perf_counter() - t0
            return out
        cfg = self.cfg
        est = self._estimate(inp)
        self._slew_command(np.asarray(inp.command, dtype=np.float64))
        self._advance_heading(est.rpy[2])

        if self.mode is Mode.STAND:
            self._stand_transitions(est)
        if self.mode is Mode.PRELUDE:
            self._prelude_tick(est)
        if self.mode is Mode.WALK:
            self._walk_tick(est)

        kp, kd = self._kp0.copy(), self._kd0.copy()
        if self.mode is Mode.WALK:
            com_xy, loads = est.base[:2], self._walk_loads(est)
            for s in self._loaded_feet():
                kp[list(self._ankle[s])] = cfg.stance_ankle_kp
                kd[list(self._ankle[s])] = cfg.stance_ankle_kd
            for s in SIDES:
                if self._in_swing(s):
                    # stiff while the leg folds and unfolds, soft for the landing so an early touchdown does not
                    # push the body up (the ground is only known to a centimetre)
                    phase = (self.tick - cfg.ds_ticks) / cfg.ss_ticks
                    soft = min(1.0, max(0.0, (phase - 0.7) / 0.3))
                    kp[self._leg[s][:4]] = (1.0 - soft) * cfg.swing_kp + soft * cfg.landing_kp
            pelvis_xy = est.base[:2]
        else:
            com_xy, loads = self._stand_reference(est)
            pelvis_xy = None
        q_des = self._whole_body_ik(est, com_xy, pelvis_xy)
        tau = np.zeros(joints.NUM_JOINTS)
        if cfg.gravity_ff:
            tau += self.kin.contact_torques(loads)
        self._swing_feedforward(tau)
        # yaw damping through the waist: torque on the torso in the direction the pelvis spins is the opposite
        # torque on the pelvis, which the stance sole's few contact points cannot always supply
        tau[self._waist] += cfg.waist_yaw_damping * est.gyro[2]

        tel = self.telemetry
        tel.mode = self.mode.value
        tel.stance = self.stance if self.mode is not Mode.STAND else "both"
        tel.com = est.com
        tel.dcm = est.dcm
        tel.steps = self.steps
        out = self._output(q_des, tau, kp, kd)
        tel.compute_s = time.perf_counter() - t0
        return out

    def _output(self, q_des: Vec, tau: Vec, kp: Vec, kd: Vec) -> PolicyOutput:
        p2j = self._p2j
        q_des = np.clip(q_des, joints.RANGE_LO, joints.RANGE_HI)
        tau = np.clip(tau, -joints.EFFORT_LIMIT, joints.EFFORT_LIMIT)
        return PolicyOutput(target=q_des[p2j].copy(), torque_ff=tau[p2j].copy(), kp=kp[p2j].copy(), kd=kd[p2j].copy())

    # ------------------------------------------------------------------ estimation
    def _estimate(self, inp: PolicyInput) -> Estimate:
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
        com_rel = kin.com()
        if not self._initialized:
            self._initialize(sole, roll_pitch_yaw(R)[2], q)
        anchors = self._anchor_weights()
        base = np.zeros(3)
        comv = np.zeros(3)
        for s, w in anchors.items():
            base += w * (self.feet[s].pos - sole[s][0])
            comv += w * kin.com_velocity_rel_sole(s, gyro, qd)
        com = base + com_rel
        comv = self._filter_velocity(com, comv)
        return Estimate(
            R=R,
            rpy=roll_pitch_yaw(R),
            sole=sole,
            base=base,
            com=com,
            comv=comv,
            dcm=com[:2] + comv[:2] / self.omega,
            gyro=gyro,
        )

    def _initialize(self, sole: dict[str, tuple[Vec, Vec]], yaw: float, q: Vec) -> None:
        ground = -min(sole[s][0][2] for s in SIDES)
        for s in SIDES:
            p, Rs = sole[s]
            pos = p.copy()
            pos[2] = 0.0
            self.feet[s] = FootPose(pos, float(math.atan2(Rs[1, 0], Rs[0, 0])))
        self._height = ground
        self.heading = yaw
        self.kin.ik_set_posture(q)
        self._initialized = True
        self.preview.reset(np.zeros(2))
        self._preview_needs_reset = True

    def _filter_velocity(self, com: Vec, v_meas: Vec) -> Vec:
        """COM velocity: pendulum prediction corrected by the kinematic measurement, innovation-limited.

        The kinematic rate assumes the anchor sole is still; when it rocks onto a heel or toe the measurement
        jumps for a tick or two. The linear-inverted-pendulum prediction (``c_ddot = w^2 (c - cop)`` about the
        last pressure point) carries the estimate through such ticks.
        """
        cfg = self.cfg
        v = v_meas.copy()
        if self._v_est is not None:
            pred = self._v_est.copy()
            if self.mode is Mode.WALK and self._cop is not None:
                pred[:2] += cfg.control_dt * self.omega**2 * (com[:2] - self._cop)
            innov = np.clip(v_meas - pred, -cfg.velocity_innovation_limit, cfg.velocity_innovation_limit)
            v = pred + cfg.velocity_filter_gain * innov
        self._v_est = v.copy()
        return v

    def _anchor_weights(self) -> dict[str, float]:
        """Which planted soles anchor the odometry this tick.

        Both when standing; the stance foot when walking -- except during the double support right after a
        touchdown, when the new foot may still be sliding or rocking from the impact and the old stance foot is
        the one that is known to be still (anchoring on the landing foot gave 1.5 m/s COM-velocity spikes).
        """
        if self.mode is Mode.WALK:
            if self._landed and self.tick < self.cfg.ds_ticks:
                return {OTHER[self.stance]: 1.0}
            return {self.stance: 1.0}
        return {"left": 0.5, "right": 0.5}

    def _loaded_feet(self) -> list[str]:
        if self.mode is Mode.WALK and self.tick < self.cfg.ds_ticks and self._landed:
            return list(SIDES)
        return [self.stance]

    # ------------------------------------------------------------------ command and heading
    def _slew_command(self, raw: Vec) -> None:
        cfg = self.cfg
        dead = np.array(cfg.command_deadband)
        target = np.where(np.abs(raw) < dead, 0.0, raw)
        rate = np.array(cfg.command_rate) * cfg.control_dt
        self.cmd = self.cmd + np.clip(target - self.cmd, -rate, rate)
        self._cmd_nonzero = bool(np.any(np.abs(target) >= dead))

    def _advance_heading(self, yaw_meas: float) -> None:
        """Integrate the commanded yaw rate into a desired heading, leashed to the measured one."""
        self.heading += self.cmd[2] * self.cfg.control_dt
        self.heading = yaw_meas + float(np.clip(_wrap(self.heading - yaw_meas), -0.3, 0.3))

    # ------------------------------------------------------------------ standing and prelude
    def _stand_point(self) -> Vec:
        left, right = self.feet["left"], self.feet["right"]
        mid = 0.5 * (left.pos[:2] + right.pos[:2])
        yaw = right.yaw + 0.5 * _wrap(left.yaw - right.yaw)
        return mid + _rot2(yaw) @ np.array([self.cfg.com_x_offset, 0.0])

    def _pivot(self, side: str) -> Vec:
        foot = self.feet[side]
        return foot.pos[:2] + _rot2(foot.yaw) @ self._pivot_local

    def _stand_transitions(self, est: Estimate) -> None:
        cfg = self.cfg
        if self._preview_needs_reset:
            self.preview.reset(est.com[:2], est.comv[:2])
            self._preview_needs_reset = False
        err = est.dcm - self._stand_point()
        rel = _rot2(self.heading).T @ err
        if np.any(np.abs(rel) > np.array(cfg.recovery_dcm)):
            # a push the ankles cannot absorb: step now, with the foot on the side the DCM is running to
            swing = "left" if rel[1] > 0.0 else "right"
            self.recovery_steps = 4
            self._begin_walk(OTHER[swing], landed=False)
            return
        if self._cmd_nonzero or cfg.step_in_place:
            if abs(self.cmd[1]) > 1e-3:
                swing = "left" if self.cmd[1] > 0.0 else "right"
            elif abs(self.cmd[2]) > 1e-3:
                swing = "left" if self.cmd[2] > 0.0 else "right"
            else:
                swing = "right"
            self.mode = Mode.PRELUDE
            self.stance = OTHER[swing]
            self.tick = 0

    def _prelude_tick(self, est: Estimate) -> None:
        """Shift the weight onto the stance foot (stiff), lift once the DCM is where a step should start."""
        cfg = self.cfg
        self.tick += 1
        pivot = self._pivot(self.stance)
        inward = -SIGN[self.stance] * float(_rot2(self.heading)[:, 1] @ (est.dcm - pivot))
        e = math.exp(self.omega * cfg.step_time)
        ready = inward <= cfg.step_width / (1.0 + e) + 0.01
        if (ready and self.tick >= cfg.prelude_ticks // 2) or self.tick >= cfg.prelude_ticks:
            self._begin_walk(self.stance, landed=False)

    def _stand_reference(self, est: Estimate) -> tuple[Vec, list[tuple[str, Vec, Vec]]]:
        """COM command while standing or shifting weight: ZMP preview toward the target point, minus the DCM error."""
        cfg = self.cfg
        n = self.preview.horizon
        target = self._pivot(self.stance) if self.mode is Mode.PRELUDE else self._stand_point()
        state = self.preview.step(np.tile(target, (n, 1)))
        dcm_ref = state[0] + state[1] / self.omega
        err = est.dcm - dcm_ref
        self.telemetry.dcm_error = err
        com_cmd = state[0] - np.clip(np.array(cfg.stand_dcm_gain) * err, -MAX_COM_SHIFT, MAX_COM_SHIFT)
        return com_cmd, self._double_support_loads(est, self.preview.zmp(), state[2])

    def _double_support_loads(self, est: Estimate, zmp: Vec, acc: Vec) -> list[tuple[str, Vec, Vec]]:
        """Planned ground forces ``m (g + c_ddot)`` through ``zmp``, split so the combined pressure lands there.

        Each sole takes the share given by the ZMP's projection on the line between the soles and presses at its
        own centre shifted like the ZMP (clipped into the sole). Points/forces are in the kinematic model's frame.
        """
        kin = self.kin
        force = kin.total_mass * np.array([acc[0], acc[1], GRAVITY])
        pl, pr = self.feet["left"].pos[:2], self.feet["right"].pos[:2]
        axis = pl - pr
        w_left = float(np.clip((zmp - pr) @ axis / max(float(axis @ axis), 1e-9), 0.0, 1.0))
        mid = pr + w_left * axis
        loads = []
        for side, w in (("left", w_left), ("right", 1.0 - w_left)):
            if w <= 1e-3:
                continue
            loads.append((side, self._sole_point(side, self.feet[side].pos[:2] + (zmp - mid)) - est.base, w * force))
        return loads

    def _sole_point(self, side: str, p: Vec) -> Vec:
        """``p`` (odom xy) clipped into the sole rectangle of ``side``, as a 3-D ground point."""
        foot = self.feet[side]
        leg = self.kin.legs[side]
        rel = _rot2(foot.yaw).T @ (p - foot.pos[:2])
        rel = np.clip(rel, [-leg.sole_half_length, -leg.sole_half_width], [leg.sole_half_length, leg.sole_half_width])
        return np.append(foot.pos[:2] + _rot2(foot.yaw) @ rel, 0.0)

    # ------------------------------------------------------------------ walking
    def _begin_walk(self, stance: str, *, landed: bool) -> None:
        self.mode = Mode.WALK
        self.stance = stance
        self.tick = self.cfg.ds_ticks  # lift the swing foot right away
        swing = OTHER[stance]
        self.swing_from = self.feet[swing].copy()
        self.swing_target = self.feet[swing].copy()
        self._landed = landed
        self._planned_target = None
        self.zero_steps = 0
        self.final_step = False
        self._swing_hist = None

    def _walk_tick(self, est: Estimate) -> None:
        cfg = self.cfg
        swing = OTHER[self.stance]
        if self.tick >= cfg.step_ticks:
            self._touchdown(est, swing)
            if self.mode is not Mode.WALK:
                return
            swing = OTHER[self.stance]
        remaining = (cfg.step_ticks - self.tick) * cfg.control_dt
        if self.tick >= cfg.ds_ticks and remaining > cfg.swing_freeze - 1e-9:
            self.swing_target = self._place_foot(est, swing, remaining)
        self.tick += 1

    def _touchdown(self, est: Estimate, swing: str) -> None:
        """The swing foot lands: measure where, make it the stance foot, decide whether to keep walking."""
        cfg = self.cfg
        p = est.base + est.sole[swing][0]
        p[2] = 0.0
        Rs = est.sole[swing][1]
        if self._planned_target is not None and cfg.landing_adapt > 0.0:
            # the swing leg lands a repeatable few centimetres off its target (PD lag while it unfolds); learn
            # that offset, in (forward, outward) coordinates, and aim the next feet against it
            rot = _rot2(self.feet[self.stance].yaw)
            err = rot.T @ (p[:2] - self._planned_target.pos[:2])
            err[1] *= SIGN[swing]
            self._land_bias = np.clip(self._land_bias + cfg.landing_adapt * err, -0.05, 0.05)
        self.feet[swing] = FootPose(p, float(math.atan2(Rs[1, 0], Rs[0, 0])))
        self.steps += 1
        if self.recovery_steps > 0:
            self.recovery_steps -= 1
        walking = self._cmd_nonzero or cfg.step_in_place or self.recovery_steps > 0
        self.zero_steps = 0 if walking else self.zero_steps + 1
        if self.final_step:
            err = _rot2(self.heading).T @ (est.dcm - self._stand_point())
            if np.all(np.abs(err) < np.array(cfg.recovery_dcm)):
                self.mode = Mode.STAND
                self._preview_needs_reset = True
                self.stance = swing
                return
        self.final_step = self.zero_steps >= cfg.stop_steps
        self.stance = swing
        self._landed = True
        self.tick = 0
        self.swing_from = self.feet[OTHER[swing]].copy()
        self.swing_target = self.swing_from.copy()
        self._planned_target = None
        self._swing_hist = None

    def _place_foot(self, est: Estimate, swing: str, remaining: float) -> FootPose:
        """Foothold that puts the DCM where the next step's pendulum orbit needs it (LIP, pivot at the CoP)."""
        cfg = self.cfg
        stance = self.feet[self.stance]
        pivot = self._pivot(self.stance)
        cop = self._stance_cop(est) if self.mode is Mode.WALK else pivot
        tau = max(0.0, remaining - (cfg.double_support_time * 0.5))
        xi_end = (cop - pivot) + (est.dcm - cop) * math.exp(self.omega * tau)
        T = cfg.step_time
        e = math.exp(self.omega * T)
        vx, vy, wz = (0.0, 0.0, 0.0) if self.final_step else self.cmd
        yaw_next = self.heading + wz * (remaining + 0.5 * T)
        yaw_next = stance.yaw + float(np.clip(_wrap(yaw_next - stance.yaw), -cfg.max_step_yaw, cfg.max_step_yaw))
        rot_next = _rot2(yaw_next)
        b = np.array([vx * T / (e - 1.0), -SIGN[swing] * cfg.step_width / (1.0 + e) + vy * T / (e - 1.0)])
        nominal = np.array([0.0, SIGN[swing] * cfg.step_width]) + np.array([vx, vy]) * T
        # relative to the stance pivot: the DCM rule, blended with the nominal step by the gain
        rel_dcm = xi_end - rot_next @ b
        rel_nom = _rot2(stance.yaw) @ nominal
        rel = cfg.dcm_step_gain * rel_dcm + (1.0 - cfg.dcm_step_gain) * rel_nom
        target_pivot = pivot + rel
        sole_xy = target_pivot - rot_next @ self._pivot_local
        planned = self._constrain_step(swing, stance, FootPose(np.append(sole_xy, 0.0), yaw_next))
        self._planned_target = planned.copy()
        aim = planned.pos[:2] - _rot2(stance.yaw) @ (self._land_bias * np.array([1.0, SIGN[swing]]))
        return FootPose(np.append(aim, 0.0), planned.yaw)

    def _constrain_step(self, side: str, stance: FootPose, target: FootPose) -> FootPose:
        """Keep a foothold reachable and clear of the stance foot (stance-foot frame limits)."""
        cfg = self.cfg
        rot = _rot2(stance.yaw)
        rel = rot.T @ (target.pos[:2] - stance.pos[:2])
        rel[0] = float(np.clip(rel[0], -cfg.max_step_length, cfg.max_step_length))
        rel[1] = SIGN[side] * float(np.clip(SIGN[side] * rel[1], cfg.min_step_width, cfg.max_step_width))
        pos = np.append(stance.pos[:2] + rot @ rel, 0.0)
        return FootPose(pos, target.yaw)

    def _nominal_dcm(self, t: float) -> Vec:
        """Where the DCM should be (odom, relative to the stance pivot) ``t`` after the step began, for the command."""
        cfg = self.cfg
        T = cfg.step_time
        e = math.exp(self.omega * T)
        vx, vy = (0.0, 0.0) if self.final_step else (self.cmd[0], self.cmd[1])
        b = np.array([vx * T / (e - 1.0), -SIGN[self.stance] * cfg.step_width / (1.0 + e) + vy * T / (e - 1.0)])
        return _rot2(self.feet[self.stance].yaw) @ b * math.exp(self.omega * t)

    def _stance_cop(self, est: Estimate) -> Vec:
        """Centre of pressure for the stance sole: the pivot, moved against the DCM error (ankle strategy).

        The sole is long (-4.5/+12.2 cm around the ankle) but only 4-5.6 cm wide, so the sagittal shift does
        most of the work; the lateral one is clipped to a centimetre so the pressure never reaches an edge.
        """
        cfg = self.cfg
        pivot = self._pivot(self.stance)
        err = (est.dcm - pivot) - self._nominal_dcm(self.tick * cfg.control_dt)
        rot = _rot2(self.feet[self.stance].yaw)
        local = rot.T @ err * np.array(cfg.ankle_cop_gain)
        lim = np.array(cfg.cop_limit)
        local = np.clip(local, -lim - self._pivot_local, lim - self._pivot_local)
        self.telemetry.dcm_error = err
        return pivot + rot @ local

    def _walk_loads(self, est: Estimate) -> list[tuple[str, Vec, Vec]]:
        """Stance-leg load: weight plus the pendulum's horizontal push, through each loaded sole's pressure point."""
        cfg = self.cfg
        kin = self.kin
        feet = self._loaded_feet()
        cop = self._stance_cop(est)
        if len(feet) == 2:
            a = (self.tick + 1) / (cfg.ds_ticks + 1)
            shares = {self.stance: a, OTHER[self.stance]: 1.0 - a}
            points = {self.stance: cop, OTHER[self.stance]: self._pivot(OTHER[self.stance])}
        else:
            shares = {self.stance: 1.0}
            points = {self.stance: cop}
        mix = sum(w * points[s] for s, w in shares.items())
        acc = self.omega**2 * (est.com[:2] - mix)
        force = kin.total_mass * np.array([acc[0], acc[1], GRAVITY])
        self._cop = cop
        return [(s, self._sole_point(s, points[s]) - est.base, w * force) for s, w in shares.items()]

    def _swing_pose(self, ahead: float = 0.0) -> FootPose:
        """Swing sole ``ahead`` ticks from now: smooth horizontal transfer, raised-cosine lift, landing flat."""
        cfg = self.cfg
        s = (self.tick + ahead - cfg.ds_ticks) / cfg.ss_ticks
        s = min(max(s, 0.0), 1.0)
        # the foot moves sideways/forwards only in the first part of the swing and is down before the step ends,
        # so the leg has stopped unfolding (and the hip caught up) when the foot meets the ground
        land = cfg.swing_land_phase
        sx = min(1.0, s / (0.8 * land))
        b = sx * sx * sx * (10.0 + sx * (-15.0 + 6.0 * sx))
        a0, a1 = self.swing_from, self.swing_target
        assert a0 is not None and a1 is not None
        pos = (1.0 - b) * a0.pos + b * a1.pos
        sz = min(1.0, s / land)
        pos[2] = cfg.swing_height * 0.5 * (1.0 - math.cos(2.0 * math.pi * sz))
        return FootPose(pos, a0.yaw + b * _wrap(a1.yaw - a0.yaw))

    def _in_swing(self, side: str) -> bool:
        return self.mode is Mode.WALK and side != self.stance and self.tick > self.cfg.ds_ticks

    def _foot_now(self, side: str) -> FootPose:
        return self._swing_pose(ahead=self.cfg.swing_time_lead) if self._in_swing(side) else self.feet[side]

    # ------------------------------------------------------------------ whole-body IK
    def _whole_body_ik(self, est: Estimate, com_xy: Vec, pelvis_xy: Vec | None) -> Vec:
        """Leg angles for the pelvis pose and the feet; arms and waist hold the stand pose.

        The pelvis is put at ``pelvis_xy`` (walking: where it is, so the stance leg leaves the pendulum free) or
        where the COM must be (standing), at the nominal height, upright with the heading between the feet --
        rotated against the measured tilt and heading error about the loaded hip (the hip strategy). Swing feet
        are placed from the *measured* pelvis so they land where planned whatever the body's tilt.
        """
        cfg = self.cfg
        kin = self.kin
        # pelvis height: standing a little lower (more ankle-pitch room for the push-recovery ankle strategy),
        # walking in the middle of the flat-foot leg window; moved at a bounded rate
        goal = cfg.pelvis_height if self.mode is Mode.WALK else cfg.stand_pelvis_height
        step = cfg.height_rate * cfg.control_dt
        self._height = float(np.clip(goal, self._height - step, self._height + step))
        height = self._height

        if self.mode is Mode.WALK and self.swing_target is not None:
            st = self.feet[self.stance]
            yaw_des = st.yaw + 0.5 * _wrap(self.swing_target.yaw - st.yaw)
        else:
            yaw_des = self.feet["right"].yaw + 0.5 * _wrap(self.feet["left"].yaw - self.feet["right"].yaw)
        R_des = yaw_rotation(yaw_des) @ _rot_exp(np.array([0.0, cfg.torso_pitch, 0.0]))
        roll, pitch, yaw = est.rpy
        err = np.array(
            [
                roll + cfg.attitude_rate_gain * est.gyro[0],
                pitch - cfg.torso_pitch + cfg.attitude_rate_gain * est.gyro[1],
                _wrap(yaw - yaw_des),
            ]
        )
        R_cmd = R_des @ _rot_exp(-np.array([cfg.attitude_gain, cfg.pitch_gain, cfg.yaw_gain]) * err)

        if pelvis_xy is None:
            com_b = kin.ik_com()  # COM in the pelvis frame (previous IK solution)
            pel = np.append(com_xy - (R_des @ com_b)[:2], height)
        else:
            pel = np.append(pelvis_xy, height)
        loaded = self._loaded_feet() if self.mode is Mode.WALK else list(SIDES)
        pivot = sum(self._hip[s] for s in loaded) / len(loaded)
        pel = pel + R_des @ pivot - R_cmd @ pivot

        targets: dict[str, tuple[Vec, Vec]] = {}
        weights: dict[str, Vec] = {}
        points: dict[str, Vec] = {}
        for s in SIDES:
            foot = self._foot_now(s)
            Rf = foot.rot()
            p_cmd, R_rel = R_cmd.T @ (foot.pos - pel), R_cmd.T @ Rf
            w = self._measured_frame_weight(s)
            if w > 0.0:
                p_meas = est.R.T @ (foot.pos - self._predicted_base(est, cfg.swing_lead))
                p_cmd = (1.0 - w) * p_cmd + w * p_meas
                R_rel = _rot_blend(R_rel, est.R.T @ Rf, w)
            reach = self._max_reach
            if self._in_swing(s) or (s == self.stance and w > 0.0):
                # a foot that meets the ground early lifts the measured pelvis, which puts a world-fixed target
                # further below it: the landing leg straightens and launches the robot (measured: knee 0.37 ->
                # 0.0 rad, pelvis +13 mm). The landing leg may not reach beyond its standing length.
                reach = min(reach, self._stance_reach(height) + cfg.landing_reach_margin)
            targets[s] = (self._clamp_reach(s, p_cmd, reach), R_rel)
            if self._in_swing(s):
                weights[s] = self._swing_weights
                points[s] = self._swing_point[s]
        sol = kin.solve_legs(targets, weights, iterations=cfg.ik_iterations, points=points)
        q_des = joints.DEFAULT_POS.copy()
        for s in SIDES:
            q_des[self._leg[s]] = sol[s]
        self._swing_q = self._swing_lookahead(sol, points, weights, est)
        return q_des

    def _predicted_base(self, est: Estimate, ticks: float) -> Vec:
        """Pelvis position ``ticks`` control periods ahead, moving with the COM: the swing leg's targets hold for a
        whole period while the body keeps going, and a foot placed from where the pelvis *was* lands where the
        body carries it (measured: 2-4 cm outward and ahead at 0.3 m/s of sway)."""
        p = est.base.copy()
        p[:2] += est.comv[:2] * ticks * self.cfg.control_dt
        return p

    def _clamp_reach(self, side: str, p: Vec, reach: float | None = None) -> Vec:
        """Pull a sole target back inside the leg's reach, so the IK never straightens the knee into a stomp."""
        r = self._max_reach if reach is None else reach
        v = p - self._hip[side]
        n = float(np.linalg.norm(v))
        return self._hip[side] + v * (r / n) if n > r else p

    def _stance_reach(self, height: float) -> float:
        """Hip-to-sole distance of a vertical leg under a pelvis at ``height`` (soles on the ground)."""
        hip = self._hip["left"]
        return float(math.hypot(height + hip[2], abs(hip[1]) - 0.5 * self.cfg.step_width))

    def _measured_frame_weight(self, side: str) -> float:
        """How much a leg is placed from the *measured* pelvis (1) rather than the commanded one (0).

        A swing foot must land where the planner put it whatever the body's tilt, so it is placed from the
        measured pelvis; a stance leg carries the pelvis to its command. The switch is blended over a few ticks
        after lift-off and over the double support after touchdown, so targets never jump.
        """
        cfg = self.cfg
        if self.mode is not Mode.WALK:
            return 0.0
        if side != self.stance:
            if self.tick <= cfg.ds_ticks:
                return 0.0
            return min(1.0, (self.tick - cfg.ds_ticks) / cfg.swing_blend_ticks)
        if not self._landed or cfg.ds_ticks == 0:
            return 0.0
        return max(0.0, 1.0 - self.tick / cfg.ds_ticks)

    # ------------------------------------------------------------------ swing feed-forward
    def _swing_lookahead(
        self, sol: dict[str, Vec], points: dict[str, Vec], weights: dict[str, Vec], est: Estimate
    ) -> tuple[str, Vec | None, Vec, Vec] | None:
        """Swing-leg angles one tick past the current target, for rate/acceleration feed-forward."""
        if not points:
            self._swing_hist = None
            return None
        side = next(iter(points))
        kin = self.kin
        foot = self._swing_pose(ahead=self.cfg.swing_time_lead + 1)
        p = est.R.T @ (foot.pos - self._predicted_base(est, self.cfg.swing_lead + 1.0))
        R_rel = est.R.T @ foot.rot()
        leg = kin.legs[side]
        saved = kin.ik.qpos[leg.qpos].copy()
        nxt = kin.solve_legs({side: (self._clamp_reach(side, p), R_rel)}, weights, iterations=2, points=points)[side]
        kin.ik.qpos[leg.qpos] = saved
        prev = self._swing_hist[1] if self._swing_hist is not None and self._swing_hist[0] == side else None
        self._swing_hist = (side, sol[side].copy())
        return side, prev, sol[side].copy(), nxt

    def _swing_feedforward(self, tau: Vec) -> None:
        """Replace the swing leg's torque with inverse dynamics of its planned curve plus ``kd * qd_des``."""
        sq = self._swing_q
        if not self.cfg.velocity_ff or sq is None or sq[1] is None:
            return
        side, q_prev, q_now, q_next = sq
        dt = self.cfg.control_dt
        qd = (q_next - q_prev) / (2.0 * dt)
        qdd = (q_next - 2.0 * q_now + q_prev) / (dt * dt)
        idx = self._leg[side]
        tau[idx] = self.kin.leg_inverse_dynamics(side, qd, qdd * self.cfg.swing_inertia) + self._kd0[idx] * qd
