"""Push recovery for the built-in walker: when standing is no longer enough, step after the capture point.

Why a module of its own: recovery is a separate decision with its own trigger, its own gait variant and its own end
condition, all tuned on pushes. Standing, a capture point (IMU + leg kinematics) beyond the soles' toe or heel line
starts stepping at zero command -- a short weight shift, a higher swing, a larger capture-point share of each
foothold -- until a touchdown leaves it near the stand point again (then the normal stop). It lifts the survivable
0.15 s front push from 80-85 N to 90 N; 150 N still falls (the body pitches over its toes before the first foot is
down, and the trailing foot, at its dorsiflexion stop, swings heel-up and catches its toe). Sideways it never
triggers: the capture point leaves across the feet, where only a crossing step could catch it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from vasimov_edge.policy.builtin.config import ControllerConfig
from vasimov_edge.policy.builtin.footsteps import FootPose, between_yaw, rot2

Vec = NDArray[np.float64]


class PushRecovery:
    """Whether the walker is stepping to catch a push, and the trigger, gait and end rules of that stepping."""

    def __init__(self, cfg: ControllerConfig, sole_half_length: float) -> None:
        self.cfg = cfg
        self.sole_half_length = sole_half_length  # m; the toe and heel lines lie this far from the sole centres
        self.reset()

    def reset(self) -> None:
        self.recovering = False  # stepping to catch a capture point that left the soles
        self.gait = False  # the walk in progress began as a recovery (its landings teach nothing)
        self.steps = 0

    def excess(self, feet: dict[str, FootPose], dcm: Vec) -> float:
        """How far (m) the capture point ``dcm`` lies beyond the soles' toe or heel line, in the frame between the
        feet (negative: inside, by that much)."""
        left, right = feet["left"], feet["right"]
        rot = rot2(between_yaw(left, right))
        xs = [float((rot.T @ f.pos[:2])[0]) for f in (left, right)]
        half = self.sole_half_length
        x = float((rot.T @ dcm)[0])
        return max(x - (max(xs) + half), (min(xs) - half) - x)

    def settled(self, feet: dict[str, FootPose], dcm: Vec, stand_point: Vec) -> bool:
        """Whether the capture point is back near the stand point: along the feet within ``recovery_done_margin``
        of it, across them at least that far inside both sole centres."""
        left, right = feet["left"], feet["right"]
        rot = rot2(between_yaw(left, right))
        d = rot.T @ (dcm - stand_point)
        half_width = 0.5 * abs(float((rot.T @ (left.pos[:2] - right.pos[:2]))[1]))
        m = self.cfg.recovery_done_margin
        return abs(float(d[0])) <= m and abs(float(d[1])) <= half_width - m

    def triggered(self, walking_wanted: bool, feet: dict[str, FootPose], dcm: Vec) -> bool:
        """Standing with no command, the capture point left the soles by more than ``recovery_margin``."""
        cfg = self.cfg
        return not walking_wanted and cfg.push_recovery and self.excess(feet, dcm) > cfg.recovery_margin

    def start(self, feet: dict[str, FootPose], dcm: Vec, stand_point: Vec) -> str:
        """Begin recovery stepping; returns the first swing foot: the side the capture point left toward."""
        self.recovering = True
        self.gait = True
        self.steps = 0
        lateral = float((rot2(feet["right"].yaw).T @ (dcm - stand_point))[1])
        return "left" if lateral > 0.0 else "right"

    def touchdown(self, feet: dict[str, FootPose], dcm: Vec, stand_point: Vec) -> None:
        """A recovery step landed: recovery ends once the capture point settled or after ``recovery_max_steps``."""
        if self.recovering:
            self.steps += 1
            inside = self.settled(feet, dcm, stand_point)
            if inside or self.steps >= self.cfg.recovery_max_steps:
                self.recovering = False

    def step_ticks(self) -> tuple[int, int]:
        """Double- and single-support ticks of a recovery step."""
        cfg = self.cfg
        return (max(1, round(cfg.recovery_double_support_time / cfg.control_dt)),
                max(5, round((cfg.recovery_step_time - cfg.recovery_double_support_time) / cfg.control_dt)))

    def swing_height(self) -> float:
        """Swing apex height (m): higher when recovering from a push."""
        return self.cfg.recovery_swing_height if self.gait else self.cfg.swing_height

    def step_gain(self) -> Vec | None:
        """Capture-point share of the foothold (along, across) while recovering; None otherwise."""
        if not self.recovering:
            return None
        return np.array([self.cfg.recovery_step_gain, self.cfg.recovery_step_gain_lateral])
