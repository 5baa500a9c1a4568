"""The one joint table of Asimov 1: firmware order, simulator names, policy order, gains and limits.

Every other module resolves joints through this table instead of hard-coding indices. The numbers come from the
fact sheet shipped in ``vasimov/data/asimov1_facts.yaml`` (a verbatim copy of the project's reference sheet, whose
sources are cited inside it), read once at import.

Index spaces used across the project:

* **firmware index** (0..24): order of ``RobotState.joint_pos`` and of a 25-entry trajectory. Ankle slots carry
  motor angles A/B in state and (pitch, roll) in trajectory commands (see ``vasimov.motor_space``).
* **joint index** (0..24): the same order, but every slot is the simulator's *joint* (ankle pitch/roll instead of
  motors A/B). This is the order of ``MotorCommand`` and ``PlantState`` arrays and of ``/joint_states``.
* **policy index** (0..22): the learned policy's action order; the two neck joints are not in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import yaml

FACTS_RESOURCE = "asimov1_facts.yaml"


@cache
def facts() -> dict[str, Any]:
    """The parsed fact sheet (cached; treat as read-only)."""
    text = resources.files("vasimov.data").joinpath(FACTS_RESOURCE).read_text(encoding="utf-8")
    return yaml.safe_load(text)


@dataclass(frozen=True)
class Joint:
    """One actuated joint with everything the twin needs to know about it."""

    index: int  # firmware / joint index
    firmware_name: str
    sim_name: str
    group: str
    policy_index: int | None
    range: tuple[float, float]
    default_pos: float  # standing pose, joint space (rad)
    policy_kp: float
    policy_kd: float
    stand_kp: float
    stand_kd: float
    effort_limit: float  # N*m
    velocity_limit: float  # rad/s
    armature: float
    damping: float
    frictionloss: float
    ankle_motor: str | None  # "A" or "B" for the ankle slots


def _build() -> tuple[Joint, ...]:
    f = facts()
    order = f["firmware_joint_order"]["joints"]
    gains = {row["sim_joint"]: row for row in f["pd_gains"]["per_joint_table"]}
    pose = f["default_standing_pose"]["sim_joints"]
    joint_defs = {b["joint"]["name"]: b["joint"] for b in f["kinematic_tree"]["bodies"] if "joint" in b}
    out = []
    for row in order:
        name = row["sim_joint"]
        g = gains[name]
        jd = joint_defs[name]
        out.append(
            Joint(
                index=int(row["index"]),
                firmware_name=row["firmware"],
                sim_name=name,
                group=row["group"],
                policy_index=row["policy_index"],
                range=(float(jd["range"][0]), float(jd["range"][1])),
                default_pos=float(pose[name]),
                policy_kp=float(g["policy_kp"]),
                policy_kd=float(g["policy_kd"]),
                stand_kp=float(g["stand_kp"]),
                stand_kd=float(g["stand_kd"]),
                effort_limit=float(g["effort_nm"]),
                velocity_limit=float(g["velocity_rad_s"]),
                armature=float(jd.get("armature", 0.0)),
                damping=float(jd.get("damping", 0.0)),
                frictionloss=float(jd.get("frictionloss", 0.0)),
                ankle_motor=row.get("ankle_motor"),
            )
        )
    for i, j in enumerate(out):
        if j.index != i:
            raise ValueError(f"fact sheet firmware order is not contiguous at {j.sim_name}: index {j.index} != {i}")
    return tuple(out)


JOINTS: tuple[Joint, ...] = _build()
NUM_JOINTS: int = len(JOINTS)  # 25
SIM_NAMES: tuple[str, ...] = tuple(j.sim_name for j in JOINTS)
FIRMWARE_NAMES: tuple[str, ...] = tuple(j.firmware_name for j in JOINTS)
BY_SIM_NAME: dict[str, Joint] = {j.sim_name: j for j in JOINTS}
BY_FIRMWARE_NAME: dict[str, Joint] = {j.firmware_name: j for j in JOINTS}

# Policy order (23 joints): POLICY_TO_JOINT[p] is the joint index driven by action p.
NUM_POLICY_JOINTS: int = sum(1 for j in JOINTS if j.policy_index is not None)
POLICY_TO_JOINT: np.ndarray = np.empty(NUM_POLICY_JOINTS, dtype=np.intp)
for _j in JOINTS:
    if _j.policy_index is not None:
        POLICY_TO_JOINT[_j.policy_index] = _j.index
POLICY_TO_JOINT.setflags(write=False)
NON_POLICY_JOINTS: tuple[int, ...] = tuple(j.index for j in JOINTS if j.policy_index is None)  # the neck

# Ankle pairs as joint indices: (pitch slot == motor A slot, roll slot == motor B slot).
ANKLE_PAIRS: tuple[tuple[int, int], ...] = tuple(
    (a.index, b.index)
    for a in JOINTS
    if a.ankle_motor == "A"
    for b in JOINTS
    if b.ankle_motor == "B" and b.group == a.group
)


def _vec(attr: str) -> np.ndarray:
    v = np.array([getattr(j, attr) for j in JOINTS], dtype=np.float64)
    v.setflags(write=False)
    return v


DEFAULT_POS = _vec("default_pos")
POLICY_KP = _vec("policy_kp")
POLICY_KD = _vec("policy_kd")
STAND_KP = _vec("stand_kp")
STAND_KD = _vec("stand_kd")
EFFORT_LIMIT = _vec("effort_limit")
VELOCITY_LIMIT = _vec("velocity_limit")
RANGE_LO = np.array([j.range[0] for j in JOINTS])
RANGE_HI = np.array([j.range[1] for j in JOINTS])
RANGE_LO.setflags(write=False)
RANGE_HI.setflags(write=False)


def joint_index(name: str) -> int:
    """Joint index for a simulator or firmware name; the error lists what would have been valid."""
    if name in BY_SIM_NAME:
        return BY_SIM_NAME[name].index
    if name in BY_FIRMWARE_NAME:
        return BY_FIRMWARE_NAME[name].index
    raise KeyError(f"unknown joint {name!r}; valid: {', '.join(SIM_NAMES)} or {', '.join(FIRMWARE_NAMES)}")
