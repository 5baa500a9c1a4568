"""The 78-D observation of the official locomotion policy, built in one place for the runtime, tests and viewers.

Get one scale or one joint slot wrong and the policy falls instead of walking, so nothing here is typed in by hand:
the term order, slices, scales and the joint order inside each slot come from ``policy_contract`` in the shipped fact
sheet, and every joint name is resolved to an index through :mod:`vasimov.joints` once, at import. The import fails
(with the rule that broke) if the sheet and the joint table disagree, rather than feeding a silently permuted vector.

Terms, in order (see ``policy_contract.observation``): body-frame gyro x0.25, projected gravity, command, joint
position minus default in three slot groups, joint velocity x0.1 in the same groups, and the previous raw action
(policy order, zeros after reset). The previous action is the only state, so the builder owns it.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate
from typing import Any, NamedTuple

import numpy as np

from vasimov import joints
from vasimov_edge.policy.interface import PolicyInput

# The term names the fact sheet uses; anything else in the sheet is an error, not something to guess about.
_VECTOR_TERMS: dict[str, tuple[str, tuple[str, ...]]] = {
    # term -> (PolicyInput field, axis labels)
    "base_ang_vel": ("gyro", ("x", "y", "z")),
    "projected_gravity": ("projected_gravity", ("x", "y", "z")),
    "command": ("command", ("vx", "vy", "wz")),
}
_JOINT_POS_PREFIX = "joint_pos_"
_JOINT_VEL_PREFIX = "joint_vel_"
_ACTIONS_TERM = "actions"


class ObservationError(ValueError):
    """A PolicyInput that cannot become a valid observation (wrong shape, non-finite value)."""


class ObsTerm(NamedTuple):
    """One contiguous term of the observation: enough to label each entry and to recompute it by hand."""

    term: str  # fact-sheet term name, e.g. "joint_vel_slot23"
    slice: slice  # where it sits in the 78-vector
    labels: tuple[str, ...]  # joint names (sim names) or axis labels, one per entry
    scale: float  # multiplied after the quantity is computed


def _contract() -> dict[str, Any]:
    return joints.facts()["policy_contract"]


def _policy_joint_names() -> tuple[str, ...]:
    """Policy (action) order as sim names, taken from the joint table and cross-checked against the sheet."""
    names = tuple(joints.SIM_NAMES[i] for i in joints.POLICY_TO_JOINT)
    sheet = tuple(_contract()["action"]["order"])
    if names != sheet:
        raise ValueError(f"policy order in vasimov.joints {names} differs from policy_contract.action.order {sheet}")
    return names


POLICY_JOINT_NAMES: tuple[str, ...] = _policy_joint_names()
ACTION_DIM: int = len(POLICY_JOINT_NAMES)


def _build_layout() -> tuple[ObsTerm, ...]:
    contract = _contract()
    slots: dict[str, dict[str, Any]] = contract["slots"]
    out: list[ObsTerm] = []
    offset = 0
    for row in contract["observation"]:
        term = str(row["term"])
        start, stop = (int(v) for v in row["slice"])
        if term in _VECTOR_TERMS:
            labels = _VECTOR_TERMS[term][1]
        elif term.startswith((_JOINT_POS_PREFIX, _JOINT_VEL_PREFIX)):
            slot = term.removeprefix(_JOINT_POS_PREFIX).removeprefix(_JOINT_VEL_PREFIX)
            if slot not in slots:
                raise ValueError(f"observation term {term!r} names slot {slot!r}; slots in the sheet: {sorted(slots)}")
            labels = tuple(slots[slot]["joints"])
            for name, pidx in zip(labels, slots[slot]["policy_indices"], strict=True):
                if joints.BY_SIM_NAME[name].policy_index != pidx:
                    raise ValueError(
                        f"slot {slot}: {name} has policy index {joints.BY_SIM_NAME[name].policy_index} in "
                        f"vasimov.joints but {pidx} in policy_contract.slots"
                    )
        elif term == _ACTIONS_TERM:
            labels = POLICY_JOINT_NAMES
        else:
            valid = [*_VECTOR_TERMS, f"{_JOINT_POS_PREFIX}<slot>", f"{_JOINT_VEL_PREFIX}<slot>", _ACTIONS_TERM]
            raise ValueError(f"unknown observation term {term!r} in the fact sheet; known: {valid}")
        if start != offset or stop - start != len(labels) or int(row["dim"]) != len(labels):
            raise ValueError(
                f"observation term {term!r}: sheet slice [{start}, {stop}) dim {row['dim']} does not follow the "
                f"previous term (expected start {offset}) or does not match its {len(labels)} labels"
            )
        out.append(ObsTerm(term, slice(start, stop), labels, float(row["scale"])))
        offset = stop
    return tuple(out)


def _validate_layout(layout: Sequence[ObsTerm]) -> int:
    """Check the rules the contract relies on; return the total dimension."""
    total = layout[-1].slice.stop
    expected_dim = int(_contract()["onnx"]["input"]["shape"][-1])
    if total != expected_dim:
        raise ValueError(f"observation layout covers {total} entries; the ONNX input expects {expected_dim}")
    for prefix in (_JOINT_POS_PREFIX, _JOINT_VEL_PREFIX):
        names = [n for t in layout if t.term.startswith(prefix) for n in t.labels]
        if sorted(names) != sorted(POLICY_JOINT_NAMES):
            missing = sorted(set(POLICY_JOINT_NAMES) - set(names))
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"{prefix}* terms must hold each policy joint once; missing {missing}, repeated {dup}")
    return total


LAYOUT: tuple[ObsTerm, ...] = _build_layout()
OBS_DIM: int = _validate_layout(LAYOUT)

ACTION_SCALE: float = float(_contract()["action"]["scale"])


def _default_pos_policy_order() -> np.ndarray:
    """Default pose in policy order from the joint table, checked against the sheet's own policy-order list."""
    v = np.asarray(joints.DEFAULT_POS[joints.POLICY_TO_JOINT], dtype=np.float64)
    sheet = np.asarray(_contract()["action"]["default_joint_pos_policy_order"], dtype=np.float64)
    if not np.allclose(v, sheet, rtol=0.0, atol=1e-12):
        raise ValueError(f"default pose (policy order) from vasimov.joints {v} differs from the sheet's {sheet}")
    v.setflags(write=False)
    return v


DEFAULT_POS_POLICY: np.ndarray = _default_pos_policy_order()


def entry_labels() -> tuple[str, ...]:
    """One ``"term/label"`` string per observation entry (78), for dashboards and plots."""
    return tuple(f"{t.term}/{label}" for t in LAYOUT for label in t.labels)


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
        if t.term in _VECTOR_TERMS:
            src = _VECTOR_TERMS[t.term][0]
            idx = [_SOURCE_OFFSET[src] + k for k in range(len(t.labels))]
        elif t.term.startswith(_JOINT_POS_PREFIX):
            idx = [_SOURCE_OFFSET["q_rel"] + joints.joint_index(n) for n in t.labels]
        elif t.term.startswith(_JOINT_VEL_PREFIX):
            idx = [_SOURCE_OFFSET["qd"] + joints.joint_index(n) for n in t.labels]
        elif t.term == _ACTIONS_TERM:
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
