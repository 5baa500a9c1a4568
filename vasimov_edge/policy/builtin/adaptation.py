"""What the built-in walker learns from its own footprints: landing offsets and a stride-length correction.

Why a module of its own: both are slow integrators over whole steps, fed by leg odometry at touchdown, that correct
the open-loop footstep plan for what the PD-tracked legs repeatably do (land a few centimetres long; walk ~10 % short
after the capture-point blend). They hold state across steps, must forget it when the gait changes, and are tuned
separately from the plan itself -- keeping them apart from ``footsteps.py`` keeps the plan a pure function.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from vasimov_edge.policy.builtin.config import ControllerConfig
from vasimov_edge.policy.builtin.footsteps import SIGN, FootPose, rot2
from vasimov_edge.policy.builtin.kinematics import SIDES

Vec = NDArray[np.float64]

LANDING_BIAS_LIMIT = 0.05  # m; the learned landing offset never exceeds this per axis
ASYMMETRIC_VY = 0.1  # m/s of sideways command at which the feet count as stepping differently...
ASYMMETRIC_WZ = 0.2  # ...and rad/s of turn command
PER_FOOT_FADE = 0.3  # per step: how fast a per-foot landing offset fades while walking straight
LANDING_CHANGE_SCALE = np.array([0.05, 0.05, 0.2])  # m/s, m/s, rad/s of command run-down that counts as a new gait
STRIDE_TAPER_SPEED = 0.1  # m/s below the forward limit over which the stride correction fades out


def asymmetry(cmd: Vec) -> float:
    """0 walking straight .. 1 when the command makes the two feet's steps differ (strafing, turning)."""
    return min(1.0, max(abs(cmd[1]) / ASYMMETRIC_VY, abs(cmd[2]) / ASYMMETRIC_WZ))


class StrideCorrection:
    """Speed tracking from leg odometry: an integral correction (m per step) added to the commanded forward stride."""

    def __init__(self, cfg: ControllerConfig) -> None:
        self.cfg = cfg
        self.correction = 0.0  # m per step added to the commanded stride

    def reset(self) -> None:
        self.correction = 0.0

    def limit(self, vx: float) -> float:
        """Largest stride correction (m) at forward speed ``vx``: a fraction of the stride, tapering to nothing at the
        forward limit (the fastest gait already walks its distance, and longer steps there trip it)."""
        cfg = self.cfg
        taper = min(1.0, max(0.0, (cfg.command_limit[0] - vx) / STRIDE_TAPER_SPEED))
        return cfg.stride_adapt_limit * abs(vx) * cfg.step_time * taper

    def track(self, landed: Vec, stance: FootPose, swing_from: FootPose | None, steps: int, final_step: bool,
              cmd: Vec, cmd_target: Vec) -> None:
        """At a touchdown at ``landed``: half the landed foot's advance since its last footprint (``swing_from``) is
        the body's advance this step; the correction lengthens the next strides by what the walk falls short."""
        cfg = self.cfg
        vx = cmd[0]
        if cfg.stride_adapt <= 0.0 or vx < cfg.command_deadband[0]:  # forward only (backward walks its distance)
            self.correction = 0.0
            return
        if swing_from is None or steps < 2 or final_step:
            return
        if abs(cmd_target[0] - vx) > 1e-6:  # learn at a steady command only: slowing down, the body's
            return  # momentum lengthens the steps, and a shorter stride then would trip it
        straight = 1.0 - asymmetry(cmd)
        adv = 0.5 * float((rot2(stance.yaw).T @ (landed[:2] - swing_from.pos[:2]))[0])
        lim = self.limit(vx)
        corr = self.correction + cfg.stride_adapt * straight * (vx * cfg.step_time - adv)
        self.correction = float(np.clip(corr, 0.0, lim))  # lengthen only: never shorten a step below the plan


class LandingOffsets:
    """Learned landing offsets, (forward, outward): one shared by both feet plus one per foot (strafing and turning
    make the two feet's steps, and so their misses, different). The swing target is moved against them."""

    def __init__(self, cfg: ControllerConfig) -> None:
        self.cfg = cfg
        self.reset()

    def reset(self) -> None:
        self.bias = {k: np.zeros(2) for k in ("shared", *SIDES)}
        self.landed_target: Vec | None = None  # where the foot now landing was sent (None: nothing to learn)
        self.cmd_at_landing = np.zeros(3)

    def shift(self, end: Vec, stance_yaw: float, swing: str) -> None:
        """Move a swing target ``end`` (in place) against the learned miss of the ``swing`` foot."""
        if self.cfg.landing_adapt > 0.0:
            bias = self.bias["shared"] + self.bias[swing]
            end[:2] -= rot2(stance_yaw) @ (bias * np.array([1.0, SIGN[swing]]))

    def learn(self, landed: Vec, side: str, other_yaw: float, cmd: Vec, recovery_gait: bool) -> None:
        """The foot ``side`` rests flat at ``landed``: learn how far it landed from its target (in the frame of the
        other foot, yaw ``other_yaw``), forgetting part of the old misses where the command ran down since."""
        cfg = self.cfg
        if self.landed_target is not None and cfg.landing_adapt > 0.0 and not recovery_gait:
            rot = rot2(other_yaw)
            e = rot.T @ (landed[:2] - self.landed_target[:2])
            e[1] *= SIGN[side]  # (forward, outward)
            shared = self.bias["shared"]
            # the misses depend on the gait: where the command ran down since the last landing, forget part of them
            # (a part fading or reversing ends the gait the offsets were learned on; a part building up does not)
            prev, now = self.cmd_at_landing, cmd
            ended = np.where(prev * now >= 0.0, np.maximum(np.abs(prev) - np.abs(now), 0.0), np.abs(prev - now))
            change = float(np.max(ended / LANDING_CHANGE_SCALE))
            keep = 1.0 - cfg.landing_change_fade * min(1.0, change)
            shared *= keep
            shared[:] = np.clip(shared + cfg.landing_adapt * e, -LANDING_BIAS_LIMIT, LANDING_BIAS_LIMIT)
            # the per-foot part learns only while the feet step differently (strafing, turning) and fades otherwise:
            # walking straight, two per-foot integrators on top of the shared one rock into long/short step pairs
            asym = asymmetry(cmd)
            own = self.bias[side]
            own *= (1.0 - PER_FOOT_FADE * (1.0 - asym)) * (keep if cfg.landing_change_fade_per_foot else 1.0)
            own[:] = np.clip(own + cfg.landing_adapt_per_foot * asym * e, -LANDING_BIAS_LIMIT, LANDING_BIAS_LIMIT)
        self.landed_target = None
        self.cmd_at_landing = cmd.copy()

