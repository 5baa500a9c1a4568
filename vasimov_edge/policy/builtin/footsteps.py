"""Footstep geometry of the built-in walker: where the feet go and where on a sole the pressure is planned.

Why a module of its own: the gait (``gait.py``) decides *when* a foot lifts and lands; everything here decides *where*
-- the nominal foothold for a command, the limits that keep it reachable and clear of the stance foot, the once-a-step
heading correction, the capture-point foothold blended into it, and the point on a sole the walking ZMP sits on. These
are functions of foot poses, the command and the config only, so they read (and can be tested) without the gait's
timing. All poses are on the ground plane of the controller's odometry frame.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from vasimov_edge.policy.builtin.config import ControllerConfig
from vasimov_edge.policy.builtin.kinematics import clamp, yaw_rotation

if TYPE_CHECKING:  # adaptation imports this module's vocabulary
    from vasimov_edge.policy.builtin.adaptation import StrideCorrection

Vec = NDArray[np.float64]

OTHER = {"left": "right", "right": "left"}
SIGN = {"left": 1.0, "right": -1.0}  # lateral side of each foot in the robot frame
# m/s of backward command over which the ZMP offset moves to its backward value: the whole backward range (over the
# first 0.1 m/s, a slow backward walk at -0.11 m/s had its pressure on the heel spheres and spun its soles: a 300-s
# random sequence fell; the steady 0.2 m/s walk is unchanged)
BACKWARD_BLEND_SPEED = 0.2
FAST_BLEND_SPEED = 0.1  # m/s below the forward limit over which the ZMP offset moves to its fast value


def wrap(a: float) -> float:
    """Angle ``a`` wrapped into [-pi, pi)."""
    return (a + math.pi) % (2.0 * math.pi) - math.pi


def rot2(yaw: float) -> Vec:
    """2-D rotation matrix of ``yaw`` (ground-plane vectors)."""
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


def between_yaw(left: FootPose, right: FootPose) -> float:
    """Heading of the walking frame midway between the two feet."""
    return right.yaw + 0.5 * wrap(left.yaw - right.yaw)


class FootstepPlanner:
    """Footholds and ZMP points for the gait; holds only where on the sole the walking ZMP currently sits."""

    def __init__(self, cfg: ControllerConfig, stride: StrideCorrection) -> None:
        self.cfg = cfg
        self.stride = stride  # the leg-odometry stride correction lengthens nominal forward steps
        self.zmp_local = np.array([cfg.zmp_x_offset, 0.0])  # sole frame: where the walking ZMP sits

    def update_zmp_local(self, vx: float) -> None:
        """Where on the sole the walking ZMP sits: a little ahead of the centre, further ahead only when walking
        fast forward (pressure on the toes costs the sole most of its yaw grip), further back walking backward (the
        pressure must stay off the sole end the body is moving toward)."""
        cfg = self.cfg
        back = min(1.0, max(0.0, -vx / BACKWARD_BLEND_SPEED))
        fast = min(1.0, max(0.0, (vx - (cfg.command_limit[0] - FAST_BLEND_SPEED)) / FAST_BLEND_SPEED))
        forward = (1.0 - fast) * cfg.zmp_x_offset + fast * cfg.zmp_x_offset_fast
        self.zmp_local[0] = (1.0 - back) * forward + back * cfg.zmp_x_offset_backward

    def zmp_point(self, foot: FootPose) -> Vec:
        """The walking ZMP on ``foot`` (odometry xy)."""
        return foot.pos[:2] + rot2(foot.yaw) @ self.zmp_local

    def stand_point(self, feet: dict[str, FootPose]) -> Vec:
        """Where the standing COM (and ZMP) belongs: between the feet, ``com_x_offset`` ahead."""
        left, right = feet["left"], feet["right"]
        mid = 0.5 * (left.pos[:2] + right.pos[:2])
        return mid + rot2(between_yaw(left, right)) @ np.array([self.cfg.com_x_offset, 0.0])

    def final_zmp(self, stance: FootPose, landed: FootPose) -> Vec:
        """After the last landing of a walk the ZMP moves between the feet (``com_x_offset`` ahead) and stays."""
        mid = 0.5 * (stance.pos[:2] + landed.pos[:2])
        return mid + rot2(stance.yaw + 0.5 * wrap(landed.yaw - stance.yaw)) @ np.array([self.cfg.com_x_offset, 0.0])

    def width(self, cmd: Vec) -> float:
        """Step width, widened while strafing so the trailing (closing) step keeps ``min_step_width``."""
        cfg = self.cfg
        return max(cfg.step_width, cfg.min_step_width + abs(cmd[1]) * cfg.step_time)

    def next_foothold(self, prev: FootPose, prev_side: str, stop: bool, cmd: Vec) -> FootPose:
        """Where the other foot lands after ``prev``: the walking frame (midway between the feet) advanced by the
        command for one step; turning, the foot on the turn side opens by two steps' worth and the other closes."""
        cfg = self.cfg
        side = OTHER[prev_side]
        w = self.width(cmd)
        T = cfg.step_time
        vx, vy, wz = (0.0, 0.0, 0.0) if stop else cmd
        dyaw = 2.0 * wz * T if wz * SIGN[side] > 0.0 else 0.0
        dyaw = clamp(dyaw, -cfg.max_step_yaw, cfg.max_step_yaw)
        yaw = prev.yaw + dyaw
        centre = prev.pos[:2] - rot2(prev.yaw) @ np.array([0.0, SIGN[prev_side] * 0.5 * w])
        stride = vx * T
        if not stop and vx * cmd[0] > 0.0:
            stride += clamp(self.stride.correction, 0.0, self.stride.limit(vx))
        adv = np.array([clamp(stride, -cfg.max_step_length, cfg.max_step_length), vy * T])
        centre = centre + rot2(prev.yaw + 0.5 * dyaw) @ adv
        pos = centre + rot2(yaw) @ np.array([0.0, SIGN[side] * 0.5 * w])
        return FootPose(np.append(pos, 0.0), yaw)

    def constrain(self, side: str, stance: FootPose, target: FootPose) -> FootPose:
        """Keep a foothold reachable and clear of the stance foot (limits in the stance-foot frame)."""
        cfg = self.cfg
        rot = rot2(stance.yaw)
        rel = rot.T @ (target.pos[:2] - stance.pos[:2])
        rel[0] = float(clamp(rel[0], -cfg.max_step_length, cfg.max_step_length))
        rel[1] = SIGN[side] * float(clamp(SIGN[side] * rel[1], cfg.min_step_width, cfg.max_step_width))
        dyaw = clamp(wrap(target.yaw - stance.yaw), -cfg.max_step_yaw, cfg.max_step_yaw)
        return FootPose(np.append(stance.pos[:2] + rot @ rel, 0.0), stance.yaw + dyaw)

    def turn_toward_heading(self, nominal: FootPose, stance: FootPose, trailing: FootPose, heading: float) -> FootPose:
        """Once per step, turn the next foothold toward the desired heading (about the stance foot).

        The error is taken against the walking frame (between the feet): turning, the opening foot leads the heading
        and the closing one trails it by design, and correcting against either splays the feet.
        """
        cfg = self.cfg
        frame = stance.yaw + 0.5 * wrap(trailing.yaw - stance.yaw)
        corr = cfg.heading_gain * wrap(heading - frame)
        corr = clamp(corr, -cfg.max_heading_step, cfg.max_heading_step)
        centre = stance.pos[:2]
        pos = centre + rot2(corr) @ (nominal.pos[:2] - centre)
        return FootPose(np.append(pos, 0.0), nominal.yaw + corr)

    def capture_foothold(self, nominal: FootPose, stance: FootPose, swing: str, xi: Vec, remaining: float,
                         omega: float, cmd: Vec, stop: bool, gain: Vec) -> FootPose:
        """Blend the capture-point foothold into the nominal one by ``gain`` (along, across the next foot's frame).

        The capture-point foothold puts the next foot where the divergent component of motion ``xi``, predicted
        ``remaining`` s ahead to touchdown plus half a double support, sits at the offset a periodic pendulum gait
        for ``cmd`` (zero for the ``stop`` step) needs. It is blended in the next foot's frame: sideways the capture
        point gets a larger share than along the walk. Lateral placement is the only lateral balance a 4-5 cm wide
        sole with +/-0.1 rad of ankle roll has; the sagittal share costs distance (a lagging body gets shorter
        steps); sideways only too large a share costs something (it fights a strafe's own drift: see
        ``dcm_step_gain_lateral``).
        """
        cfg = self.cfg
        z = self.zmp_point(stance)
        xi_td = z + (xi - z) * math.exp(omega * (remaining + 0.5 * cfg.double_support_time))
        T = cfg.step_time
        e = math.exp(omega * T)
        vx, vy, _ = (0.0, 0.0, 0.0) if stop else cmd
        b = np.array([vx * T / (e - 1.0), -SIGN[swing] * self.width(cmd) / (1.0 + e) + vy * T / (e - 1.0)])
        r_next = rot2(nominal.yaw)
        foot = xi_td - r_next @ b - r_next @ self.zmp_local
        pos = nominal.pos[:2] + r_next @ (gain * (r_next.T @ (foot - nominal.pos[:2])))
        return self.constrain(swing, stance, FootPose(np.append(pos, 0.0), nominal.yaw))
