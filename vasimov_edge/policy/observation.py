"""The 78-D observation of the official locomotion policy, built in one place for the runtime, tests and viewers.

Get one scale or one joint slot wrong and the policy falls instead of walking, so nothing here is typed in by hand:
the term order, slices, scales and the joint order inside each slot are the contract's (:mod:`vasimov.policy_contract`,
read from the shipped fact sheet and checked against the joint table), and the gather table that fills them is
compiled from it once, at import.

Terms, in order (see ``policy_contract.observation``): body-frame gyro x0.25, projected gravity, command, joint
position minus default in three slot groups, joint velocity x0.1 in the same groups, and the previous raw action
(policy order, zeros after reset). The previous action is the only state, so the builder owns it.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate

import numpy as np

from vasimov import joints
from vasimov.policy_contract import (
    ACTION_DIM,
    ACTIONS_TERM,
    JOINT_POS_PREFIX,
    JOINT_VEL_PREFIX,
    LAYOUT,
    OBS_DIM,
    POLICY_JOINT_NAMES,
    ObsTerm,
    entry_labels,
)
from vasimov_edge.policy.interface import PolicyInput

# Which PolicyInput field each vector term reads (the labels are the contract's, ``VECTOR_TERMS``).
_VECTOR_SOURCES: dict[str, str] = {"base_ang_vel": "gyro", "projected_gravity": "projected_gravity",
                                   "command": "command"}


class ObservationError(ValueError):
    """A PolicyInput that cannot become a valid observation (wrong shape, non-finite value)."""


# The builder concatenates its raw sources into one vector, in this order, and gathers the observation from it with an
# index table compiled once from LAYOUT. Joint sources are in joint index order (25), the previous action in policy
# order (23).
_SOURCES: tuple[tuple[str, int], ...] = (
    ("gyro", 3),
    ("projected_gravity", 3),
    ("command", 3),
    ("q_rel", joints.NUM_JOINTS),
    ("qd", joints.NUM_JOINTS),
    ("previous_action", ACTION_DIM),
)
_SOURCE_OFFSET: dict[str, int] = dict(
    zip((name for name, _ in _SOURCES), accumulate((n for _, n in _SOURCES), initial=0), strict=False)
)


def _compile_gather(layout: Sequence[ObsTerm]) -> tuple[np.ndarray, np.ndarray]:
    """(source index, scale) for each of the OBS_DIM entries, resolved from term names and labels."""
    gather = np.empty(OBS_DIM, dtype=np.intp)
    scale = np.empty(OBS_DIM, dtype=np.float64)
    for t in layout:
        if t.term in _VECTOR_SOURCES:
            src = _VECTOR_SOURCES[t.term]
            idx = [_SOURCE_OFFSET[src] + k for k in range(len(t.labels))]
        elif t.term.startswith(JOINT_POS_PREFIX):
            idx = [_SOURCE_OFFSET["q_rel"] + joints.joint_index(n) for n in t.labels]
        elif t.term.startswith(JOINT_VEL_PREFIX):
            idx = [_SOURCE_OFFSET["qd"] + joints.joint_index(n) for n in t.labels]
        elif t.term == ACTIONS_TERM:
            idx = [_SOURCE_OFFSET["previous_action"] + POLICY_JOINT_NAMES.index(n) for n in t.labels]
        else:
            raise ValueError(f"observation term {t.term!r} has no source")
        gather[t.slice] = idx
        scale[t.slice] = t.scale
    gather.setflags(write=False)
    scale.setflags(write=False)
    return gather, scale


_GATHER, _SCALE = _compile_gather(LAYOUT)


_EXPECTED_SHAPES: dict[str, tuple[int, ...]] = {
    "gyro": (3,),
    "projected_gravity": (3,),
    "command": (3,),
    "q": (joints.NUM_JOINTS,),
    "qd": (joints.NUM_JOINTS,),
}


class ObservationBuilder:
    """Turns a :class:`PolicyInput` (joint space, 25 joints) into the policy's 78-D float32 observation.

    Holds the previous raw action because it is part of the observation; :meth:`reset` zeroes it, as the policy saw
    at the start of every training episode.
    """

    def __init__(self) -> None:
        self._previous_action = np.zeros(ACTION_DIM, dtype=np.float32)

    @property
    def layout(self) -> tuple[ObsTerm, ...]:
        """(term, slice, labels, scale) for every term; the slices tile 0..OBS_DIM."""
        return LAYOUT

    @property
    def previous_action(self) -> np.ndarray:
        """Copy of the action that will appear in the next observation."""
        return self._previous_action.copy()

    def reset(self) -> None:
        """Forget the previous action (the next observation carries zeros)."""
        self._previous_action[:] = 0.0

    def record_action(self, action: np.ndarray) -> None:
        """Store the raw network output so the next observation feeds it back."""
        a = np.asarray(action, dtype=np.float32).reshape(-1)
        if a.shape != (ACTION_DIM,):
            raise ObservationError(f"previous action must have {ACTION_DIM} entries (policy order), got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ObservationError(f"previous action has non-finite entries at {np.flatnonzero(~np.isfinite(a))}")
        self._previous_action[:] = a

    def build(self, inp: PolicyInput) -> np.ndarray:
        """The observation for one tick as a fresh float32 array of OBS_DIM entries."""
        for field, shape in _EXPECTED_SHAPES.items():
            got = np.shape(getattr(inp, field))
            if got != shape:
                raise ObservationError(f"PolicyInput.{field} must have shape {shape} (joint index order), got {got}")
        src = np.concatenate(  # same order as _SOURCES
            (
                inp.gyro,
                inp.projected_gravity,
                inp.command,
                np.asarray(inp.q) - joints.DEFAULT_POS,
                inp.qd,
                self._previous_action,
            ),
            dtype=np.float64,
        )
        obs = (_SCALE * src[_GATHER]).astype(np.float32)
        bad = np.flatnonzero(~np.isfinite(obs))
        if bad.size:
            names = entry_labels()
            raise ObservationError(f"non-finite observation entries: {[names[i] for i in bad]}")
        return obs
