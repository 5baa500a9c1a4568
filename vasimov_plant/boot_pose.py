"""Putting the plant into a named boot state (``vasimov.boot_states``): where the robot is when a life starts.

``boot(core, state)`` resets the core and, for every state but ``gantry``, takes the hook off, poses the robot and
lets it settle for ``SETTLE_S`` simulated seconds under the gains the firmware will hold it with (the STAND table
standing, DAMP's kd lying), so a life starts at rest, not mid-drop. The settling is part of the boot: the clock and
the step counter start from zero after it. Everything is deterministic (no random draw).

Placement: ``standing`` sets the stand pose (``vasimov.joints.DEFAULT_POS``) and lowers the robot until its lowest
foot sphere touches the ground under it; ``lying_back``/``lying_front`` set the model's zero pose (straight limbs),
pitch the robot 90 deg so its front faces up/down, and put its lowest collision geom (by its bounding radius, which
for the robot's spheres and capsules is at most a few cm above the true lowest point) on the ground, then let it drop
and come to rest.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

from vasimov.boot_states import DEFAULT_BOOT, BootState
from vasimov.control_rate import DAMP_KD
from vasimov.joints import DEFAULT_POS, NUM_JOINTS, STAND_KD, STAND_KP
from vasimov_plant.physics import PlantCore

#: Simulated seconds the robot settles in its boot state before the life starts (the stand pose is at rest after
#: ~1 s under the STAND gains; a lying robot dropped a few cm is still after ~1.5 s of DAMP).
SETTLE_S = 2.0


def _pitch_quat(angle: float) -> tuple[float, float, float, float]:
    """wxyz quaternion of a rotation by ``angle`` about the world y axis."""
    return (math.cos(angle / 2.0), 0.0, math.sin(angle / 2.0), 0.0)


#: Lying on the back: the pelvis x axis (the robot's front) points up; on the front it points down.
LYING_QUAT = {BootState.LYING_BACK: _pitch_quat(-math.pi / 2.0), BootState.LYING_FRONT: _pitch_quat(math.pi / 2.0)}


def boot(core: PlantCore, state: BootState = DEFAULT_BOOT, settle_s: float = SETTLE_S) -> None:
    """``core.reset()`` into ``state``; raises ``PhysicsError`` if the settling diverges (the core stays faulted)."""
    core.reset()
    if state.gantry:
        return
    m, d, ix = core.model, core.data, core.index
    core.set_gantry(False)
    zeros = np.zeros(NUM_JOINTS)
    b = ix.base_qpos_adr
    if state is BootState.STANDING:
        d.qpos[ix.qpos_adr] = DEFAULT_POS
        d.qpos[b + 3 : b + 7] = (1.0, 0.0, 0.0, 0.0)
        mujoco.mj_forward(m, d)
        feet = core._foot_geoms
        gaps = [d.geom_xpos[g, 2] - m.geom_size[g, 0] - core.ground_height(*d.geom_xpos[g, :2]) for g in feet]
        d.qpos[b + 2] -= min(gaps)
        core.set_command(DEFAULT_POS, zeros, STAND_KP, STAND_KD, zeros)
    else:
        d.qpos[ix.qpos_adr] = 0.0
        d.qpos[b + 3 : b + 7] = LYING_QUAT[state]
        mujoco.mj_forward(m, d)
        robot = np.flatnonzero((m.geom_bodyid > 0) & ((m.geom_contype | m.geom_conaffinity) != 0)
                               & ~ix.geom_ground)
        ground = core.ground_height(float(d.qpos[b]), float(d.qpos[b + 1]))
        d.qpos[b + 2] -= float(np.min(d.geom_xpos[robot, 2] - m.geom_rbound[robot])) - ground
        core.set_command(zeros, zeros, zeros, np.full(NUM_JOINTS, DAMP_KD), zeros)
    d.qvel[:] = 0.0
    mujoco.mj_forward(m, d)
    for _ in range(round(settle_s / core.dt)):
        core.step()
    core.restart_clock()
