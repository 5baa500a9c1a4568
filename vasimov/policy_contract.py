"""The official locomotion policy's contract as data: the observation layout, the action order, scale and default.

Everything here is read from ``policy_contract`` in the shipped fact sheet and cross-checked against the joint table
(:mod:`vasimov.joints`) once, at import: the import fails, naming the rule that broke, if the two disagree, rather
than letting anyone feed a silently permuted vector. It sits in the core because more than the policy runner reads
it: the runner's observation builder (``vasimov_edge.policy.observation``) fills the layout, the ONNX backend checks
the network's shapes against it, and the Foxglove layout labels the observation's 78 entries with it.

Terms, in order (see ``policy_contract.observation``): body-frame gyro x0.25, projected gravity, command, joint
position minus default in three slot groups, joint velocity x0.1 in the same groups, and the previous raw action
(policy order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from vasimov import joints

# The term names the fact sheet uses; anything else in the sheet is an error, not something to guess about.
VECTOR_TERMS: dict[str, tuple[str, ...]] = {
    # term -> axis labels
    "base_ang_vel": ("x", "y", "z"),
    "projected_gravity": ("x", "y", "z"),
    "command": ("vx", "vy", "wz"),
}
JOINT_POS_PREFIX = "joint_pos_"
JOINT_VEL_PREFIX = "joint_vel_"
ACTIONS_TERM = "actions"


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
        if term in VECTOR_TERMS:
            labels = VECTOR_TERMS[term]
        elif term.startswith((JOINT_POS_PREFIX, JOINT_VEL_PREFIX)):
            slot = term.removeprefix(JOINT_POS_PREFIX).removeprefix(JOINT_VEL_PREFIX)
            if slot not in slots:
                raise ValueError(f"observation term {term!r} names slot {slot!r}; slots in the sheet: {sorted(slots)}")
            labels = tuple(slots[slot]["joints"])
            for name, pidx in zip(labels, slots[slot]["policy_indices"], strict=True):
                if joints.BY_SIM_NAME[name].policy_index != pidx:
                    raise ValueError(
                        f"slot {slot}: {name} has policy index {joints.BY_SIM_NAME[name].policy_index} in "
                        f"vasimov.joints but {pidx} in policy_contract.slots"
                    )
        elif term == ACTIONS_TERM:
            labels = POLICY_JOINT_NAMES
        else:
            valid = [*VECTOR_TERMS, f"{JOINT_POS_PREFIX}<slot>", f"{JOINT_VEL_PREFIX}<slot>", ACTIONS_TERM]
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
    for prefix in (JOINT_POS_PREFIX, JOINT_VEL_PREFIX):
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
