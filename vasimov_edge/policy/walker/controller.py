"""Walker v2 (policy spec ``builtin-v2``): LIPM/DCM walking with step position and timing adaptation, whole-body
inverse kinematics and gravity feed-forward on a rigid-body library (placo on Pinocchio).

One 50 Hz tick:

1. **Estimate** (:mod:`.estimator`): COM, COM velocity and soles in the odometry frame from IMU + encoders.
2. **Command**: the SDK envelope (vx -0.4..0.4, vy +/-0.4, vyaw +/-0.8) is used as given, only rate-limited
   (``WalkerConfig.accel``) so that half of a step change is reached within 0.5 s.
3. **Gait**: stand (both soles, ZMP between them) or walk (steps of ``step_time``; the first ``double_support``
   seconds after a touchdown move the load onto the new sole, then the other foot swings). Walking starts on a
   command or when the measured DCM leaves the support area (a push); it stops after a touchdown with a zero command
   and the DCM back near the soles' middle.
4. **Balance** (:mod:`.dcm`): the swing foot's target is recomputed every tick from the *measured* DCM (step
   position adaptation) and lands sooner when that target is out of reach (step timing adaptation); the ZMP that
   tracks the nominal DCM is clipped into the support soles and turned into a COM command by the exact LIPM update
   (pulled toward the measured COM state, so the stiff joints see a small, feasible correction).
5. **Whole body** (:mod:`.whole_body`): placo's ``KinematicsSolver`` (a QP) puts both soles, the COM and the trunk
   orientation where the gait wants them within the joint limits; the upper body holds the default pose. Gravity is
   fed forward as the joint torques that carry the robot on its support sole(s)
   (``torques_from_acceleration_with_fixed_frame``), blended by the load share in double support.

No ground truth, no scene geometry: the robot walks blind, as its policy does.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from vasimov import joints
from vasimov_edge.policy.interface import PolicyInput, PolicyOutput
from vasimov_edge.policy.walker import dcm
from vasimov_edge.policy.walker.config import WalkerConfig
from vasimov_edge.policy.walker.estimator import Estimate, Estimator
from vasimov_edge.policy.walker.whole_body import WholeBody

Vec = NDArray[np.float64]
SIDES = ("left", "right")
SIGN = {"left": 1.0, "right": -1.0}
OTHER = {"left": "right", "right": "left"}


def _wrap(a: float) -> float:
    return (a + math.pi) % (2.0 * math.pi) - math.pi


@dataclass
class FootPlan:
    pos: Vec  # (3,) odometry frame; z is the sole's height above the ground plane
    yaw: float
    pitch: float = 0.0  # rad the sole is rolled onto its toe line (heel up); ``pos`` is then the flat sole's centre
    ground: float = 0.0  # rad, the ground's pitch under the sole (toe up > 0; ``ground_pitch_follow``)


@dataclass
class Telemetry:
    mode: str = "stand"
    stance: str = "both"
    dcm: Vec = field(default_factory=lambda: np.zeros(2))
    zmp: Vec = field(default_factory=lambda: np.zeros(2))
    steps: int = 0
    compute_s: float = 0.0


class WalkerV2:
    """Model-based walking backend (implements ``PolicyBackend``); see the module docstring."""

    name = "builtin-v2"

    def __init__(self, config: WalkerConfig | None = None) -> None:
        self.cfg = config if config is not None else WalkerConfig()
        cfg = self.cfg
        self.omega = dcm.omega_of(cfg.com_height)
        self.body = WholeBody(cfg)
        self.est = Estimator(self.body.measured, cfg.dt, cfg.vel_filter)
        self.limits = dcm.StepLimits(cfg.max_forward, cfg.max_backward, cfg.min_width, cfg.max_width)
        self.sole = self.body.sole
        self.telemetry = Telemetry()
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        self._init = False
        self.mode = "stand"
        self.stance = "right"  # the anchor sole in stand; the stance sole while walking
        self.t_step = 0.0  # s since the current stance sole landed (walking)
        self.step_period = self.cfg.step_time
        self.prev_stance_pos: Vec | None = None
        self.swing_start: FootPlan | None = None
        self.swing_t0 = 0.0
        self.t_hold = 0.0  # s the first double support was held beyond ``double_support`` (the reference waits)
        self.cmd = np.zeros(3)
        self.cmd_target = np.zeros(3)  # the command inside this walker's envelope (``_shape_command``)
        self.gait_vel = np.zeros(2)  # planar velocity the steps are sized for (heading frame)
        self.heading = 0.0
        self.heading_goal = 0.0  # integrated commanded heading, IMU frame
        self.steps = 0
        self.com_cmd = np.zeros(2)
        self.vel_cmd = np.zeros(2)
        self.feet: dict[str, FootPlan] = {}
        self.est.reset()
        self.body.reset()
        self.telemetry = Telemetry()

    def _take_over(self, inp: PolicyInput) -> None:
        """First active tick: the soles where the encoders put them (flat on the ground), odometry at the left
        sole, the COM command at the measured COM."""
        q = np.asarray(inp.q, dtype=np.float64)
        e0 = self.est.update(inp.quat, q, "left", np.zeros(3), 0.0)
        self.feet = {s: FootPlan(np.array([e0.feet[s][0], e0.feet[s][1], 0.0]), e0.feet_yaw[s]) for s in SIDES}
        self.stance = "left"
        self.est.reset()
        e = self.est.update(inp.quat, q, self.stance, self.feet[self.stance].pos, self.feet[self.stance].yaw)
        self.com_cmd = e.com[:2].copy()
        self.vel_cmd = np.zeros(2)
        self.heading = 0.5 * (self.feet["left"].yaw + self.feet["right"].yaw)
        self.heading_goal = e.base_yaw
        self.body.take_over(q, self.feet, self.com_cmd, self.heading)
        self._init = True

    # ------------------------------------------------------------------ helpers
    def _shape_command(self, raw: Vec) -> None:
        cfg = self.cfg
        lim = np.array(cfg.command_limit)
        target = np.clip(np.nan_to_num(np.asarray(raw, dtype=np.float64)), -lim, lim)
        target[np.abs(target) < cfg.dead_band] = 0.0
        self.cmd_target = target
        step = np.array(cfg.accel) * cfg.dt
        self.cmd = self.cmd + np.clip(target - self.cmd, -step, step)

    def _sole_centre(self, side: str) -> Vec:
        f = self.feet[side]
        return f.pos[:2] + dcm.rot2(f.yaw) @ np.array([self.cfg.zmp_x, 0.0])

    def _clip_stand(self, p: Vec) -> Vec:
        """``p`` inside the box spanned by both soles (heading frame), with the safety margin."""
        cfg = self.cfg
        r = dcm.rot2(self.heading)
        a = r.T @ self._sole_centre("left")
        b = r.T @ self._sole_centre("right")
        rel = r.T @ p
        hl = self.sole.half_length - cfg.zmp_margin
        hw = self.sole.half_width - cfg.zmp_margin_y
        half = np.array([hl, hw])
        lo = np.minimum(a, b) - half
        hi = np.maximum(a, b) + half
        return r @ np.clip(rel, lo, hi)

    def _clip_sole(self, side: str, p: Vec) -> Vec:
        cfg = self.cfg
        f = self.feet[side]
        return dcm.clip_to_sole(p, self._sole_centre(side), f.yaw, self.sole.half_length - cfg.zmp_margin,
                                self.sole.half_width - cfg.zmp_margin_y)

    def _dcm_outside(self, xi: Vec) -> bool:
        """Standing: is the measured DCM beyond the soles' area by more than ``push_trigger``?"""
        return float(np.linalg.norm(xi - self._clip_stand(xi))) > self.cfg.push_trigger

    def _step_velocity(self) -> Vec:
        """The planar velocity the steps are sized for (heading frame): zero out of stand (the first step only
        moves the load), then following the command by at most ``step_dv`` per touchdown."""
        return self.gait_vel.copy()

    # ------------------------------------------------------------------ gait
    def _start_walk(self, xi: Vec) -> None:
        """Stand -> walk: the first stance is the sole away from the DCM's lateral drift (or the command's)."""
        r = dcm.rot2(self.heading)
        mid = 0.5 * (self._sole_centre("left") + self._sole_centre("right"))
        lateral = float((r.T @ (xi - mid))[1])
        if abs(self.cmd[1]) > 1e-3:
            swing = "left" if self.cmd[1] > 0 else "right"
        elif abs(lateral) > self.cfg.push_trigger * 0.5:
            swing = "left" if lateral > 0 else "right"
        else:
            swing = "right" if self.stance == "left" else "left"
        self.mode = "walk"
        self.gait_vel = np.zeros(2)
        self._switch_anchor(OTHER[swing])
        self.prev_stance_pos = self._sole_centre(swing)
        self.t_step = 0.0
        self.step_period = self.cfg.step_time + self.cfg.start_extra
        self.swing_start = None

    def _switch_anchor(self, side: str) -> None:
        self.stance = side

    def _stop_ok(self, xi: Vec) -> bool:
        if np.any(np.abs(self.cmd) > 1e-3):
            return False
        mid = 0.5 * (self._sole_centre("left") + self._sole_centre("right"))
        r = dcm.rot2(self.heading)
        rel = r.T @ (self.feet["left"].pos[:2] - self.feet["right"].pos[:2])
        parallel = abs(_wrap(self.feet["left"].yaw - self.feet["right"].yaw)) < 0.1
        nominal = abs(rel[0]) < 0.05 and abs(rel[1] - self.cfg.step_width) < 0.06
        return parallel and nominal and float(np.linalg.norm(xi - mid)) < self.cfg.stop_dcm

    def _touchdown(self, swing: str, est: Estimate) -> None:
        """The swing sole is down where planned: it becomes the stance (and odometry anchor)."""
        old = self.stance
        self.prev_stance_pos = self._sole_centre(old)
        self.feet[swing].pos[2] = self._ground_z(self.feet[swing].pos[:2], old)
        # the estimate measured the new sole at est.feet[swing]; the odometry now anchors on its plan instead
        self.est.rebase()
        self.com_cmd = self.com_cmd + (self.feet[swing].pos[:2] - est.feet[swing][:2])
        self.stance = swing
        self.t_step = 0.0
        self.step_period = self.cfg.step_time
        self.swing_start = None
        self.t_hold = 0.0
        self.steps += 1
        # the steps' velocity follows the command by at most ``step_dv`` per step: a step sized for a velocity the
        # body does not have yet asks the ZMP for more than the sole can give
        dv = self.cfg.step_dv
        self.gait_vel = self.gait_vel + np.clip(self.cmd[:2] - self.gait_vel, -dv, dv)

    def _walk_tick(self, est: Estimate, xi: Vec) -> tuple[Vec, str | None]:
        """Advance the walk one tick; returns the commanded ZMP and the swinging side (None in double support)."""
        cfg = self.cfg
        st = self.stance
        sw = OTHER[st]
        self.t_step += cfg.dt
        ds = cfg.double_support + (cfg.start_extra if self.steps == 0 and self.step_period > cfg.step_time else 0.0)
        omega = self.omega
        period = cfg.step_time
        v = self._step_velocity()
        r_head = dcm.rot2(self.heading)
        p_ref = self._sole_centre(st)
        # the nominal DCM at this time of the step: it left the previous touchdown with the nominal offset
        d0 = dcm.nominal_offset(v, cfg.step_width, SIGN[st], omega, period)
        first_hold = self.steps == 0 and self.swing_start is None
        tau = 0.0 if first_hold else min(self.t_step - self.t_hold, period)
        xi_ref = p_ref + r_head @ d0 * math.exp(omega * tau)
        gain = cfg.start_dcm_gain if self.steps == 0 and self.swing_start is None else cfg.dcm_gain
        p = dcm.zmp_command(p_ref, xi, xi_ref, gain, omega)
        if self.swing_start is None:
            # double support: the ZMP anywhere between the soles; the first step out of stand waits (up to
            # ``start_max``) for the DCM to reach its nominal place beside the stance sole
            first = self.steps == 0
            settled = float(np.linalg.norm(xi - xi_ref)) < cfg.start_tolerance
            if self.t_step < ds or (first and not settled and self.t_step < cfg.start_max):
                if first:
                    self.step_period = self.t_step + cfg.step_time - cfg.double_support
                return self._clip_stand(p), None
        p = self._clip_sole(st, p)
        p = self._heel_off(st, p)
        # single support: adapt the foothold (position and timing) from the measured DCM
        if self.swing_start is None:
            f = self.feet[sw]
            self.swing_start = FootPlan(f.pos.copy(), f.yaw)
            self.swing_t0 = self.t_step
            self.t_hold = self.t_step - cfg.double_support if self.steps == 0 else 0.0
        remaining = self.step_period - self.t_step
        # heading: the command's turn per step plus a share of the gap between the integrated command heading and
        # the IMU's (soles that slipped in yaw are corrected over the next steps, not by the hips)
        correction = cfg.heading_gain * _wrap(self.heading_goal - est.base_yaw)
        turn = self.cmd[2] * period + correction
        yaw_next = self.heading + float(np.clip(turn, -cfg.max_turn, cfg.max_turn))
        # turning: the foot on the inside of the turn turns less, so the feet never toe in past ``max_turn``
        head_next = 0.5 * (self.heading + yaw_next)
        offset = dcm.nominal_offset(v, cfg.step_width, SIGN[sw], omega, period)
        fh = dcm.adapt_step(xi, p_ref, self.feet[st].pos[:2], head_next, offset, SIGN[sw],
                            remaining, min(remaining, cfg.min_swing_remaining), omega, self.limits)
        if fh.remaining < remaining - 1e-9:
            self.step_period = self.t_step + fh.remaining
            remaining = fh.remaining
        self._move_swing(sw, fh.pos, yaw_next, remaining)
        if remaining <= cfg.dt * 0.5:
            self.heading = _wrap(yaw_next)
            self._touchdown(sw, est)
            if self._stop_ok(xi):
                self.mode = "stand"
        return p, (None if self.mode == "stand" else sw)

    def _heel_off(self, st: str, p: Vec) -> Vec:
        """Single support: roll the stance sole onto its toe line once the COM command is ``heel_off_start`` ahead of
        it (its ankle would otherwise sit on the dorsiflexion stop and the sole tip over its toe unplanned), and put
        the commanded ZMP ``p`` on that line: a sole on its toe supports nothing behind it."""
        cfg = self.cfg
        f = self.feet[st]
        if cfg.heel_off_gain <= 0.0 or not self._rolling():
            f.pitch = 0.0
            return p
        r = dcm.rot2(f.yaw)
        f.pitch = self._roll_for(f.pos[:2], f.yaw)
        if f.pitch <= 0.0:
            return p
        toe = f.pos[:2] + r @ np.array([self.sole.half_length - cfg.zmp_margin, 0.0])
        rel = r.T @ (p - toe)
        rel[0] = 0.0  # along the sole: onto the toe line; across it: where the DCM law put it
        return toe + r @ rel

    def _rolling(self) -> bool:
        """Do the soles roll onto their toes: walking forward (heel-off), or backward with toe landing."""
        return self.gait_vel[0] >= self.cfg.heel_off_min_speed or self._landing_on_toe()

    def _landing_on_toe(self) -> bool:
        """Walking backward with ``toe_landing``: the swing sole comes down on its toe line."""
        return self.cfg.toe_landing and self.gait_vel[0] <= -self.cfg.heel_off_min_speed

    def _roll_for(self, sole_xy: Vec, yaw: float) -> float:
        """The heel-off roll (rad) of a stance sole at ``sole_xy``, ``yaw``: by how far the COM command is ahead."""
        cfg = self.cfg
        ahead = float((dcm.rot2(yaw).T @ (self.com_cmd - sole_xy))[0])
        return float(np.clip(cfg.heel_off_gain * (ahead - cfg.heel_off_start), 0.0, cfg.heel_off_max))

    def _move_swing(self, side: str, target: Vec, yaw: float, remaining: float) -> None:
        """Swing foot one tick along its path: lift, travel (retargeted every tick), set down."""
        cfg = self.cfg
        f = self.feet[side]
        total = max(self.step_period - self.swing_t0, cfg.dt)
        phase = min(1.0, (self.t_step - self.swing_t0) / total)
        if phase >= cfg.lift_phase:
            k = min(1.0, cfg.dt / max(remaining - cfg.land_phase * total, cfg.dt))
            f.pos[:2] = f.pos[:2] + k * (target - f.pos[:2])
            f.yaw = f.yaw + k * _wrap(yaw - f.yaw)
        # a sole that left the ground rolled onto its toe comes back flat over the first half of its swing
        f.pitch = f.pitch * max(0.0, 1.0 - phase / 0.5) if f.pitch > 0.0 else 0.0
        if phase > 0.5 and self._landing_on_toe():
            # walking backward the new sole lands behind the body: on its toe, rolled as heel-off would roll it there,
            # fully by the time it starts setting down
            f.pitch = self._roll_for(target, yaw) * min(1.0, (phase - 0.5) / max(0.5 - cfg.land_phase, 1e-9))
        # raised cosine: zero vertical speed at lift-off and touchdown (a sine landed at 0.4 m/s and the sole bounced)
        f.pos[2] = cfg.swing_height * 0.5 * (1.0 - math.cos(2.0 * math.pi * phase))
        if phase > 0.5:  # ``land_depth``: the target ends that far below the floor, so the lagging sole lands on time
            f.pos[2] -= cfg.land_depth * (phase - 0.5) / 0.5
        if cfg.ground_height_follow and self.swing_start is not None:  # above the line from lift-off to the foothold
            z0, z1 = float(self.swing_start.pos[2]), self._ground_z(target, self.stance)
            f.pos[2] += z0 + (z1 - z0) * min(1.0, phase / max(1.0 - cfg.land_phase, 1e-9))
        f.ground = self.feet[self.stance].ground  # it lands at the stance sole's ground pitch

    def _ground_z(self, xy: Vec, stance: str) -> float:
        """Height of the ground expected at ``xy`` (``ground_height_follow``): the ``stance`` sole's height continued
        along its followed ground pitch in its heading; 0 (one level floor) otherwise."""
        if not self.cfg.ground_height_follow:
            return 0.0
        f = self.feet[stance]
        ahead = float((dcm.rot2(f.yaw).T @ (np.asarray(xy[:2]) - f.pos[:2]))[0])
        return float(f.pos[2]) + math.tan(f.ground) * ahead

    def _follow_ground(self, est: Estimate) -> None:
        """Move the ground pitch of each sole resting flat toward its measured pitch (``ground_pitch_follow``): both
        standing; walking, the stance sole in single support, when it carries the whole weight (in double support the
        new sole is still rocking from heel to toe after its touchdown, and the trailing one lifts its heel).
        Traced on the 10 deg ramp down, following the new sole in double support: a heel-first landing past the
        crest read as 15 deg uphill."""
        cfg = self.cfg
        if cfg.ground_pitch_follow <= 0.0 or (self.mode == "walk" and self.swing_start is None):
            return
        sides = SIDES if self.mode == "stand" else (self.stance,)
        for s in sides:
            f = self.feet[s]
            if f.pitch == 0.0:  # not rolled by plan
                measured = est.feet_pitch[s] if abs(est.feet_pitch[s]) > cfg.ground_pitch_deadband else 0.0
                f.ground = float(np.clip(f.ground + cfg.ground_pitch_follow * (measured - f.ground),
                                         -cfg.max_ground_pitch, cfg.max_ground_pitch))

    def _ground_height(self) -> float:
        """The soles' mean ground height (a swinging sole counts where it lifted off), for the COM height."""
        if not self.cfg.ground_height_follow:
            return 0.0
        swinging = self.mode == "walk" and self.swing_start is not None
        z = [float(self.swing_start.pos[2]) if (swinging and s != self.stance) else float(self.feet[s].pos[2])
             for s in SIDES]
        return 0.5 * (z[0] + z[1])

    # ------------------------------------------------------------------ tick
    def step(self, inp: PolicyInput) -> PolicyOutput:
        t0 = time.perf_counter()
        if not inp.active:
            self.reset()
            q_hold = np.asarray(inp.q, dtype=np.float64)
            if q_hold.shape != (joints.NUM_JOINTS,) or not np.all(np.isfinite(q_hold)):
                q_hold = joints.DEFAULT_POS
            out = self.body.output(q_hold.copy(), np.zeros(joints.NUM_JOINTS), None)
            self.telemetry.compute_s = time.perf_counter() - t0
            return out
        if not self._init:
            self._take_over(inp)
        cfg = self.cfg
        q = np.asarray(inp.q, dtype=np.float64)
        anchor = self.feet[self.stance]
        gyro = np.asarray(inp.gyro, dtype=np.float64)
        est = self.est.update(inp.quat, q, self.stance, anchor.pos, anchor.yaw, gyro,
                              np.asarray(inp.qd, dtype=np.float64))
        self._follow_ground(est)
        xi = dcm.dcm_of(est.com[:2], est.com_vel, self.omega)
        self._shape_command(inp.command)
        self.heading_goal = _wrap(self.heading_goal + self.cmd[2] * cfg.dt)
        swing: str | None = None
        if self.mode == "stand" and (np.any(np.abs(self.cmd) > 1e-3) or self._dcm_outside(xi)):
            self._start_walk(xi)
        if self.mode == "walk":
            zmp, swing = self._walk_tick(est, xi)
        else:
            mid = 0.5 * (self._sole_centre("left") + self._sole_centre("right"))
            zmp = self._clip_stand(dcm.zmp_command(mid, xi, mid, cfg.dcm_gain, self.omega))
        # COM command: the LIPM driven by the commanded ZMP, from a state pulled toward the measured one
        self.com_cmd = self.com_cmd + cfg.com_pull * (est.com[:2] - self.com_cmd)
        self.vel_cmd = self.vel_cmd + cfg.com_pull * (est.com_vel - self.vel_cmd)
        self.com_cmd, self.vel_cmd = dcm.lipm_step(self.com_cmd, self.vel_cmd, zmp, self.omega, cfg.dt)
        support = self._support_weights(zmp, swing)
        com_acc = self.omega ** 2 * (self.com_cmd - zmp)
        q_des, tau = self.body.solve(self.feet, self.com_cmd, self.heading, support, zmp, com_acc,
                                     self._ground_height())
        tel = self.telemetry
        tel.mode, tel.stance = self.mode, (self.stance if swing is not None else "both")
        tel.dcm, tel.zmp, tel.steps = xi, zmp, self.steps
        out = self.body.output(q_des, tau, swing)
        out.command_used = self.cmd_target.copy()
        tel.compute_s = time.perf_counter() - t0
        return out

    def _support_weights(self, zmp: Vec, swing: str | None) -> dict[str, float]:
        """Share of the weight on each sole: all on the stance sole in single support, else by where the ZMP lies
        between the soles."""
        if swing is not None:
            return {OTHER[swing]: 1.0, swing: 0.0}
        a, b = self._sole_centre("left"), self._sole_centre("right")
        axis = a - b
        w = float(np.clip((zmp - b) @ axis / max(float(axis @ axis), 1e-9), 0.0, 1.0))
        return {"left": w, "right": 1.0 - w}
