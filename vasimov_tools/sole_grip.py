"""How far each loaded stance sole turns in yaw over its single support, measured on the physics.

Why: a walking gait's rare falls on this robot start with a stance sole that spins under the walk's yaw load (the
sole's four contact points hold far less yaw once the pressure sits on the two toe or heel points), one or two steps
before the pelvis drops. A fall count needs hours of walking to compare two gaits; the spins are there in every
minute, so the bench reports them next to the falls.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

from vasimov.model.mjcf import FOOT_BODIES
from vasimov_plant.physics import GroundTruth, PlantCore

SINGLE_SUPPORT_SHARE = 0.9  # a foot carries the robot alone when it has this share of the feet's normal force
MIN_SUPPORT_TICKS = 5  # shorter loaded spells (a touchdown's bounce) are no single support


class SoleSpinMeter:
    """Fed once per control tick with that tick's ground truth (the caller reads it anyway); ``spins`` holds one yaw
    range (rad) per finished single support."""

    def __init__(self, plant: PlantCore) -> None:
        m = plant.model
        self._plant = plant
        self._body = {s: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, n) for s, n in FOOT_BODIES.items()}
        self._current: dict[str, list[float]] = {}
        self.spins: list[float] = []

    def update(self, tr: GroundTruth) -> None:
        total = tr.left_force + tr.right_force
        for side, force in (("left", tr.left_force), ("right", tr.right_force)):
            if total > 0.0 and force >= SINGLE_SUPPORT_SHARE * total:
                rot = self._plant.data.xmat[self._body[side]].reshape(3, 3)
                yaw = math.atan2(rot[1, 0], rot[0, 0])
                seq = self._current.setdefault(side, [])
                if seq:  # unwrapped against the previous sample
                    yaw = seq[-1] + (yaw - seq[-1] + math.pi) % (2.0 * math.pi) - math.pi
                seq.append(yaw)
            elif side in self._current:
                seq = self._current.pop(side)
                if len(seq) >= MIN_SUPPORT_TICKS:
                    self.spins.append(max(seq) - min(seq))

    def summary(self) -> tuple[float | None, float | None]:
        """(largest, 95th percentile) spin in rad; None before the first single support."""
        if not self.spins:
            return None, None
        a = np.asarray(self.spins)
        return float(a.max()), float(np.percentile(a, 95))
