"""Gait timing of the built-in walker: the stand/walk state machine, the footprints, the ZMP plan and the swing.

Why a module of its own: this is the one place that knows *when* -- which foot stands, how far into the step the
tick is, when a foot lifts, lands and is measured, when walking starts and stops -- and turns it into the two things
the rest consumes: the ZMP reference horizon for the preview and the swing foot's path. Where feet go is asked of
``footsteps.py``, whether to step after a push of ``recovery.py``, what was learned from landings of
``adaptation.py``.

Odometry: the stance sole is assumed fixed on flat ground; each new foothold is measured at the end of its double
support, when it rests flat (at touchdown it may still be rolling onto its sole).
"""

from __future__ import annotations

import enum
import math

import numpy as np
from numpy.typing import NDArray

from vasimov_edge.policy.builtin.adaptation import LandingOffsets, StrideCorrection
from vasimov_edge.policy.builtin.command_shaping import CommandShaper
from vasimov_edge.policy.builtin.config import ControllerConfig
from vasimov_edge.policy.builtin.estimation import Estimate
from vasimov_edge.policy.builtin.footsteps import OTHER, FootPose, FootstepPlanner, wrap
from vasimov_edge.policy.builtin.kinematics import SIDES
from vasimov_edge.policy.builtin.preview import PreviewController
from vasimov_edge.policy.builtin.recovery import PushRecovery

Vec = NDArray[np.float64]


class Mode(enum.Enum):
    STAND = "stand"
    WALK = "walk"


def min_jerk(u: float) -> float:
    """0 -> 1 with zero rate and acceleration at both ends; ``u`` is clipped to [0, 1]."""
    u = min(max(u, 0.0), 1.0)
    return u * u * u * (10.0 + u * (-15.0 + 6.0 * u))


def sole_yaw(R: Vec) -> float:
    """Heading of a foot from its rotation matrix."""
    return float(math.atan2(R[1, 0], R[0, 0]))


def footprint(est: Estimate, side: str) -> FootPose:
    """Where the sole of ``side`` rests now, from the estimate (odometry frame, on the ground at z = 0)."""
    p = est.base + est.sole[side][0]
    p[2] = 0.0
    return FootPose(p, sole_yaw(est.sole[side][1]))


class Gait:
    """The stand/walk state machine; ``tick`` counts ticks into the current step (after this tick's increment: the
    tick the targets are for)."""

    def __init__(self, cfg: ControllerConfig, planner: FootstepPlanner, command: CommandShaper,
                 recovery: PushRecovery, landing: LandingOffsets, stride: StrideCorrection,
                 preview: PreviewController, omega: float) -> None:
        self.cfg = cfg
        self.planner = planner
        self.command = command
        self.recovery = recovery
        self.landing = landing
        self.stride = stride
        self.preview = preview  # the COM plan: the horizon feeds it, a new walk starts from its ZMP
        self.omega = omega
        self.reset()

    def reset(self) -> None:
        """Forget the gait: standing, no footprints (the next active tick anchors them on the measured soles)."""
        cfg = self.cfg
        self.mode = Mode.STAND
        self.feet: dict[str, FootPose] = {}
        self.stance = "left"
        self.tick = 0
        self.step_ticks_now = cfg.step_ticks
        self.ds_now = cfg.ds_ticks
        self.zmp_from = np.zeros(2)
        self.swing_from: FootPose | None = None
        self.swing_target: FootPose | None = None
        self.nominal_target: FootPose | None = None
        self.zero_steps = 0
        self.final_step = False
        self.steps = 0
        self.stand_from = np.zeros(2)
        self.stand_ticks = 10**6
        self.preview_reset = True  # restart the COM plan from the estimated COM state at the next standing tick
        self.ground_slope = 0.0  # rad, uphill ahead > 0: the ground under the stance sole (set by the controller)

    def anchor(self, sole: dict[str, tuple[Vec, Vec]]) -> None:
        """Anchor the odometry: the footprints are the measured soles (pelvis origin at the odometry origin)."""
        for s in SIDES:
            p, Rs = sole[s]
            pos = p.copy()
            pos[2] = 0.0
            self.feet[s] = FootPose(pos, sole_yaw(Rs))
        self.preview_reset = True

    # ------------------------------------------------------------------ queries
    def walking_wanted(self) -> bool:
        return self.command.nonzero or self.cfg.step_in_place or self.recovery.recovering

    def anchor_weights(self) -> dict[str, float]:
        """Which planted soles anchor the odometry: both standing; while walking the stance foot, except in the
        double support after a touchdown, where the old stance foot is the one known to be still."""
        if self.mode is Mode.WALK:
            if self.tick < self.ds_now and self.steps > 0:
                return {OTHER[self.stance]: 1.0}
            return {self.stance: 1.0}
        return {"left": 0.5, "right": 0.5}

    def in_single_support(self) -> bool:
        return self.mode is Mode.WALK and self.tick > self.ds_now

    def in_swing(self, side: str) -> bool:
        return self.mode is Mode.WALK and side != self.stance and self.tick > self.ds_now

    def single_support_phase(self) -> float:
        """0 -> 1 through the current single support."""
        return (self.tick - self.ds_now) / (self.step_ticks_now - self.ds_now)

    # ------------------------------------------------------------------ state machine
    def stand_tick(self, est: Estimate) -> None:
        """Standing: restart the COM plan when asked, and start walking when commanded or pushed off the soles."""
        cfg = self.cfg
        planner = self.planner
        if self.preview_reset:
            self.preview.reset(est.com[:2], est.comv[:2])
            self.stand_from = planner.stand_point(self.feet)
            self.stand_ticks = 10**6
            self.preview_reset = False
        recover = self.recovery.triggered(self.walking_wanted(), self.feet, est.dcm)
        if not (self.walking_wanted() or recover):
            return
        cmd = self.command.cmd
        if recover:
            # a push moved the capture point off the soles: step after it (stepping in place, the footholds drawn
            # toward the measured capture point by recovery_step_gain), the first foot on the side it left toward
            swing = self.recovery.start(self.feet, est.dcm, planner.stand_point(self.feet))
        elif abs(cmd[1]) > 1e-3:
            swing = "left" if cmd[1] > 0.0 else "right"
        elif abs(cmd[2]) > 1e-3:
            swing = "left" if cmd[2] > 0.0 else "right"
        else:
            swing = "right"
        self.mode = Mode.WALK
        self.stance = OTHER[swing]
        self.tick = 0
        # the first step's double support is the weight shift (short when a push is to be caught)
        self.ds_now = round(cfg.recovery_prelude_time / cfg.control_dt) if recover else cfg.prelude_ticks
        self.step_ticks_now = self.ds_now + (self.recovery.step_ticks()[1] if recover else cfg.ss_ticks)
        self.zmp_from = self.preview.zmp().copy()
        self.swing_from = self.feet[swing].copy()
        self.zero_steps = 0
        self.final_step = False
        self.nominal_target = planner.next_foothold(self.feet[self.stance], self.stance, False, cmd)
        self.swing_target = self.nominal_target.copy()
        # a walk started from a stand is a new gait: the last one's learned landing misses do not carry over. A
        # strafe's per-foot offsets (up to 3 cm outward on one foot) kept into a forward walk started after the stop
        # fell within 3.5 s in every such case (strafe 0.25 m/s, stop, walk +-0.3); from zero the walk learns its own
        self.landing.reset()

    def walk_tick(self, est: Estimate) -> None:
        """Walking: touchdown at the end of a step, the new foothold measured at the end of its double support, the
        stance foot's yaw following the measurement."""
        if self.tick >= self.step_ticks_now:
            self._touchdown(est)
            if self.mode is not Mode.WALK:
                return
        if self.steps > 0 and self.tick == self.ds_now - 1:
            self._measure_new_stance(est)
        if self.tick >= self.ds_now:
            # the stance foot's yaw follows the measurement: if it slipped, the plan turns with it
            self.feet[self.stance].yaw = sole_yaw(est.sole[self.stance][1])
        self.tick += 1

    def _measure_new_stance(self, est: Estimate) -> None:
        """Last double-support tick, still anchored on the old stance foot: measure the new one now that it rests
        flat (at touchdown it may still be rolling onto its sole), and learn how far it landed from its target."""
        foot = footprint(est, self.stance)
        foot.pos[2] = self.feet[self.stance].pos[2]  # the height it was given at touchdown (``_on_ground``)
        self.feet[self.stance] = foot
        self.landing.learn(foot.pos, self.stance, self.feet[OTHER[self.stance]].yaw, self.command.cmd,
                           self.recovery.gait)

    def _touchdown(self, est: Estimate) -> None:
        """The swing foot is down: make it the stance foot and decide whether to keep walking."""
        cfg = self.cfg
        planner = self.planner
        swing = OTHER[self.stance]
        landed = self._on_ground(footprint(est, swing))
        old_stance = self.stance
        self.stride.track(landed.pos, self.feet[old_stance], self.swing_from, self.steps, self.final_step,
                          self.command.cmd, self.command.target)
        self.zmp_from = planner.zmp_point(self.feet[old_stance])
        self.landing.landed_target = None if self.swing_target is None else self.swing_target.pos.copy()
        self.feet[swing] = landed
        self.steps += 1
        self.recovery.touchdown(self.feet, est.dcm, planner.stand_point(self.feet))
        self.zero_steps = 0 if self.walking_wanted() else self.zero_steps + 1
        if self.final_step:
            self.recovery.gait = False
            self.mode = Mode.STAND
            self.stand_from = planner.zmp_point(self.feet[swing])
            self.stand_ticks = 0
            self.stance = swing
            return
        self.final_step = self.zero_steps >= cfg.stop_steps
        self.stance = swing
        self.tick = 0
        self.ds_now = cfg.ds_ticks
        self.step_ticks_now = cfg.step_ticks
        if self.recovery.recovering:
            self.ds_now, ss = self.recovery.step_ticks()
            self.step_ticks_now = self.ds_now + ss
        self.swing_from = self.feet[old_stance].copy()
        nominal = planner.next_foothold(self.feet[swing], swing, self.final_step, self.command.cmd)
        if not self.final_step:
            nominal = planner.turn_toward_heading(nominal, self.feet[swing], self.feet[old_stance],
                                                  self.command.heading)
        self.nominal_target = self._on_ground(planner.constrain(old_stance, self.feet[swing], nominal))
        self.swing_target = self.nominal_target.copy()

    def adjust_step(self, err: Vec) -> None:
        """Blend the capture-point foothold into the nominal one (``dcm_step_gain`` along the walk,
        ``dcm_step_gain_lateral`` across it; the recovery gains while recovering), until ``swing_freeze`` s before
        touchdown. ``err`` is the measured capture point's lead over the planned one."""
        cfg = self.cfg
        if max(cfg.dcm_step_gain, cfg.dcm_step_gain_lateral) <= 0.0 or self.nominal_target is None:
            return
        if self.tick < self.ds_now:
            return
        remaining = (self.step_ticks_now - self.tick) * cfg.control_dt
        if remaining < cfg.swing_freeze:
            return
        ref = self.preview.state
        xi = ref[0] + ref[1] / self.omega
        if self.recovery.recovering:
            xi = xi + err  # the measured capture point: after a push the plan lags the body by far more than usual
        elif cfg.dcm_step_error_share > 0.0:
            xi = xi + cfg.dcm_step_error_share * err
        gain = self.recovery.step_gain()
        if gain is None:
            gain = np.array([cfg.dcm_step_gain, cfg.dcm_step_gain_lateral])
        self.swing_target = self._on_ground(self.planner.capture_foothold(
            self.nominal_target, self.feet[self.stance], OTHER[self.stance], xi, remaining, self.omega,
            self.command.cmd, self.final_step, gain))

    def _on_ground(self, foot: FootPose) -> FootPose:
        """``foot`` at the height the ground is expected at (``ground_height_follow``): the stance sole's height,
        continued along ``ground_slope`` in the stance sole's heading; unchanged (z = 0) otherwise. Heights are
        integrated from the followed ground pitch rather than measured: a sole's measured height moves by a
        centimetre as it rolls onto its toe or heel (traced on the 5 and 10 deg ramps: the measured footholds
        drifted 1-1.5 cm per step), its pitch in double support does not."""
        if self.cfg.ground_height_follow:
            stance = self.feet[self.stance]
            ahead = float(np.dot(foot.pos[:2] - stance.pos[:2], (math.cos(stance.yaw), math.sin(stance.yaw))))
            foot.pos[2] = stance.pos[2] + math.tan(self.ground_slope) * ahead
        return foot

    # ------------------------------------------------------------------ ZMP plan
    def zmp_horizon(self) -> Vec:
        """ZMP references for the preview's next N ticks: the current step, then nominal steps from the command."""
        cfg = self.cfg
        planner = self.planner
        n = self.preview.horizon
        if self.mode is Mode.STAND:
            goal = planner.stand_point(self.feet)
            a = np.minimum(1.0, (self.stand_ticks + np.arange(1, n + 1)) / cfg.ds_ticks)[:, None]
            self.stand_ticks += 1
            return (1.0 - a) * self.stand_from + a * goal
        assert self.swing_target is not None
        # segments: (double-support ticks, total ticks, ZMP from, ZMP to)
        segs: list[tuple[int, int, Vec, Vec]] = [
            (self.ds_now, self.step_ticks_now, self.zmp_from, planner.zmp_point(self.feet[self.stance]))
        ]
        prev_foot, prev_side = self.swing_target, OTHER[self.stance]
        z_prev = segs[0][3]
        if self.final_step:
            # after the last landing the ZMP moves between the feet and stays
            segs.append((cfg.ds_ticks, 10**6, z_prev, planner.final_zmp(self.feet[self.stance], prev_foot)))
        else:
            total = self.step_ticks_now - self.tick
            while total < n + 1:
                z = planner.zmp_point(prev_foot)
                segs.append((cfg.ds_ticks, cfg.step_ticks, z_prev, z))
                total += cfg.step_ticks
                stop = not self.walking_wanted() and self.zero_steps + len(segs) - 1 >= cfg.stop_steps
                prev_foot = planner.next_foothold(prev_foot, prev_side, stop, self.command.cmd)
                prev_side, z_prev = OTHER[prev_side], z
        # every tick of the horizon at once (one Python loop of 2-vector arithmetic per tick was a quarter of the
        # controller's time): the segment each tick falls in, its tick within it, the blend (same operations, so the
        # same numbers)
        ends = np.cumsum([total for _, total, _, _ in segs])
        ticks = self.tick + np.arange(n)
        k = np.searchsorted(ends, ticks, side="right")
        t_in = ticks - (ends[k] - np.array([total for _, total, _, _ in segs])[k])
        ds = np.array([d for d, _, _, _ in segs])[k]
        a = np.where(t_in >= ds, 1.0, (t_in + 1) / np.maximum(ds, 1))[:, None]
        za = np.array([z for _, _, z, _ in segs])[k]
        zb = np.array([z for _, _, _, z in segs])[k]
        return (1.0 - a) * za + a * zb

    # ------------------------------------------------------------------ swing foot
    def swing_pose(self, ahead: float = 0.0) -> FootPose:
        """Swing sole ``ahead`` ticks after this tick's target time: lift, move across, set down (min-jerk pieces),
        aimed against the learned landing offset."""
        cfg = self.cfg
        a0, a1 = self.swing_from, self.swing_target
        assert a0 is not None and a1 is not None
        s = (self.tick + ahead - self.ds_now) / (self.step_ticks_now - self.ds_now)
        s = min(max(s, 0.0), 1.0)
        b = min_jerk((s - cfg.swing_x0) / (cfg.swing_x1 - cfg.swing_x0))
        land = cfg.swing_land_phase
        z = min(min_jerk(s / cfg.swing_rise), min_jerk((land - s) / cfg.swing_fall)) if s < land else 0.0
        end = a1.pos.copy()
        self.landing.shift(end, self.feet[self.stance].yaw, OTHER[self.stance])
        pos = (1.0 - b) * a0.pos + b * end
        pos[2] += self.recovery.swing_height() * z  # above the line between the two footprints' heights
        return FootPose(pos, a0.yaw + b * wrap(a1.yaw - a0.yaw))

    def foot_now(self, side: str) -> FootPose:
        """Where the sole of ``side`` is to be this tick: on the swing path or on its footprint."""
        return self.swing_pose() if self.in_swing(side) else self.feet[side]
