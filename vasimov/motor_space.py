"""The one place where motor (firmware/state) space and joint space meet: Asimov 1's ankle linkage.

Each ankle is a parallel linkage: two motors A and B together set the ankle's pitch and roll. Three frames cross the
twin's boundaries and they differ only in the two ankle pairs (``vasimov.joints.ANKLE_PAIRS``):

* **joint space** (the simulator, ``MotorCommand``/``PlantState``, the policy): ankle slots hold (pitch, roll).
* **state space** (``RobotState.joint_pos``/``joint_vel``, motor temperatures and currents): ankle slots hold the
  motor angles (A, B). This is what the SDK reads and what a real robot's encoders report.
* **trajectory wire space** (a 25-entry ``AllTrajectory``): ankle A slot = pitch, B slot = roll, i.e. joint space
  again. The SDK rewrites motor targets into (pitch, roll) before sending (``menlo.asimov.robots
  .trajectory_wire_positions``) and the firmware clamps them and turns them back into motor targets.

The map is linear (fact sheet ``ankle_coupling``, from asimov-firmware ``apply_ankle_coupling`` as quoted by
menlo-sdk)::

    A =  K_pitch * pitch - K_roll * roll        pitch =  (A - B) / (2 K_pitch)
    B = -K_pitch * pitch - K_roll * roll        roll  = -(A + B) / (2 K_roll)

Velocities use the same map. Torques use its transpose (virtual work, so power is the same in both frames):
``tau_pitch = K_pitch (tau_A - tau_B)``, ``tau_roll = -K_roll (tau_A + tau_B)``.

Every function takes arrays whose last axis is the 25 joints (one sample or a batch) and returns a new float64 array;
inputs are never modified. A wrong last-axis length is a programming error here (``ValueError``): the firmware core
validates untrusted commands before it calls in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import numpy as np
from numpy.typing import ArrayLike

from vasimov.joints import ANKLE_PAIRS, NUM_JOINTS, RANGE_HI, RANGE_LO, facts


def _coupling() -> tuple[float, float, float, float]:
    c = facts()["ankle_coupling"]
    return (
        float(c["k_pitch"]),
        float(c["k_roll"]),
        float(c["firmware_clamp"]["pitch_abs_max"]),
        float(c["firmware_clamp"]["roll_abs_max"]),
    )


_COUPLING = _coupling()
K_PITCH: Final[float] = _COUPLING[0]  # 2.02 (motor rad per ankle-pitch rad)
K_ROLL: Final[float] = _COUPLING[1]  # 0.8
ANKLE_PITCH_LIMIT: Final[float] = _COUPLING[2]  # 0.35 rad, the firmware's clamp on a commanded ankle pitch
ANKLE_ROLL_LIMIT: Final[float] = _COUPLING[3]  # 0.1 rad

# Joint-space bounds the firmware enforces on every position target: the joint's range, narrowed on the ankle slots
# to the firmware's pitch/roll clamp (they coincide on the current sheet; taking the intersection keeps both true).
TARGET_LO: np.ndarray = RANGE_LO.copy()
TARGET_HI: np.ndarray = RANGE_HI.copy()
for _pitch, _roll in ANKLE_PAIRS:
    TARGET_LO[_pitch] = max(TARGET_LO[_pitch], -ANKLE_PITCH_LIMIT)
    TARGET_HI[_pitch] = min(TARGET_HI[_pitch], ANKLE_PITCH_LIMIT)
    TARGET_LO[_roll] = max(TARGET_LO[_roll], -ANKLE_ROLL_LIMIT)
    TARGET_HI[_roll] = min(TARGET_HI[_roll], ANKLE_ROLL_LIMIT)
TARGET_LO.setflags(write=False)
TARGET_HI.setflags(write=False)


def _as25(x: ArrayLike, what: str) -> np.ndarray:
    a = np.array(x, dtype=np.float64)  # always a copy: callers' arrays are never written
    if a.ndim == 0 or a.shape[-1] != NUM_JOINTS:
        raise ValueError(f"{what}: expected {NUM_JOINTS} values on the last axis, got shape {a.shape}")
    return a


def ankle_joint_to_motor(pitch: ArrayLike, roll: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """(pitch, roll) -> motor angles (A, B). Also the velocity map."""
    p = np.asarray(pitch, dtype=np.float64)
    r = np.asarray(roll, dtype=np.float64)
    return K_PITCH * p - K_ROLL * r, -K_PITCH * p - K_ROLL * r


def ankle_motor_to_joint(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Motor angles (A, B) -> (pitch, roll); the exact inverse of ``ankle_joint_to_motor``."""
    ma = np.asarray(a, dtype=np.float64)
    mb = np.asarray(b, dtype=np.float64)
    return (ma - mb) / (2.0 * K_PITCH), -(ma + mb) / (2.0 * K_ROLL)


_PairMap = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def _map_pairs(x: ArrayLike, what: str, fn: _PairMap) -> np.ndarray:
    out = _as25(x, what)
    for i, j in ANKLE_PAIRS:
        out[..., i], out[..., j] = fn(out[..., i].copy(), out[..., j].copy())
    return out


def joint_to_state(q: ArrayLike) -> np.ndarray:
    """Joint positions (25) -> what ``RobotState.joint_pos`` reports: ankle slots become motor angles A, B."""
    return _map_pairs(q, "joint_to_state", ankle_joint_to_motor)


def state_to_joint(m: ArrayLike) -> np.ndarray:
    """``RobotState.joint_pos`` frame (ankle A, B) -> joint positions (ankle pitch, roll)."""
    return _map_pairs(m, "state_to_joint", ankle_motor_to_joint)


def joint_to_state_velocity(qd: ArrayLike) -> np.ndarray:
    """Joint velocities -> motor-frame velocities (``RobotState.joint_vel``); same linear map as positions."""
    return _map_pairs(qd, "joint_to_state_velocity", ankle_joint_to_motor)


def state_to_joint_velocity(md: ArrayLike) -> np.ndarray:
    """Motor-frame velocities -> joint velocities."""
    return _map_pairs(md, "state_to_joint_velocity", ankle_motor_to_joint)


def _torque_joint_to_motor(tau_pitch: np.ndarray, tau_roll: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # Inverse of the transpose: the motor torques that produce (tau_pitch, tau_roll) at the ankle.
    return (
        0.5 * (tau_pitch / K_PITCH - tau_roll / K_ROLL),
        0.5 * (-tau_pitch / K_PITCH - tau_roll / K_ROLL),
    )


def _torque_motor_to_joint(tau_a: np.ndarray, tau_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # Transpose of the position Jacobian d(A, B)/d(pitch, roll).
    return K_PITCH * (tau_a - tau_b), -K_ROLL * (tau_a + tau_b)


def joint_to_state_torque(tau: ArrayLike) -> np.ndarray:
    """Joint torques (ankle pitch/roll, N·m) -> motor torques (ankle A, B), by virtual work.

    Used for what each motor carries (currents, heating): the power ``tau · qd`` is the same in both frames.
    """
    return _map_pairs(tau, "joint_to_state_torque", _torque_joint_to_motor)


def state_to_joint_torque(tau_m: ArrayLike) -> np.ndarray:
    """Motor torques (ankle A, B) -> joint torques (ankle pitch, roll), by virtual work."""
    return _map_pairs(tau_m, "state_to_joint_torque", _torque_motor_to_joint)


def clamp_joint_targets(q: ArrayLike) -> tuple[np.ndarray, bool]:
    """Clamp joint-space position targets to what the firmware lets a motor be sent.

    The ankle slots are limited to ±ANKLE_PITCH_LIMIT / ±ANKLE_ROLL_LIMIT (the firmware's clamp in
    ``apply_ankle_coupling``) and every other joint to its range. Returns ``(targets, clamped)`` where ``clamped``
    says whether any entry moved. Non-finite entries are the caller's to reject first (``np.clip`` keeps NaN).
    """
    a = _as25(q, "clamp_joint_targets")
    out = np.clip(a, TARGET_LO, TARGET_HI)
    return out, bool(np.any(out != a))


def trajectory_to_joint_targets(positions: ArrayLike) -> tuple[np.ndarray, bool]:
    """A 25-entry trajectory as it arrives on the wire -> clamped joint-space targets.

    The wire already carries the ankle's (pitch, roll) in the (A, B) slots, so it *is* joint space; what the firmware
    adds is the clamp (then, on the real robot, ``A = K_pitch·pitch − K_roll·roll`` etc. for the motors; here the
    simulator drives the ankle joints directly and reports A, B through ``joint_to_state``).
    """
    return clamp_joint_targets(positions)


def state_to_trajectory_wire(m: ArrayLike) -> np.ndarray:
    """Targets in the ``RobotState.joint_pos`` frame -> the values a trajectory carries on the wire.

    Mirrors what menlo-sdk does before sending (``trajectory_wire_positions``); for clients that hold targets in
    the reported frame (e.g. "go back to this reported pose"). Identical to ``state_to_joint``.
    """
    return state_to_joint(m)


__all__ = [
    "ANKLE_PITCH_LIMIT",
    "ANKLE_ROLL_LIMIT",
    "K_PITCH",
    "K_ROLL",
    "TARGET_HI",
    "TARGET_LO",
    "ankle_joint_to_motor",
    "ankle_motor_to_joint",
    "clamp_joint_targets",
    "joint_to_state",
    "joint_to_state_torque",
    "joint_to_state_velocity",
    "state_to_joint",
    "state_to_joint_torque",
    "state_to_joint_velocity",
    "state_to_trajectory_wire",
    "trajectory_to_joint_targets",
]
