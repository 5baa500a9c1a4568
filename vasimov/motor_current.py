"""Motor current from motor torque: the ONE assumed torque constant of Asimov 1's 25 motors.

Two sides need it: the firmware twin's thermal model heats each motor with the copper loss of this current, and the
SDK bridge reports it as ``joint_current``. Both must use the same constant, so it lives here, below them both.

**ASSUMED**: Menlo publishes no torque constants for Asimov 1's ENCOS motors; only each motor type's continuous
("rated") torque is known (fact sheet ``torque_limits.motor_datasheet``). The twin takes every motor to draw
``RATED_CURRENT_A`` at its rated torque, so ``k_t = rated_torque / RATED_CURRENT_A`` (output-side N·m/A) and
``I = tau_motor / k_t``, signed like the torque: no current loop, no no-load or friction current. The reported
current is an estimate of the right order, not a measurement (FIDELITY.md).

Motor order = firmware order: the ankle slots hold motors A and B (``vasimov.motor_space``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from vasimov.joints import JOINTS, NUM_JOINTS, facts

#: ASSUMED current (A) of every motor type at its rated torque; fixes the torque constant.
RATED_CURRENT_A = 11.0
#: Rated torque (N·m) for a motor the datasheet table does not list (the neck): the smallest listed motor
#: (EC-A4310, 12 N·m), whose URDF effort (12 N·m) the neck shares.
UNKNOWN_MOTOR_RATED_TORQUE_NM = 12.0


def _joint_kind(sim_name: str) -> str:
    """``left_knee_joint`` -> ``knee``: the name the datasheet table uses for a joint's motor."""
    kind = sim_name.removesuffix("_joint")
    for side in ("left_", "right_"):
        kind = kind.removeprefix(side)
    return kind


def motor_rated_torque(unknown_nm: float = UNKNOWN_MOTOR_RATED_TORQUE_NM) -> np.ndarray:
    """Rated continuous torque (N·m) of the motor in each firmware slot, from the fact sheet's datasheet table.

    The ankle slots hold the two ankle motors (A, B), which the table lists as "ankle motors A and B"; a joint the
    table does not list gets ``unknown_nm``.
    """
    table = facts()["torque_limits"]["motor_datasheet"]
    by_kind: dict[str, float] = {}
    for entry in table.values():
        if not isinstance(entry, dict) or "rated_torque" not in entry:
            continue
        for kind in entry.get("joints", ()):
            key = "ankle" if str(kind).startswith("ankle") else str(kind)
            by_kind[key] = float(entry["rated_torque"])
    out = np.empty(NUM_JOINTS)
    for j in JOINTS:
        kind = "ankle" if j.ankle_motor is not None else _joint_kind(j.sim_name)
        out[j.index] = by_kind.get(kind, unknown_nm)
    return out


def torque_constant(rated_current_a: float = RATED_CURRENT_A,
                    unknown_nm: float = UNKNOWN_MOTOR_RATED_TORQUE_NM) -> np.ndarray:
    """k_t (N·m/A, output side) of the motor in each firmware slot: rated torque / ``rated_current_a`` (ASSUMED),
    read-only."""
    k_t = motor_rated_torque(unknown_nm) / rated_current_a
    k_t.setflags(write=False)
    return k_t


def motor_current(tau_motor: ArrayLike, k_t: ArrayLike | None = None) -> np.ndarray:
    """Each motor's current (A, signed like the torque) for motor-frame torques, through ``k_t`` (default: the
    assumed ``torque_constant()``). No current loop, no no-load or friction current: torque over k_t."""
    kt = torque_constant() if k_t is None else np.asarray(k_t, dtype=np.float64)
    return np.asarray(tau_motor, dtype=np.float64) / kt
