"""The small interface every locomotion backend (ONNX policy, built-in controller) implements.

A backend is pure: no ROS, no MuJoCo state of the running plant. It sees what the real robot's policy sees (IMU,
joint encoders, command) and returns joint targets for the 23 policy-driven joints; the firmware core turns them
into motor commands with the policy gains (or the backend's own gains, when it returns them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class PolicyInput:
    """Sensor readings at one control tick, in joint space (``vasimov.joints`` index order, 25 entries)."""

    tick: int
    sim_time: float
    gyro: np.ndarray  # (3,) body-frame angular velocity of the IMU, rad/s
    projected_gravity: np.ndarray  # (3,) unit gravity in the IMU/pelvis frame, z ~ -1 upright
    quat: np.ndarray  # (4,) IMU orientation w, x, y, z (world-from-body)
    command: np.ndarray  # (3,) vx, vy (m/s), vyaw (rad/s), already clamped by the firmware
    q: np.ndarray  # (25,) joint positions, rad
    qd: np.ndarray  # (25,) joint velocities, rad/s
    active: bool = True  # False while the firmware is not in MOVE/POLICY (backends may reset their state)


@dataclass
class PolicyOutput:
    """Targets in policy order (23). Optional gains/feed-forward override the policy gain table per joint."""

    target: np.ndarray  # (23,) joint position targets, rad
    torque_ff: np.ndarray | None = None  # (23,) N*m
    kp: np.ndarray | None = None  # (23,)
    kd: np.ndarray | None = None  # (23,)
    observation: np.ndarray | None = None  # the backend's observation vector (78 for the ONNX contract)
    action: np.ndarray | None = None  # raw network output (23) where there is one
    # (3,) the velocity the backend walks after its own envelope (vx, vy m/s, vyaw rad/s), where it limits the
    # command beyond the firmware's caps; None: it walks the command as given
    command_used: np.ndarray | None = None


class PolicyBackend(Protocol):
    name: str

    def reset(self) -> None:
        """Forget internal state (previous action, gait phase); called on entering MOVE/POLICY and on restart."""

    def step(self, inp: PolicyInput) -> PolicyOutput:
        """One control tick (50 Hz)."""
