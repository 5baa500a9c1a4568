"""Motor commands of the built-in walker: from joint targets to targets, gains and feed-forward torques.

Why a module of its own: stiff position control alone is not enough at 50 Hz. The walker feeds gravity and the
planned ground force forward through the planned ZMP (on the stance sole in single support, split between the soles
otherwise), adds ``kd * planned rate`` so the plant's damping (which targets zero rate) does not brake the legs, and
gives the swing leg its own inverse dynamics along the planned path. These are torque-level decisions, separate from
where the joints should be (``whole_body.py``), and they end in the one conversion to the policy's joint order with
the robot's ranges and effort limits applied.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from vasimov import joints
from vasimov_edge.policy.builtin.config import ControllerConfig
from vasimov_edge.policy.builtin.estimation import Estimate
from vasimov_edge.policy.builtin.footsteps import FootPose, rot2
from vasimov_edge.policy.builtin.gait import Gait
from vasimov_edge.policy.builtin.kinematics import SIDES, RobotKinematics
from vasimov_edge.policy.builtin.preview import GRAVITY
from vasimov_edge.policy.builtin.whole_body import WAIST
from vasimov_edge.policy.interface import PolicyOutput

Vec = NDArray[np.float64]

MAX_LEG_RATE_FF = 5.0  # rad/s; clip of the stance-leg rate feed-forward (finite differences of IK solutions)


class MotorCommands:
    """Gain tables, support-load and rate feed-forward, and the policy output; remembers last tick's targets."""

    def __init__(self, cfg: ControllerConfig, kin: RobotKinematics) -> None:
        self.cfg = cfg
        self.kin = kin
        self.leg = {s: list(kin.legs[s].joint) for s in SIDES}  # joint-table indices of each leg
        self.kp0, self.kd0 = self._gain_tables()
        self.reset()

    def reset(self) -> None:
        self.q_prev: Vec | None = None  # last tick's joint targets (the rate feed-forward differentiates them)

    def _gain_tables(self) -> tuple[Vec, Vec]:
        cfg = self.cfg
        kp = np.empty(joints.NUM_JOINTS)
        kd = np.empty(joints.NUM_JOINTS)
        for j in joints.JOINTS:
            if j.group in ("left_leg", "right_leg"):
                kp[j.index], kd[j.index] = cfg.leg_kp, cfg.leg_kd
            elif j.sim_name == WAIST:
                kp[j.index], kd[j.index] = cfg.waist_kp, cfg.waist_kd
            else:
                kp[j.index], kd[j.index] = cfg.arm_kp, cfg.arm_kd
        return kp, kd

    def gains(self, swing: str | None) -> tuple[Vec, Vec]:
        """This tick's kp, kd (25): the tables, with the swing gains on the ``swing`` leg."""
        kp, kd = self.kp0.copy(), self.kd0.copy()
        if swing is not None:
            idx = self.leg[swing]
            kp[idx], kd[idx] = self.cfg.swing_kp, self.cfg.swing_kd
        return kp, kd

    # ------------------------------------------------------------------ support loads
    def support_loads(self, est: Estimate, zmp: Vec, acc: Vec, gait: Gait) -> list[tuple[str, Vec, Vec]]:
        """Planned ground force ``m (g + c_ddot)`` through the planned ZMP: on the stance sole in single support,
        split between the soles by the ZMP's position along the line between them otherwise."""
        feet = gait.feet
        force = self.kin.total_mass * np.array([acc[0], acc[1], GRAVITY])
        if gait.in_single_support():
            s = gait.stance
            return [(s, self._sole_point(s, feet[s], zmp) - est.base, force)]
        pl, pr = feet["left"].pos[:2], feet["right"].pos[:2]
        axis = pl - pr
        w_left = float(np.clip((zmp - pr) @ axis / max(float(axis @ axis), 1e-9), 0.0, 1.0))
        mid = pr + w_left * axis
        loads = []
        for side, w in (("left", w_left), ("right", 1.0 - w_left)):
            if w <= 1e-3:
                continue
            p = feet[side].pos[:2] + (zmp - mid)
            loads.append((side, self._sole_point(side, feet[side], p) - est.base, w * force))
        return loads

    def _sole_point(self, side: str, foot: FootPose, p: Vec) -> Vec:
        """``p`` (odom xy) clipped into the sole rectangle of ``side`` (resting on ``foot``), as a 3-D ground
        point."""
        leg = self.kin.legs[side]
        rel = rot2(foot.yaw).T @ (p - foot.pos[:2])
        rel = np.clip(rel, [-leg.sole_half_length, -leg.sole_half_width], [leg.sole_half_length, leg.sole_half_width])
        return np.append(foot.pos[:2] + rot2(foot.yaw) @ rel, 0.0)

    def support_torques(self, loads: list[tuple[str, Vec, Vec]]) -> Vec:
        """Joint torques (25) carrying gravity and the planned ground forces (zero with ``gravity_ff`` off)."""
        return self.kin.contact_torques(loads) if self.cfg.gravity_ff else np.zeros(joints.NUM_JOINTS)

    # ------------------------------------------------------------------ rate feed-forward
    def rate_feedforward(self, q_des: Vec, tau: Vec, kd: Vec, swing_q: tuple[str, Vec, Vec] | None) -> None:
        """``kd * qd_des`` on the legs (the plant's damping term targets zero rate); the swing leg also gets its own
        gravity and rate-dependent torques along the planned curve, one tick ahead, instead of the support load.
        ``tau`` is changed in place; ``q_des`` is remembered for the next tick's rates."""
        self._rate_feedforward(q_des, tau, kd, swing_q)
        self.q_prev = q_des.copy()

    def _rate_feedforward(self, q_des: Vec, tau: Vec, kd: Vec, swing: tuple[str, Vec, Vec] | None) -> None:
        cfg = self.cfg
        if not cfg.velocity_ff or self.q_prev is None:
            return
        for s in SIDES:
            idx = self.leg[s]
            if swing is not None and swing[0] == s:
                _, q_now, q_next = swing
                qd = (q_next - q_now) / cfg.control_dt
                tau[idx] = self.kin.leg_inverse_dynamics(s, qd, np.zeros(6)) + kd[idx] * qd
            else:
                qd = (q_des[idx] - self.q_prev[idx]) / cfg.control_dt
                tau[idx] += kd[idx] * np.clip(qd, -MAX_LEG_RATE_FF, MAX_LEG_RATE_FF)

    # ------------------------------------------------------------------ output
    def output(self, q_des: Vec, tau: Vec, kp: Vec, kd: Vec) -> PolicyOutput:
        """Joint-table (25) targets, torques and gains to the policy's order (23), inside ranges and effort limits."""
        p2j = joints.POLICY_TO_JOINT
        q_des = np.clip(q_des, joints.RANGE_LO, joints.RANGE_HI)
        tau = np.clip(tau, -joints.EFFORT_LIMIT, joints.EFFORT_LIMIT)
        return PolicyOutput(target=q_des[p2j].copy(), torque_ff=tau[p2j].copy(), kp=kp[p2j].copy(), kd=kd[p2j].copy())
