"""Whole-body kinematics and support torques for walker v2, on placo (a QP over Pinocchio's model).

The *desired* robot is a placo ``HumanoidRobot`` whose configuration the kinematics solver moves each tick toward
the gait's targets: both soles (frame tasks with the highest weight; hard equality tasks together with the joint
limits made the QP infeasible at the ankle stops; a loaded sole holds its orientation firmly, a swinging one yields
it), the COM (soft), the trunk upright along the heading (soft; the weights are ``WalkerConfig`` fields), and the
default pose for the upper body (a joint task) -- inside the joint limits. Its joint angles are the motor targets.
A second copy, posed from the measured joints, serves the estimator.

Support torques (:meth:`WholeBody.support_torques`): quasi-static inverse dynamics that carries the desired
configuration on the planned ground force through the commanded ZMP. Measured: without them the robot fell within
0.3 s of taking over; with gravity alone (sole fixed, ZMP under the COM) it drifted onto its heels while standing.
"""

from __future__ import annotations

import math

import numpy as np
import placo
from numpy.typing import NDArray

from vasimov import joints
from vasimov_edge.policy.interface import PolicyOutput
from vasimov_edge.policy.walker.config import WalkerConfig
from vasimov_edge.policy.walker.model import soles, walker_urdf

Vec = NDArray[np.float64]
SIDES = ("left", "right")
LEG_GROUPS = ("left_leg", "right_leg")


def load_robot() -> placo.HumanoidRobot:
    """A placo humanoid of Asimov 1 from the walker's URDF (collisions ignored: only kinematics and dynamics)."""
    return placo.HumanoidRobot("", placo.Flags.ignore_collisions, walker_urdf())


def _frame(pos: Vec, yaw: float) -> NDArray[np.float64]:
    t = np.eye(4)
    c, s = math.cos(yaw), math.sin(yaw)
    t[:3, :3] = [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]
    t[:3, 3] = pos
    return t


class WholeBody:
    """The desired robot, its kinematics QP and the motor-command conversion."""

    def __init__(self, cfg: WalkerConfig) -> None:
        self.cfg = cfg
        self.sole = soles()["left"]
        self.robot = load_robot()
        self.measured = load_robot()
        self.names = joints.SIM_NAMES
        robot = self.robot
        solver = placo.KinematicsSolver(robot)
        solver.enable_joint_limits(True)
        solver.enable_velocity_limits(False)
        self.solver = solver
        self.foot_task = {s: solver.add_frame_task(f"{s}_foot", np.eye(4)) for s in SIDES}
        self._sole_weight: dict[str, float] = {}  # each sole task's orientation weight as configured now
        for s in SIDES:
            self._configure_sole(s, cfg.stance_orientation_weight)
        self.com_task = solver.add_com_task(np.zeros(3))
        self.com_task.configure("com", "soft", cfg.com_weight)
        self.trunk_task = solver.add_orientation_task("trunk", np.eye(3))
        self.trunk_task.configure("trunk", "soft", cfg.trunk_weight)
        upper = {j.sim_name: j.default_pos for j in joints.JOINTS if j.group not in LEG_GROUPS}
        self.posture = solver.add_joints_task()
        self.posture.set_joints(upper)
        self.posture.configure("posture", "soft", 1.0)
        self.legs_rest = solver.add_joints_task()
        self.legs_rest.set_joints({j.sim_name: j.default_pos for j in joints.JOINTS if j.group in LEG_GROUPS})
        self.legs_rest.configure("legs_rest", "soft", 1e-3)
        self.v_index = np.array([robot.get_joint_v_offset(n) for n in self.names], dtype=np.intp)
        self.kp = joints.STAND_KP.copy()
        self.kd = joints.STAND_KD.copy()
        for j in joints.JOINTS:
            if j.group not in LEG_GROUPS:
                self.kp[j.index], self.kd[j.index] = j.policy_kp, j.policy_kd
        self._zero_acc = np.zeros(robot.model.nv)

    def _configure_sole(self, side: str, orientation_weight: float) -> None:
        self.foot_task[side].configure(f"{side}_foot", "soft", 1000.0, orientation_weight)
        self._sole_weight[side] = orientation_weight

    def _weigh_soles(self, support: dict[str, float]) -> None:
        """A sole that carries weight holds its orientation firmly (it is the base the ankle pushes from); one that
        carries none (swinging, or unloaded in double support) yields its orientation to the body's. Reconfigured
        only on a change: placo rebuilds the task's weights on ``configure``."""
        cfg = self.cfg
        for s in SIDES:
            want = cfg.swing_orientation_weight if support.get(s, 1.0) == 0.0 else cfg.stance_orientation_weight
            if want != self._sole_weight[s]:
                self._configure_sole(s, want)

    def reset(self) -> None:
        """Nothing to forget: the desired configuration is re-seeded from the encoders by ``take_over``."""

    def take_over(self, q: Vec, feet: dict, com_xy: Vec, heading: float) -> None:
        """Seed the desired robot at the measured joints, soles on the plan, and settle the QP on the targets."""
        robot = self.robot
        self._weigh_soles(dict.fromkeys(SIDES, 1.0))
        for name, value in zip(self.names, q, strict=True):
            robot.set_joint(name, float(value))
        robot.update_kinematics()
        robot.set_T_world_frame("left_foot", _frame(feet["left"].pos, feet["left"].yaw))
        robot.update_kinematics()
        for _ in range(10):
            self._set_targets(feet, com_xy, heading)
            robot.update_kinematics()
            self.solver.solve(True)
        robot.update_kinematics()

    def _set_targets(self, feet: dict, com_xy: Vec, heading: float, ground_z: float = 0.0) -> None:
        for s in SIDES:
            t = _frame(feet[s].pos, feet[s].yaw)
            g = feet[s].ground
            if g != 0.0:  # the sole follows the ground's pitch (toe up > 0) about its own y axis
                c, sn = math.cos(g), math.sin(g)
                t[:3, :3] = t[:3, :3] @ np.array([[c, 0.0, -sn], [0.0, 1.0, 0.0], [sn, 0.0, c]])
            pitch = feet[s].pitch
            if pitch > 0.0:  # heel-off, rolled about the toe line: the sole centre rises and moves back
                toe = np.array([self.sole.half_length, 0.0, 0.0])
                c, sn = math.cos(pitch), math.sin(pitch)
                ry = np.array([[c, 0.0, sn], [0.0, 1.0, 0.0], [-sn, 0.0, c]])
                t[:3, 3] = t[:3, 3] + t[:3, :3] @ (toe - ry @ toe)
                t[:3, :3] = t[:3, :3] @ ry
            self.foot_task[s].T_world_frame = t
        self.com_task.target_world = np.array([com_xy[0], com_xy[1], self.cfg.com_height + ground_z])
        c, s_ = math.cos(heading), math.sin(heading)
        cp, sp = math.cos(self.cfg.trunk_pitch), math.sin(self.cfg.trunk_pitch)
        yaw = np.array([[c, -s_, 0.0], [s_, c, 0.0], [0.0, 0.0, 1.0]])
        pitch = np.array([[cp, 0.0, sp], [0.0, 1.0, 0.0], [-sp, 0.0, cp]])
        self.trunk_task.R_world_frame = yaw @ pitch

    def solve(self, feet: dict, com_xy: Vec, heading: float, support: dict[str, float], zmp: Vec,
              com_acc: Vec, ground_z: float = 0.0) -> tuple[Vec, Vec]:
        """Joint targets (25, joint order) and feed-forward torques for this tick's targets; the COM is held
        ``ground_z`` higher (the soles' mean ground height, ``ground_height_follow``)."""
        robot = self.robot
        self._weigh_soles(support)
        self._set_targets(feet, com_xy, heading, ground_z)
        for _ in range(2):
            robot.update_kinematics()
            self.solver.solve(True)
        robot.update_kinematics()
        q = np.array([robot.get_joint(n) for n in self.names])
        tau = self.support_torques(zmp, com_acc, support) if self.cfg.gravity_ff else np.zeros(joints.NUM_JOINTS)
        return q, tau

    def support_torques(self, zmp: Vec, com_acc: Vec, support: dict[str, float]) -> Vec:
        """Joint torques (25) that carry the desired configuration on a ground force through the commanded ZMP.

        Quasi-static inverse dynamics with the floating base: ``tau = g(q)_a - (J_c^T w)_a`` summed over the
        support soles, where each sole takes its share of the planned ground force ``m (g + c_ddot)`` acting at the
        commanded ZMP (Jacobians world-aligned at the sole frames). This is how the ZMP is commanded at torque
        level: stiff PD alone on these feet puts the pressure wherever the posture error happens to.
        """
        robot = self.robot
        grav = np.asarray(robot.generalized_gravity(), dtype=np.float64)
        tau_v = grav.copy()
        mass = robot.total_mass()
        force = mass * np.array([com_acc[0], com_acc[1], 9.81])
        for s, w in support.items():
            if w <= 1e-3:
                continue
            origin = robot.get_T_world_frame(f"{s}_foot")[:3, 3]
            arm = np.array([zmp[0], zmp[1], origin[2]]) - origin
            wrench = np.concatenate([w * force, np.cross(arm, w * force)])
            jac = np.asarray(robot.frame_jacobian(f"{s}_foot", "local_world_aligned"), dtype=np.float64)
            tau_v -= jac.T @ wrench
        return tau_v[self.v_index]

    def output(self, q_des: Vec, tau: Vec, swing: str | None) -> PolicyOutput:
        """Joint-table targets and torques to the policy's order, inside ranges and effort limits."""
        p2j = joints.POLICY_TO_JOINT
        q_des = np.clip(q_des, joints.RANGE_LO, joints.RANGE_HI)
        tau = np.clip(tau, -joints.EFFORT_LIMIT, joints.EFFORT_LIMIT)
        return PolicyOutput(target=q_des[p2j].copy(), torque_ff=tau[p2j].copy(), kp=self.kp[p2j].copy(),
                            kd=self.kd[p2j].copy())
