"""The built-in model-based walker: balance and walking from IMU + encoders + command, no learned weights.

Why this shape. Asimov 1's feet are 4-5.6 cm wide with +/-0.1 rad of ankle roll and only 0.05 rad of ankle
dorsiflexion left at the stand pose, and the policy interface gives no force sensing. Each foot touches the floor
with four small spheres; as long as all four carry load the sole resists ~17 N*m of yaw, but once the pressure
sits on the two toe or two heel spheres that drops to ~5 N*m and on one sphere to nothing, and the foot spins
(``contact_yaw`` measurements in the report). So the one rule everything here serves: **keep the stance sole flat
and the centre of pressure inside it.**

* **Stiff position control of a planned COM path** (the first probe's method, which walked): a ZMP-preview
  controller turns the footstep plan into a COM path whose ZMP stays on the sole; whole-body IK puts the pelvis
  where that COM must be; gravity and the planned ground force are fed forward through the planned ZMP.
* **The plan follows the body** (``ref_pull``): each tick the preview's reference state is pulled a little toward
  the estimated COM state. A pure open-loop plan drifts from the robot by a few centimetres per step (landing
  errors) until it asks for a CoP behind the heel; the pull keeps the planned ZMP reachable.
* **Capture-point feedback** on top (``walk_dcm_gain``/``stand_dcm_gain``): the COM command moves against the
  divergent-component error, so the stiff joints shift the pressure the right way. Standing pushes are rejected
  this way without a step. While walking, a fifth of each foothold comes from the capture-point rule
  (``dcm_step_gain``): a body that lags gets a shorter step instead of a CoP behind the heel. Sideways the share is
  larger (``dcm_step_gain_lateral``): a body drifting toward the swing side otherwise sets the swing foot down early,
  unloads the stance sole and spins it -- how the random command sequences used to fall.
* **Push recovery** (``push_recovery``): standing, a capture point (IMU + leg kinematics) beyond the soles' toe or
  heel line starts stepping at zero command -- a short weight shift, a higher swing, half of each foothold from the
  measured capture point -- until a touchdown leaves it near the stand point. It lifts the survivable 0.15 s front
  push from 80-85 N to 90 N; 150 N still falls (the body pitches over its toes before the first foot is down, and
  the trailing foot, at its dorsiflexion stop, swings heel-up and catches its toe).
* **Commands inside the walked envelope** (``command_limit``, ``command_combined_limit``): larger or strongly
  combined commands are scaled down, so the robot walks slower than asked rather than falling. Changes are slewed
  over a step or more, and one gait runs down before the next builds up (``command_rate``,
  ``command_build_while_slowing``): the plan knows the command, not the body's momentum, and a turn started while
  the body still carries the old walk's momentum is stepped with the pressure on a sole end that holds little yaw.
* **Swing foot**: lifted first, moved, set down (min-jerk pieces), steered through the point below the ankle so the
  foot pitches toe-down only as far as the ankle's dorsiflexion stop forces it, with a swing IK whose pitch has a
  small but real weight (a near-zero weight let the IK jump between solutions at 30 rad/s). A learned landing
  offset removes the repeatable few centimetres the PD-tracked leg lands long (plus one per foot while strafing or
  turning, when the two feet miss differently).
* **Heading**: once per step the next foothold turns by a clipped fraction of the heading error; the hips never
  fight the sole for yaw.

Everything is computed from what the real robot's policy gets (IMU, encoders, command) plus the controller's own
copy of the model (``kinematics.RobotKinematics``). Odometry: the stance sole is assumed fixed on flat ground;
each new foothold is measured at the end of its double support, when it rests flat.
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
from vasimov_edge.policy.builtin.kinematics import SIDES, RobotKinematics, roll_pitch_yaw, yaw_rotation
from vasimov_edge.policy.builtin.preview import GRAVITY, PreviewController, preview_gains
from vasimov_edge.policy.interface import PolicyInput, PolicyOutput

Vec = NDArray[np.float64]

OTHER = {"left": "right", "right": "left"}
SIGN = {"left": 1.0, "right": -1.0}  # lateral side of each foot in the robot frame
COM_ABOVE_PELVIS = 0.017  # m; the stand-pose COM sits this far above the pelvis origin
MAX_COM_SHIFT = 0.05  # m; clamp of the capture-point correction of the COM command
MAX_HEADING_LEAD = 0.3  # rad; the integrated heading command may lead the measured heading by at most this
MAX_LEG_RATE_FF = 5.0  # rad/s; clip of the stance-leg rate feed-forward (finite differences of IK solutions)
LANDING_BIAS_LIMIT = 0.05  # m; the learned landing offset never exceeds this per axis
ASYMMETRIC_VY = 0.1  # m/s of sideways command at which the feet count as stepping differently...
ASYMMETRIC_WZ = 0.2  # ...and rad/s of turn command
PER_FOOT_FADE = 0.3  # per step: how fast a per-foot landing offset fades while walking straight
LANDING_CHANGE_SCALE = np.array([0.05, 0.05, 0.2])  # m/s, m/s, rad/s of command run-down that counts as a new gait
BACKWARD_BLEND_SPEED = 0.1  # m/s of backward command over which the ZMP offset moves to its backward value
STRIDE_TAPER_SPEED = 0.1  # m/s below the forward limit over which the stride correction fades out

_WAIST = "waist_yaw_joint"


class Mode(enum.Enum):
    STAND = "stand"
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


def _rot2(yaw: float) -> Vec:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s], [s, c]])


def _min_jerk(u: float) -> float:
    """0 -> 1 with zero rate and acceleration at both ends; ``u`` is clipped to [0, 1]."""
    u = min(max(u, 0.0), 1.0)
    return u * u * u * (10.0 + u * (-15.0 + 6.0 * u))


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
    com_ref: Vec = field(default_factory=lambda: np.zeros(2))
    zmp_ref: Vec = field(default_factory=lambda: np.zeros(2))
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
        self._leg_mask = np.zeros(joints.NUM_JOINTS, dtype=bool)
        for s in SIDES:
            self._leg_mask[self._leg[s]] = True
        self._shoulder = {s: joints.joint_index(f"{s}_shoulder_pitch_joint") for s in SIDES}
        self._waist = joints.joint_index(_WAIST)
        self._kp0, self._kd0 = self._gain_tables()
        self._hip, self._max_reach = self._leg_reach()
        w = np.ones(6)
        w[4] = cfg.swing_pitch_weight  # rotation about the pelvis y axis: the swing foot may pitch
        self._swing_weights = w
        self._swing_point = {s: np.array([cfg.swing_point_x, 0.0, self.kin.legs[s].sole_offset[2]]) for s in SIDES}
        self._zmp_local = np.array([cfg.zmp_x_offset, 0.0])
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
        self._preview_reset = True
        self._takeover_q = joints.DEFAULT_POS.copy()
        self._takeover_tick = 10**6
        self.mode = Mode.STAND
        self.feet: dict[str, FootPose] = {}
        self.stance = "left"
        self.tick = 0  # ticks into the current step (after this tick's increment: the tick the targets are for)
        self.step_ticks_now = self.cfg.step_ticks
        self.ds_now = self.cfg.ds_ticks
        self.zmp_from = np.zeros(2)
        self.swing_from: FootPose | None = None
        self.swing_target: FootPose | None = None
        self.nominal_target: FootPose | None = None
        self.cmd = np.zeros(3)
        self._cmd_nonzero = False
        self.heading = 0.0
        self.zero_steps = 0
        self.final_step = False
        self.steps = 0
        self._v_est: Vec | None = None
        self._height = self.cfg.stand_pelvis_height
        self._stand_from = np.zeros(2)
        self._stand_ticks = 10**6
        self._q_prev: Vec | None = None
        self._swing_q: tuple[str, Vec, Vec] | None = None
        # learned landing offsets, (forward, outward): one shared by both feet plus one per foot (strafing and turning
        # make the two feet's steps, and so their misses, different)
        self._land_bias = {k: np.zeros(2) for k in ("shared", *SIDES)}

        self._landed_target: Vec | None = None
        self._cmd_target = np.zeros(3)
        self._cmd_at_landing = np.zeros(3)
        self._stride_corr = 0.0  # m per step added to the commanded stride (leg-odometry speed tracking)
        self._recovering = False  # stepping to catch a capture point that left the soles (push recovery)
        self._recovery_gait = False  # the walk in progress began as a recovery (its landings teach nothing)
        self._recovery_steps = 0
        self.kin.ik_set_posture(joints.DEFAULT_POS)
        self.telemetry = Telemetry()

    # ------------------------------------------------------------------ main tick
    def step(self, inp: PolicyInput) -> PolicyOutput:
        """One 50 Hz tick: estimate, gait logic, preview, IK, motor commands."""
        t0 = time.perf_counter()
        if not inp.active:
            # The firmware may use this very output on the tick it enters MOVE (its decision comes after this
            # answer), so it must be safe to apply from whatever pose the robot is in -- mid STAND ramp included:
            # hold the measured pose rather than jump to the stand pose.
            self.reset()
            q_hold = np.asarray(inp.q, dtype=np.float64)
            if q_hold.shape != (joints.NUM_JOINTS,) or not np.all(np.isfinite(q_hold)):
                q_hold = joints.DEFAULT_POS
            out = self._output(q_hold.copy(), np.zeros(joints.NUM_JOINTS), self._kp0, self._kd0)
            self.telemetry.compute_s = time.perf_counter() - t0
            return out
        cfg = self.cfg
        est = self._estimate(inp)
        self._slew_command(np.asarray(inp.command, dtype=np.float64))
        self._update_zmp_local()
        self.heading += self.cmd[2] * cfg.control_dt
        self.heading = est.rpy[2] + float(np.clip(_wrap(self.heading - est.rpy[2]), -MAX_HEADING_LEAD,
                                                  MAX_HEADING_LEAD))

        if self.mode is Mode.STAND:
            self._stand_transitions(est)
        if self.mode is Mode.WALK:
            self._walk_tick(est)

        horizon = self._zmp_horizon()
        if self.mode is Mode.WALK and cfg.ref_pull > 0.0:
            ref = self.preview.state
            ref[0] += cfg.ref_pull * (est.com[:2] - ref[0])
            ref[1] += cfg.ref_pull * (est.comv[:2] - ref[1])
        state = self.preview.step(horizon)
        err = est.dcm - (state[0] + state[1] / self.omega)
        gain = np.array(cfg.walk_dcm_gain if self.mode is Mode.WALK else cfg.stand_dcm_gain)
        com_cmd = state[0] - np.clip(gain * err, -MAX_COM_SHIFT, MAX_COM_SHIFT)
        zmp = self.preview.zmp()
        loads = self._loads(est, zmp, state[2])
        if self.mode is Mode.WALK:
            self._adjust_step(err)

        q_des = self._whole_body_ik(est, com_cmd)
        kp, kd = self._kp0.copy(), self._kd0.copy()
        if self._swing_q is not None:
            idx = self._leg[self._swing_q[0]]
            kp[idx], kd[idx] = cfg.swing_kp, cfg.swing_kd
        tau = self.kin.contact_torques(loads) if cfg.gravity_ff else np.zeros(joints.NUM_JOINTS)
        self._rate_feedforward(q_des, tau, kd)
        self._q_prev = q_des.copy()

        tel = self.telemetry
        tel.mode = self.mode.value
        tel.stance = self.stance if self.mode is Mode.WALK else "both"
        tel.com = est.com
        tel.dcm = est.dcm
        tel.dcm_error = err
        tel.com_ref = state[0].copy()
        tel.zmp_ref = zmp.copy()
        tel.steps = self.steps
        out = self._output(q_des, tau, kp, kd)
        tel.compute_s = time.perf_counter() - t0
        return out

    def _rate_feedforward(self, q_des: Vec, tau: Vec, kd: Vec) -> None:
        """``kd * qd_des`` on the legs (the plant's damping term targets zero rate); the swing leg also gets its own
        gravity and rate-dependent torques along the planned curve, one tick ahead, instead of the support load."""
        cfg = self.cfg
        if not cfg.velocity_ff or self._q_prev is None:
            return
        swing = self._swing_q
        for s in SIDES:
            idx = self._leg[s]
            if swing is not None and swing[0] == s:
                _, q_now, q_next = swing
                qd = (q_next - q_now) / cfg.control_dt
                tau[idx] = self.kin.leg_inverse_dynamics(s, qd, np.zeros(6)) + kd[idx] * qd
            else:
                qd = (q_des[idx] - self._q_prev[idx]) / cfg.control_dt
                tau[idx] += kd[idx] * np.clip(qd, -MAX_LEG_RATE_FF, MAX_LEG_RATE_FF)

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
        base = np.zeros(3)
        comv = np.zeros(3)
        for s, w in self._anchor_weights().items():
            base += w * (self.feet[s].pos - sole[s][0])
            comv += w * kin.com_velocity_rel_sole(s, gyro, qd)
        com = base + com_rel
        comv = self._filter_velocity(comv)
        return Estimate(R=R, rpy=roll_pitch_yaw(R), sole=sole, base=base, com=com, comv=comv,
                        dcm=com[:2] + comv[:2] / self.omega, gyro=gyro)

    def _initialize(self, sole: dict[str, tuple[Vec, Vec]], yaw: float, q: Vec) -> None:
        for s in SIDES:
            p, Rs = sole[s]
            pos = p.copy()
            pos[2] = 0.0
            self.feet[s] = FootPose(pos, float(math.atan2(Rs[1, 0], Rs[0, 0])))
        self._height = -min(sole[s][0][2] for s in SIDES)
        self.heading = yaw
        # legs seeded from the measured pose (the IK warm start); arms, waist and neck are set every tick to what
        # they are commanded to (_whole_body_ik), so the IK model's COM is the body's, not the takeover pose's
        self.kin.ik_set_posture(q)
        self._takeover_q = q.copy()
        self._takeover_tick = 0
        self._initialized = True
        self._preview_reset = True

    def _filter_velocity(self, v_meas: Vec) -> Vec:
        """COM velocity: the planned acceleration's prediction corrected by the kinematic measurement.

        The kinematic rate assumes the anchor sole is still; when it rocks onto a heel or toe the measurement jumps
        for a tick or two, so each tick's correction is limited.
        """
        cfg = self.cfg
        v = v_meas.copy()
        if self._v_est is not None:
            pred = self._v_est.copy()
            pred[:2] += cfg.control_dt * self.preview.state[2]
            innov = np.clip(v_meas - pred, -cfg.velocity_innovation_limit, cfg.velocity_innovation_limit)
            v = pred + cfg.velocity_filter_gain * innov
        self._v_est = v.copy()
        return v

    def _anchor_weights(self) -> dict[str, float]:
        """Which planted soles anchor the odometry: both standing; while walking the stance foot, except in the
        double support after a touchdown, where the old stance foot is the one known to be still."""
        if self.mode is Mode.WALK:
            if self.tick < self.ds_now and self.steps > 0:
                return {OTHER[self.stance]: 1.0}
            return {self.stance: 1.0}
        return {"left": 0.5, "right": 0.5}

    def _slew_command(self, raw: Vec) -> None:
        """The command the gait uses: dead-banded, limited to the envelope the gait was shown to walk (a combined
        command is scaled down as a whole so its parts together stay inside), and slewed -- the slewed command is
        held inside the same combined limit, so changing from one command to another never passes through a
        combination beyond it (fast forward fading while a turn builds up)."""
        cfg = self.cfg
        dead = np.array(cfg.command_deadband)
        target = np.where(np.abs(raw) < dead, 0.0, raw)
        fwd, back, side, turn = cfg.command_limit
        target = self._limit_combined(np.clip(target, [-back, -side, -turn], [fwd, side, turn]))
        rate = np.array(cfg.command_rate) * cfg.control_dt
        # run down first, then build up: while a part still has to fade or reverse (more than
        # command_run_down_margin of its limit left), the parts that grow wait (command_build_while_slowing of their
        # rate). The gait the body is in must end before a new one starts: a turn or strafe started while the body
        # still carries the old momentum loads the sole's toe or heel, where it holds little yaw.
        limits = np.array([fwd if self.cmd[0] >= 0.0 else back, side, turn])
        running_down = np.where(self.cmd * target >= 0.0, np.abs(self.cmd) - np.abs(target), np.abs(self.cmd))
        if float(np.max(running_down / limits)) > cfg.command_run_down_margin:
            growing = (np.abs(target) > np.abs(self.cmd)) & (self.cmd * target >= 0.0)
            rate = np.where(growing, rate * cfg.command_build_while_slowing, rate)
        cmd = self.cmd + np.clip(target - self.cmd, -rate, rate)
        self.cmd = self._limit_combined(cmd) if cfg.limit_slewed_command else cmd
        self._cmd_target = target
        self._cmd_nonzero = bool(np.any(np.abs(target) >= dead))

    def _limit_combined(self, v: Vec) -> Vec:
        """``v`` scaled down as a whole so the sum of its parts (as fractions of their limits) stays allowed."""
        cfg = self.cfg
        fwd, back, side, turn = cfg.command_limit
        parts = np.abs(v) / np.array([fwd if v[0] >= 0.0 else back, side, turn])
        total = float(parts.sum())
        if cfg.command_combined_exponent > 0.0 and total > 0.0:
            dominance = (float(parts.max()) / total) ** cfg.command_combined_exponent
            allowed = cfg.command_combined_limit + (1.0 - cfg.command_combined_limit) * dominance
        else:
            allowed = max(float(parts.max()), cfg.command_combined_limit)  # one part alone may use its whole range
        return v * (allowed / total) if total > allowed else v

    def _walking_wanted(self) -> bool:
        return self._cmd_nonzero or self.cfg.step_in_place or self._recovering

    def _recovery_ticks(self) -> tuple[int, int]:
        """Double- and single-support ticks of a recovery step."""
        cfg = self.cfg
        return (max(1, round(cfg.recovery_double_support_time / cfg.control_dt)),
                max(5, round((cfg.recovery_step_time - cfg.recovery_double_support_time) / cfg.control_dt)))

    def _capture_settled(self, dcm: Vec) -> bool:
        """Whether the capture point is back near the stand point: along the feet within ``recovery_done_margin``
        of it, across them at least that far inside both sole centres."""
        cfg = self.cfg
        left, right = self.feet["left"], self.feet["right"]
        rot = _rot2(right.yaw + 0.5 * _wrap(left.yaw - right.yaw))
        d = rot.T @ (dcm - self._stand_point())
        half_width = 0.5 * abs(float((rot.T @ (left.pos[:2] - right.pos[:2]))[1]))
        m = cfg.recovery_done_margin
        return abs(float(d[0])) <= m and abs(float(d[1])) <= half_width - m

    def _capture_excess(self, dcm: Vec) -> float:
        """How far (m) the capture point ``dcm`` lies beyond the soles' toe or heel line, in the frame between the
        feet (negative: inside, by that much)."""
        left, right = self.feet["left"], self.feet["right"]
        rot = _rot2(right.yaw + 0.5 * _wrap(left.yaw - right.yaw))
        xs = [float((rot.T @ f.pos[:2])[0]) for f in (left, right)]
        half = self.kin.legs["left"].sole_half_length
        x = float((rot.T @ dcm)[0])
        return max(x - (max(xs) + half), (min(xs) - half) - x)

    # ------------------------------------------------------------------ footstep plan and ZMP reference
    def _zmp_point(self, foot: FootPose) -> Vec:
        return foot.pos[:2] + _rot2(foot.yaw) @ self._zmp_local

    def _update_zmp_local(self) -> None:
        """Where on the sole the walking ZMP sits: ahead of the centre walking forward, further back walking backward
        (the pressure must stay off the sole end the body is moving toward)."""
        cfg = self.cfg
        a = min(1.0, max(0.0, -self.cmd[0] / BACKWARD_BLEND_SPEED))
        self._zmp_local[0] = (1.0 - a) * cfg.zmp_x_offset + a * cfg.zmp_x_offset_backward

    def _stand_point(self) -> Vec:
        left, right = self.feet["left"], self.feet["right"]
        mid = 0.5 * (left.pos[:2] + right.pos[:2])
        yaw = right.yaw + 0.5 * _wrap(left.yaw - right.yaw)
        return mid + _rot2(yaw) @ np.array([self.cfg.com_x_offset, 0.0])

    def _width(self) -> float:
        """Step width, widened while strafing so the trailing (closing) step keeps ``min_step_width``."""
        cfg = self.cfg
        return max(cfg.step_width, cfg.min_step_width + abs(self.cmd[1]) * cfg.step_time)

    def _next_foothold(self, prev: FootPose, prev_side: str, stop: bool) -> FootPose:
        """Where the other foot lands after ``prev``: the walking frame (midway between the feet) advanced by the
        command for one step; turning, the foot on the turn side opens by two steps' worth and the other closes."""
        cfg = self.cfg
        side = OTHER[prev_side]
        w = self._width()
        T = cfg.step_time
        vx, vy, wz = (0.0, 0.0, 0.0) if stop else self.cmd
        dyaw = 2.0 * wz * T if wz * SIGN[side] > 0.0 else 0.0
        dyaw = float(np.clip(dyaw, -cfg.max_step_yaw, cfg.max_step_yaw))
        yaw = prev.yaw + dyaw
        centre = prev.pos[:2] - _rot2(prev.yaw) @ np.array([0.0, SIGN[prev_side] * 0.5 * w])
        stride = vx * T
        if not stop and vx * self.cmd[0] > 0.0:
            stride += float(np.clip(self._stride_corr, 0.0, self._stride_limit(vx)))
        adv = np.array([float(np.clip(stride, -cfg.max_step_length, cfg.max_step_length)), vy * T])
        centre = centre + _rot2(prev.yaw + 0.5 * dyaw) @ adv
        pos = centre + _rot2(yaw) @ np.array([0.0, SIGN[side] * 0.5 * w])
        return FootPose(np.append(pos, 0.0), yaw)

    def _constrain(self, side: str, stance: FootPose, target: FootPose) -> FootPose:
        """Keep a foothold reachable and clear of the stance foot (limits in the stance-foot frame)."""
        cfg = self.cfg
        rot = _rot2(stance.yaw)
        rel = rot.T @ (target.pos[:2] - stance.pos[:2])
        rel[0] = float(np.clip(rel[0], -cfg.max_step_length, cfg.max_step_length))
        rel[1] = SIGN[side] * float(np.clip(SIGN[side] * rel[1], cfg.min_step_width, cfg.max_step_width))
        dyaw = float(np.clip(_wrap(target.yaw - stance.yaw), -cfg.max_step_yaw, cfg.max_step_yaw))
        return FootPose(np.append(stance.pos[:2] + rot @ rel, 0.0), stance.yaw + dyaw)

    def _zmp_horizon(self) -> Vec:
        """ZMP references for the preview's next N ticks: the current step, then nominal steps from the command."""
        cfg = self.cfg
        n = self.preview.horizon
        out = np.empty((n, 2))
        if self.mode is Mode.STAND:
            goal = self._stand_point()
            for j in range(n):
                a = min(1.0, (self._stand_ticks + j + 1) / cfg.ds_ticks)
                out[j] = (1.0 - a) * self._stand_from + a * goal
            self._stand_ticks += 1
            return out
        assert self.swing_target is not None
        # segments: (double-support ticks, total ticks, ZMP from, ZMP to)
        segs: list[tuple[int, int, Vec, Vec]] = [
            (self.ds_now, self.step_ticks_now, self.zmp_from, self._zmp_point(self.feet[self.stance]))
        ]
        prev_foot, prev_side = self.swing_target, OTHER[self.stance]
        z_prev = segs[0][3]
        if self.final_step:
            # after the last landing the ZMP moves between the feet and stays
            st = self.feet[self.stance]
            mid = 0.5 * (st.pos[:2] + prev_foot.pos[:2])
            mid = mid + _rot2(st.yaw + 0.5 * _wrap(prev_foot.yaw - st.yaw)) @ np.array([cfg.com_x_offset, 0.0])
            segs.append((cfg.ds_ticks, 10**6, z_prev, mid))
        else:
            total = self.step_ticks_now - self.tick
            while total < n + 1:
                z = self._zmp_point(prev_foot)
                segs.append((cfg.ds_ticks, cfg.step_ticks, z_prev, z))
                total += cfg.step_ticks
                stop = not self._walking_wanted() and self.zero_steps + len(segs) - 1 >= cfg.stop_steps
                prev_foot = self._next_foothold(prev_foot, prev_side, stop)
                prev_side, z_prev = OTHER[prev_side], z
        k, t_in = 0, self.tick
        for j in range(n):
            while t_in >= segs[k][1]:
                t_in -= segs[k][1]
                k += 1
            ds, _, za, zb = segs[k]
            a = 1.0 if t_in >= ds else (t_in + 1) / ds
            out[j] = (1.0 - a) * za + a * zb
            t_in += 1
        return out

    # ------------------------------------------------------------------ gait state machine
    def _stand_transitions(self, est: Estimate) -> None:
        cfg = self.cfg
        if self._preview_reset:
            self.preview.reset(est.com[:2], est.comv[:2])
            self._stand_from = self._stand_point()
            self._stand_ticks = 10**6
            self._preview_reset = False
        recover = (not self._walking_wanted() and cfg.push_recovery
                   and self._capture_excess(est.dcm) > cfg.recovery_margin)
        if not (self._walking_wanted() or recover):
            return
        if recover:
            # a push moved the capture point off the soles: step after it (stepping in place, the footholds drawn
            # toward the measured capture point by recovery_step_gain), the first foot on the side it left toward
            self._recovering = True
            self._recovery_gait = True
            self._recovery_steps = 0
            lateral = float((_rot2(self.feet["right"].yaw).T @ (est.dcm - self._stand_point()))[1])
            swing = "left" if lateral > 0.0 else "right"
        elif abs(self.cmd[1]) > 1e-3:
            swing = "left" if self.cmd[1] > 0.0 else "right"
        elif abs(self.cmd[2]) > 1e-3:
            swing = "left" if self.cmd[2] > 0.0 else "right"
        else:
            swing = "right"
        self.mode = Mode.WALK
        self.stance = OTHER[swing]
        self.tick = 0
        # the first step's double support is the weight shift (short when a push is to be caught)
        self.ds_now = round(cfg.recovery_prelude_time / cfg.control_dt) if recover else cfg.prelude_ticks
        self.step_ticks_now = self.ds_now + (self._recovery_ticks()[1] if recover else cfg.ss_ticks)
        self.zmp_from = self.preview.zmp().copy()
        self.swing_from = self.feet[swing].copy()
        self.zero_steps = 0
        self.final_step = False
        self.nominal_target = self._next_foothold(self.feet[self.stance], self.stance, False)
        self.swing_target = self.nominal_target.copy()
        self._landed_target = None

    def _walk_tick(self, est: Estimate) -> None:
        if self.tick >= self.step_ticks_now:
            self._touchdown(est)
            if self.mode is not Mode.WALK:
                return
        if self.steps > 0 and self.tick == self.ds_now - 1:
            self._measure_new_stance(est)
        if self.tick >= self.ds_now:
            # the stance foot's yaw follows the measurement: if it slipped, the plan turns with it
            Rs = est.sole[self.stance][1]
            self.feet[self.stance].yaw = float(math.atan2(Rs[1, 0], Rs[0, 0]))
        self.tick += 1

    def _measure_new_stance(self, est: Estimate) -> None:
        """Last double-support tick, still anchored on the old stance foot: measure the new one now that it rests
        flat (at touchdown it may still be rolling onto its sole), and learn how far it landed from its target."""
        cfg = self.cfg
        p = est.base + est.sole[self.stance][0]
        p[2] = 0.0
        Rs = est.sole[self.stance][1]
        self.feet[self.stance] = FootPose(p, float(math.atan2(Rs[1, 0], Rs[0, 0])))
        if self._landed_target is not None and cfg.landing_adapt > 0.0 and not self._recovery_gait:
            rot = _rot2(self.feet[OTHER[self.stance]].yaw)
            e = rot.T @ (p[:2] - self._landed_target[:2])
            e[1] *= SIGN[self.stance]  # (forward, outward)
            shared = self._land_bias["shared"]
            # the misses depend on the gait: where the command ran down since the last landing, forget part of them
            # (a part fading or reversing ends the gait the offsets were learned on; a part building up does not)
            prev, now = self._cmd_at_landing, self.cmd
            ended = np.where(prev * now >= 0.0, np.maximum(np.abs(prev) - np.abs(now), 0.0), np.abs(prev - now))
            change = float(np.max(ended / LANDING_CHANGE_SCALE))
            keep = 1.0 - cfg.landing_change_fade * min(1.0, change)
            shared *= keep
            shared[:] = np.clip(shared + cfg.landing_adapt * e, -LANDING_BIAS_LIMIT, LANDING_BIAS_LIMIT)
            # the per-foot part learns only while the feet step differently (strafing, turning) and fades otherwise:
            # walking straight, two per-foot integrators on top of the shared one rock into long/short step pairs
            asym = min(1.0, max(abs(self.cmd[1]) / ASYMMETRIC_VY, abs(self.cmd[2]) / ASYMMETRIC_WZ))
            own = self._land_bias[self.stance]
            own *= (1.0 - PER_FOOT_FADE * (1.0 - asym)) * (keep if cfg.landing_change_fade_per_foot else 1.0)
            own[:] = np.clip(own + cfg.landing_adapt_per_foot * asym * e, -LANDING_BIAS_LIMIT, LANDING_BIAS_LIMIT)
        self._landed_target = None
        self._cmd_at_landing = self.cmd.copy()

    def _touchdown(self, est: Estimate) -> None:
        """The swing foot is down: make it the stance foot and decide whether to keep walking."""
        cfg = self.cfg
        swing = OTHER[self.stance]
        p = est.base + est.sole[swing][0]
        p[2] = 0.0
        Rs = est.sole[swing][1]
        old_stance = self.stance
        self._track_stride(p, old_stance)
        self.zmp_from = self._zmp_point(self.feet[old_stance])
        self._landed_target = None if self.swing_target is None else self.swing_target.pos.copy()
        self.feet[swing] = FootPose(p, float(math.atan2(Rs[1, 0], Rs[0, 0])))
        self.steps += 1
        if self._recovering:
            self._recovery_steps += 1
            inside = self._capture_settled(est.dcm)
            if inside or self._recovery_steps >= cfg.recovery_max_steps:
                self._recovering = False
        self.zero_steps = 0 if self._walking_wanted() else self.zero_steps + 1
        if self.final_step:
            self._recovery_gait = False
            self.mode = Mode.STAND
            self._stand_from = self._zmp_point(self.feet[swing])
            self._stand_ticks = 0
            self.stance = swing
            self._swing_q = None
            return
        self.final_step = self.zero_steps >= cfg.stop_steps
        self.stance = swing
        self.tick = 0
        self.ds_now = cfg.ds_ticks
        self.step_ticks_now = cfg.step_ticks
        if self._recovering:
            self.ds_now, ss = self._recovery_ticks()
            self.step_ticks_now = self.ds_now + ss
        self.swing_from = self.feet[old_stance].copy()
        nominal = self._next_foothold(self.feet[swing], swing, self.final_step)
        if not self.final_step:
            # heading: once per step, turn the next foothold toward the desired heading (about the stance foot). The
            # error is taken against the walking frame (between the feet): turning, the opening foot leads the
            # heading and the closing one trails it by design, and correcting against either splays the feet.
            frame = self.feet[swing].yaw + 0.5 * _wrap(self.feet[old_stance].yaw - self.feet[swing].yaw)
            corr = cfg.heading_gain * _wrap(self.heading - frame)
            corr = float(np.clip(corr, -cfg.max_heading_step, cfg.max_heading_step))
            centre = self.feet[swing].pos[:2]
            pos = centre + _rot2(corr) @ (nominal.pos[:2] - centre)
            nominal = FootPose(np.append(pos, 0.0), nominal.yaw + corr)
        self.nominal_target = self._constrain(old_stance, self.feet[swing], nominal)
        self.swing_target = self.nominal_target.copy()

    def _stride_limit(self, vx: float) -> float:
        """Largest stride correction (m) at forward speed ``vx``: a fraction of the stride, tapering to nothing at the
        forward limit (the fastest gait already walks its distance, and longer steps there trip it)."""
        cfg = self.cfg
        taper = min(1.0, max(0.0, (cfg.command_limit[0] - vx) / STRIDE_TAPER_SPEED))
        return cfg.stride_adapt_limit * abs(vx) * cfg.step_time * taper

    def _track_stride(self, landed: Vec, old_stance: str) -> None:
        """Speed tracking from leg odometry: half the landed foot's advance since its last footprint is the body's
        advance this step; an integral correction lengthens the next strides by what the walk falls short."""
        cfg = self.cfg
        vx = self.cmd[0]
        if cfg.stride_adapt <= 0.0 or vx < cfg.command_deadband[0]:  # forward only (backward walks its distance)
            self._stride_corr = 0.0
            return
        if self.swing_from is None or self.steps < 2 or self.final_step:
            return
        if abs(self._cmd_target[0] - vx) > 1e-6:  # learn at a steady command only: slowing down, the body's
            return  # momentum lengthens the steps, and a shorter stride then would trip it
        straight = 1.0 - min(1.0, max(abs(self.cmd[1]) / ASYMMETRIC_VY, abs(self.cmd[2]) / ASYMMETRIC_WZ))
        adv = 0.5 * float((_rot2(self.feet[old_stance].yaw).T @ (landed[:2] - self.swing_from.pos[:2]))[0])
        lim = self._stride_limit(vx)
        corr = self._stride_corr + cfg.stride_adapt * straight * (vx * cfg.step_time - adv)
        self._stride_corr = float(np.clip(corr, 0.0, lim))  # lengthen only: never shorten a step below the plan

    def _adjust_step(self, err: Vec) -> None:
        """Blend the capture-point foothold into the nominal one (``dcm_step_gain`` along the walk,
        ``dcm_step_gain_lateral`` across it).

        The capture-point foothold puts the next foot where the divergent component of motion, predicted to the
        ZMP transfer after touchdown, sits at the offset a periodic pendulum gait for the command needs.
        """
        cfg = self.cfg
        if max(cfg.dcm_step_gain, cfg.dcm_step_gain_lateral) <= 0.0 or self.nominal_target is None:
            return
        if self.tick < self.ds_now:
            return
        remaining = (self.step_ticks_now - self.tick) * cfg.control_dt
        if remaining < cfg.swing_freeze:
            return
        st = self.feet[self.stance]
        swing = OTHER[self.stance]
        ref = self.preview.state
        xi = ref[0] + ref[1] / self.omega
        if self._recovering:
            xi = xi + err  # the measured capture point: after a push the plan lags the body by far more than usual
        z = self._zmp_point(st)
        xi_td = z + (xi - z) * math.exp(self.omega * (remaining + 0.5 * cfg.double_support_time))
        T = cfg.step_time
        e = math.exp(self.omega * T)
        vx, vy, _ = (0.0, 0.0, 0.0) if self.final_step else self.cmd
        b = np.array([vx * T / (e - 1.0), -SIGN[swing] * self._width() / (1.0 + e) + vy * T / (e - 1.0)])
        r_next = _rot2(self.nominal_target.yaw)
        foot = xi_td - r_next @ b - r_next @ self._zmp_local
        # blended in the next foot's frame: sideways the capture point gets a larger share than along the walk.
        # Lateral placement is the only lateral balance a 4-5 cm wide sole with +/-0.1 rad of ankle roll has; the
        # sagittal share costs distance (a lagging body gets shorter steps); sideways only too large a share costs
        # something (it fights a strafe's own drift: see ``dcm_step_gain_lateral``).
        gain = np.array([cfg.dcm_step_gain, cfg.dcm_step_gain_lateral])
        if self._recovering:
            gain = np.array([cfg.recovery_step_gain, cfg.recovery_step_gain_lateral])
        pos = self.nominal_target.pos[:2] + r_next @ (gain * (r_next.T @ (foot - self.nominal_target.pos[:2])))
        self.swing_target = self._constrain(swing, st, FootPose(np.append(pos, 0.0), self.nominal_target.yaw))

    # ------------------------------------------------------------------ support loads
    def _loads(self, est: Estimate, zmp: Vec, acc: Vec) -> list[tuple[str, Vec, Vec]]:
        """Planned ground force ``m (g + c_ddot)`` through the planned ZMP: on the stance sole in single support,
        split between the soles by the ZMP's position along the line between them otherwise."""
        force = self.kin.total_mass * np.array([acc[0], acc[1], GRAVITY])
        if self.mode is Mode.WALK and self.tick > self.ds_now:
            s = self.stance
            return [(s, self._sole_point(s, zmp) - est.base, force)]
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

    # ------------------------------------------------------------------ swing foot
    def _in_swing(self, side: str) -> bool:
        return self.mode is Mode.WALK and side != self.stance and self.tick > self.ds_now

    def _swing_pose(self, ahead: float = 0.0) -> FootPose:
        """Swing sole ``ahead`` ticks after this tick's target time: lift, move across, set down (min-jerk pieces)."""
        cfg = self.cfg
        a0, a1 = self.swing_from, self.swing_target
        assert a0 is not None and a1 is not None
        s = (self.tick + ahead - self.ds_now) / (self.step_ticks_now - self.ds_now)
        s = min(max(s, 0.0), 1.0)
        b = _min_jerk((s - cfg.swing_x0) / (cfg.swing_x1 - cfg.swing_x0))
        land = cfg.swing_land_phase
        z = min(_min_jerk(s / cfg.swing_rise), _min_jerk((land - s) / cfg.swing_fall)) if s < land else 0.0
        end = a1.pos.copy()
        if cfg.landing_adapt > 0.0:
            sw = OTHER[self.stance]
            bias = self._land_bias["shared"] + self._land_bias[sw]
            end[:2] -= _rot2(self.feet[self.stance].yaw) @ (bias * np.array([1.0, SIGN[sw]]))
        pos = (1.0 - b) * a0.pos + b * end
        pos[2] = self._swing_apex() * z
        return FootPose(pos, a0.yaw + b * _wrap(a1.yaw - a0.yaw))

    def _swing_apex(self) -> float:
        """Swing apex height (m): higher when recovering from a push."""
        return self.cfg.recovery_swing_height if self._recovery_gait else self.cfg.swing_height

    def _foot_now(self, side: str) -> FootPose:
        return self._swing_pose() if self._in_swing(side) else self.feet[side]

    # ------------------------------------------------------------------ whole-body IK
    def _whole_body_ik(self, est: Estimate, com_xy: Vec) -> Vec:
        """Leg angles for the pelvis pose and the feet; arms and waist hold the stand pose.

        The pelvis is put where the COM command needs it, at the nominal height (raised in mid single support),
        upright with the heading between the feet -- rotated against the measured tilt about the loaded hip (the
        hip strategy).
        """
        cfg = self.cfg
        kin = self.kin
        q_des = self._upper_body_posture()
        kin.ik_set_posture(np.where(self._leg_mask, kin.ik.qpos[kin.joint_qpos], q_des))
        goal = cfg.pelvis_height if self.mode is Mode.WALK else cfg.stand_pelvis_height
        step = cfg.height_rate * cfg.control_dt
        self._height = float(np.clip(goal, self._height - step, self._height + step))
        height = self._height
        single = self.mode is Mode.WALK and self.tick > self.ds_now
        hike = 0.0
        if single:
            u = (self.tick - self.ds_now) / (self.step_ticks_now - self.ds_now)
            bump = math.sin(math.pi * u) ** 2
            height += cfg.single_support_rise * bump
            hike = -SIGN[self.stance] * cfg.hip_hike * bump
        feet_now = {s: self._foot_now(s) for s in SIDES}
        yl, yr = feet_now["left"].yaw, feet_now["right"].yaw
        R_des = yaw_rotation(yr + 0.5 * _wrap(yl - yr)) @ _rot_exp(np.array([hike, cfg.torso_pitch, 0.0]))
        roll, pitch, _ = est.rpy
        err = np.array([roll - hike + cfg.attitude_rate_gain * est.gyro[0],
                        pitch - cfg.torso_pitch + cfg.attitude_rate_gain * est.gyro[1], 0.0])
        R_cmd = R_des @ _rot_exp(-np.array([cfg.attitude_gain, cfg.pitch_gain, 0.0]) * err)
        pel = np.append(com_xy - (R_des @ kin.ik_com())[:2], height)
        loaded = [self.stance] if single else list(SIDES)
        pivot = sum(self._hip[s] for s in loaded) / len(loaded)
        pel = pel + R_des @ pivot - R_cmd @ pivot

        targets: dict[str, tuple[Vec, Vec]] = {}
        weights: dict[str, Vec] = {}
        points: dict[str, Vec] = {}
        for s in SIDES:
            foot = feet_now[s]
            targets[s] = (self._clamp_reach(s, R_cmd.T @ (foot.pos - pel)), R_cmd.T @ foot.rot())
            if self._in_swing(s):
                weights[s] = self._swing_weights
                points[s] = self._swing_point[s]
        sol = kin.solve_legs(targets, weights, iterations=cfg.ik_iterations, points=points)
        self._swing_q = None
        for s in points:
            self._swing_q = (s, sol[s].copy(), self._swing_ahead(s, R_cmd, pel, weights, points))
        for s in SIDES:
            q_des[self._leg[s]] = sol[s]
        if self.mode is Mode.WALK and (cfg.arm_swing or cfg.waist_swing):
            # counter-swing: the arms and the torso carry yaw angular momentum against the legs', so the stance sole
            # has less to resist. d > 0 when the left foot is ahead: left arm back, right arm forward (both shoulder
            # pitch angles grow with d in this joint convention), torso turned toward the trailing side.
            d = float((R_des.T @ (feet_now["left"].pos - feet_now["right"].pos))[0])
            for s in SIDES:
                q_des[self._shoulder[s]] += cfg.arm_swing * d
            q_des[self._waist] += cfg.waist_swing * d
        return q_des

    def _upper_body_posture(self) -> Vec:
        """Arms, waist and neck: the stand pose, reached from the pose held at takeover over ``takeover_time``.

        MOVE may begin anywhere in the firmware's STAND ramp (the SDK arms 0.5 s into a 2 s ramp); jumping the arms
        to the stand pose in one tick would throw the body while the legs are still settling.
        """
        q = joints.DEFAULT_POS.copy()
        n = max(1, round(self.cfg.takeover_time / self.cfg.control_dt))
        if self._takeover_tick < n:
            self._takeover_tick += 1
            a = _min_jerk(self._takeover_tick / n)
            q += (1.0 - a) * (self._takeover_q - q)
        return q

    def _swing_ahead(self, side: str, R_cmd: Vec, pel: Vec, weights: dict[str, Vec], points: dict[str, Vec]) -> Vec:
        """Swing-leg angles one tick further along the swing (for the rate feed-forward); the IK state is restored."""
        kin = self.kin
        foot = self._swing_pose(ahead=1.0)
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
        v = p - self._hip[side]
        n = float(np.linalg.norm(v))
        return self._hip[side] + v * (self._max_reach / n) if n > self._max_reach else p
