"""Key poses of the recovery chain (``vasimov_edge.recovery``): the protective fall pose and the get-up sequences.

Joint-space poses, authored from the model's joint ranges (``vasimov.joints``; fact sheet ``kinematic_tree``) and
measured in the single-process closed loop (``tools/recovery_trial.py``, docs/recovery.md). Not yet solved with
whole-body kinematics (contact/COM constraints): see docs/recovery.md for what is missing.

Sign conventions (from the model's joint axes, checked on ``DEFAULT_POS``): the right side mirrors the left, so every
right joint is the negated left value; a pose is written with left-side values only. Left leg: hip pitch < 0 flexes
the hip (thigh forward), knee > 0 bends the knee, ankle pitch < 0 lifts the toes. Left arm: shoulder pitch < 0
raises the arm forward (-1.57 horizontal, -3.14 overhead), shoulder roll < 0 abducts, elbow > 0 bends.

Ranges that shape every pose: knee 0..1.5 rad (86 deg), ankle pitch +-0.35 rad, hip pitch +-1.57 rad -- no deep
squat, so from the front the body walks its weight back over the feet with the arms, and from the back it rolls to
the front first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vasimov.joints import BY_SIM_NAME, DEFAULT_POS, NUM_JOINTS, RANGE_HI, RANGE_LO, STAND_KD, STAND_KP

_LEFT = ("hip_pitch", "hip_roll", "hip_yaw", "knee", "ankle_pitch", "ankle_roll", "shoulder_pitch", "shoulder_roll",
         "shoulder_yaw", "elbow", "wrist_yaw")


def pose(*, waist_yaw: float = 0.0, right: dict[str, float] | None = None, **left: float) -> np.ndarray:
    """A 25-joint pose from left-side values (mirrored to the right unless ``right`` overrides a joint); every joint
    not named keeps its stand value. Clipped to the joint ranges."""
    q = DEFAULT_POS.copy()
    for name, v in left.items():
        if name not in _LEFT:
            raise ValueError(f"unknown joint {name!r}; valid: {', '.join(_LEFT)}")
        q[BY_SIM_NAME[f"left_{name}_joint"].index] = v
        q[BY_SIM_NAME[f"right_{name}_joint"].index] = -v
    for name, v in (right or {}).items():
        q[BY_SIM_NAME[f"right_{name}_joint"].index] = -v  # given in left-side convention too
    q[BY_SIM_NAME["waist_yaw_joint"].index] = waist_yaw
    return np.clip(q, RANGE_LO, RANGE_HI)


@dataclass(frozen=True)
class KeyPose:
    """One key pose: reached by a quintic blend over ``move_s``, then held ``hold_s``; ``kp_scale`` scales the
    STAND gains (capped at the trajectory range's 500)."""

    name: str
    position: np.ndarray
    move_s: float
    hold_s: float = 0.3
    kp_scale: float = 1.0

    def gains(self) -> tuple[np.ndarray, np.ndarray]:
        return np.minimum(STAND_KP * self.kp_scale, 500.0), STAND_KD.copy()


def protective_pose(direction: str = "other") -> np.ndarray:
    """The pose tracked while falling, by the direction of the fall at the trip (``recovery.fall_direction``).

    Forward ("front"): kneel -- hips nearly straight, knees fully bent, toes pointed -- with the arms forward and the
    elbows bent, so the knees and then the hands meet the floor before the head; otherwise (back, sides) crouch with
    the arms forward. Chin tucked in both. Measured (vasimov_tools/fall_study.py, docs/recovery.md): with the crouch
    a 250 N forward knock-down put the head on the floor at 4.2 m/s in 3 of 3 push times; kneeling with arms at twice
    the STAND stiffness (``RecoveryParams.protect_arm_kp_scale``), in none. Backward, kneeling raised the head's
    impact speed (3.1 against 1.3 m/s averaged over 250 N and 700 N pushes), so the crouch stays there."""
    if direction == "front":
        q = pose(hip_pitch=-0.3, knee=1.5, ankle_pitch=0.35, shoulder_pitch=-1.2, shoulder_roll=-0.2, elbow=0.8)
    else:
        q = pose(hip_pitch=-0.8, knee=1.2, ankle_pitch=-0.2, shoulder_pitch=-1.2, shoulder_roll=-0.2, elbow=0.8)
    q[BY_SIM_NAME["neck_pitch_joint"].index] = 0.4
    return q


# Face down: arms under the shoulders, push the chest up onto knees and hands, sit back over the feet. The elbows
# stay 0.25 rad off their stop: loaded straight, the body's weight pressed them 0.15 rad past the range, which latches
# JOINT_OUT_OF_RANGE (measured, tools/recovery_trial.py).
FRONT: tuple[KeyPose, ...] = (
    KeyPose("hands_under", pose(hip_pitch=0.0, knee=0.0, shoulder_pitch=-1.3, shoulder_roll=-0.25, elbow=1.2),
            move_s=0.8),
    KeyPose("push_up", pose(hip_pitch=-0.9, knee=1.3, ankle_pitch=0.0, shoulder_pitch=-1.4, shoulder_roll=-0.25,
                            elbow=0.25), move_s=1.0, kp_scale=1.6),
    KeyPose("all_fours", pose(hip_pitch=-1.5, knee=1.5, ankle_pitch=-0.35, shoulder_pitch=-1.2, shoulder_roll=-0.2,
                              elbow=0.25), move_s=1.0, kp_scale=1.6),
    KeyPose("sit_back", pose(hip_pitch=-1.57, knee=1.0, ankle_pitch=-0.35, shoulder_pitch=0.3, elbow=0.25),
            move_s=0.6, kp_scale=2.0),
    KeyPose("crouch", pose(hip_pitch=-1.4, knee=1.0, ankle_pitch=-0.35, shoulder_pitch=-0.8, elbow=0.3),
            move_s=1.0, kp_scale=2.0),
)

# Face up: roll onto the front -- the left arm reaches across, the right leg pushes, the waist unwinds -- then the
# front sequence. Found by `tools/getup_search.py back --trials 40 --seed 1 --seconds 5` (trial 22 of 40, the only
# one that turned the body face down; docs/recovery.md).
BACK: tuple[KeyPose, ...] = (
    KeyPose("reach_across", pose(waist_yaw=-0.717, shoulder_pitch=-1.313, shoulder_roll=-0.292, hip_roll=0.0,
                                 hip_pitch=-0.934, knee=1.237,
                                 right={"hip_roll": -0.363, "shoulder_pitch": -0.2, "shoulder_roll": -0.2}),
            move_s=0.477, kp_scale=1.494),
    KeyPose("roll_over", pose(waist_yaw=0.772, shoulder_pitch=-2.707, shoulder_roll=-0.29, hip_pitch=-1.144,
                              knee=0.94, right={"hip_roll": 0.517, "shoulder_pitch": -0.2, "shoulder_roll": -0.2}),
            move_s=0.443, kp_scale=1.494),
)

# On a side: roll onto the back (lower the arms and straighten, then let gravity finish).
SIDE: tuple[KeyPose, ...] = (
    KeyPose("flatten", pose(hip_pitch=0.0, knee=0.0, shoulder_pitch=-0.2, shoulder_roll=-0.4, elbow=0.0),
            move_s=0.8),
)


def lying_sequence(direction: str, gravity_y: float = 0.0) -> tuple[KeyPose, ...]:
    """The key poses for ``direction`` ("back", "front", "side"). From the back the roll leaves the body face down;
    the chain then settles and runs the front sequence (the roll is its own phase, see recovery.py)."""
    if direction == "front":
        return FRONT
    if direction == "back":
        return BACK
    return SIDE


assert all(k.position.shape == (NUM_JOINTS,) for k in (*FRONT, *BACK, *SIDE))
FALL_DIRECTIONS = ("front", "other")  # the protective poses there are
