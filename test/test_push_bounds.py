"""The push bound is what the physics survives: a push at the impulse bound never makes the simulation diverge."""

from __future__ import annotations

import numpy as np
import pytest

from vasimov import joints
from vasimov.sim_control import MAX_PUSH_IMPULSE_NS, parse_push
from vasimov_plant.physics import PlantCore

DIRECTIONS = [(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)]
# the lightest and the most exposed bodies (a forward push on the neck diverged first at 1500 N s), and the pelvis
BODIES = ("neck_pitch_link", "left_wrist_yaw_link", "right_ankle_roll_link", "pelvis_link")


@pytest.mark.parametrize("force_n", [2000.0, MAX_PUSH_IMPULSE_NS / 5.0])  # short and hard, long and soft
def test_a_push_at_the_impulse_bound_never_diverges(force_n: float) -> None:
    core = PlantCore()
    n = joints.NUM_JOINTS
    duration = MAX_PUSH_IMPULSE_NS / force_n
    for body in BODIES:
        for d in DIRECTIONS:
            for gantry in (True, False):
                push = parse_push({"body": body, "force": [force_n * c for c in d], "duration": duration})
                core.reset()
                core.set_command(np.array(joints.DEFAULT_POS), np.zeros(n), np.full(n, 100.0), np.full(n, 3.0),
                                 np.zeros(n))
                core.set_gantry(gantry)
                core.apply_push(push.body, np.asarray(push.force), push.duration)
                for _ in range(int((duration + 1.0) / core.dt)):
                    core.step()  # raises PhysicsError on divergence
                assert not core.faulted
