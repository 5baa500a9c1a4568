"""The 78-D observation: layout labels/slices from the fact sheet, and each entry's quantity, scale, sign and joint.

Expectations are recomputed from names (the sheet's term names and slot joint lists, resolved with
``vasimov.joints.joint_index``), not from the builder's own index tables.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from vasimov import joints
from vasimov.policy_contract import ACTION_DIM, LAYOUT, OBS_DIM, entry_labels
from vasimov_edge.policy.interface import PolicyInput
from vasimov_edge.policy.observation import ObservationBuilder, ObservationError

CONTRACT = joints.facts()["policy_contract"]
AXIS_FIELD = {"base_ang_vel": "gyro", "projected_gravity": "projected_gravity", "command": "command"}


def distinct_input(*, active: bool = True) -> PolicyInput:
    """Every joint and axis gets its own value and sign, so a swapped joint or axis changes some entry."""
    n = joints.NUM_JOINTS
    k = np.arange(n, dtype=np.float64)
    sign = np.where(k % 2 == 0, 1.0, -1.0)
    return PolicyInput(
        tick=7,
        sim_time=0.14,
        gyro=np.array([0.31, -0.72, 1.13]),
        projected_gravity=np.array([0.05, -0.11, -0.99]),
        quat=np.array([1.0, 0.0, 0.0, 0.0]),
        command=np.array([0.4, -0.2, 0.3]),
        q=joints.DEFAULT_POS + sign * 0.01 * (k + 1),
        qd=sign * 0.7 * (k + 1) + 0.05,
        active=active,
    )


def expected_entry(term: str, label: str, inp: PolicyInput, prev_action: np.ndarray) -> float:
    """What the contract says entry (term, label) must hold, computed from names only."""
    scale = next(float(r["scale"]) for r in CONTRACT["observation"] if r["term"] == term)
    if term in AXIS_FIELD:
        axis_labels = {"base_ang_vel": "xyz", "projected_gravity": "xyz", "command": ("vx", "vy", "wz")}[term]
        return scale * float(getattr(inp, AXIS_FIELD[term])[list(axis_labels).index(label)])
    if term.startswith("joint_pos_"):
        j = joints.joint_index(label)
        return scale * float(inp.q[j] - joints.DEFAULT_POS[j])
    if term.startswith("joint_vel_"):
        return scale * float(inp.qd[joints.joint_index(label)])
    assert term == "actions"
    return scale * float(prev_action[joints.BY_SIM_NAME[label].policy_index])


def test_dims_and_slices_tile_the_vector() -> None:
    assert OBS_DIM == 78 == CONTRACT["onnx"]["input"]["shape"][-1]
    assert ACTION_DIM == 23 == CONTRACT["action"]["dim"]
    offset = 0
    for term in LAYOUT:
        assert term.slice.start == offset
        assert term.slice.stop - term.slice.start == len(term.labels)
        offset = term.slice.stop
    assert offset == OBS_DIM
    assert len(entry_labels()) == OBS_DIM
    assert len(set(entry_labels())) == OBS_DIM  # every entry has its own label


def test_layout_matches_sheet_terms_scales_and_slot_joints() -> None:
    rows = CONTRACT["observation"]
    assert [t.term for t in LAYOUT] == [r["term"] for r in rows]
    for term, row in zip(LAYOUT, rows, strict=True):
        assert [term.slice.start, term.slice.stop] == row["slice"]
        assert term.scale == row["scale"]
        for prefix in ("joint_pos_", "joint_vel_"):
            if term.term.startswith(prefix):
                assert list(term.labels) == CONTRACT["slots"][term.term.removeprefix(prefix)]["joints"]
    scales = {t.term: t.scale for t in LAYOUT}
    assert scales["base_ang_vel"] == 0.25
    assert all(scales[f"joint_vel_{s}"] == 0.1 for s in CONTRACT["slots"])
    assert all(scales[f"joint_pos_{s}"] == 1.0 for s in CONTRACT["slots"])


@pytest.mark.parametrize("prefix", ["joint_pos_", "joint_vel_"])
def test_each_policy_joint_once_per_group_and_neck_absent(prefix: str) -> None:
    names = [n for t in LAYOUT if t.term.startswith(prefix) for n in t.labels]
    policy_names = [joints.SIM_NAMES[j] for j in joints.POLICY_TO_JOINT]
    assert sorted(names) == sorted(policy_names)
    assert len(names) == len(set(names)) == 23
    for j in joints.NON_POLICY_JOINTS:
        assert joints.SIM_NAMES[j] not in names


def test_slot_policy_indices_agree_with_joint_table() -> None:
    for slot in CONTRACT["slots"].values():
        for name, pidx in zip(slot["joints"], slot["policy_indices"], strict=True):
            assert joints.SIM_NAMES[joints.POLICY_TO_JOINT[pidx]] == name


def test_actions_term_is_policy_order() -> None:
    actions = next(t for t in LAYOUT if t.term == "actions")
    assert list(actions.labels) == CONTRACT["action"]["order"]
    assert list(actions.labels) == [joints.SIM_NAMES[j] for j in joints.POLICY_TO_JOINT]


def test_every_entry_holds_its_named_quantity_scaled() -> None:
    inp = distinct_input()
    builder = ObservationBuilder()
    prev = np.linspace(-0.9, 1.3, ACTION_DIM).astype(np.float32)
    builder.record_action(prev)
    obs = builder.build(inp)
    assert obs.dtype == np.float32 and obs.shape == (OBS_DIM,)
    k = 0
    for term in builder.layout:
        for label in term.labels:
            want = expected_entry(term.term, label, inp, prev)
            assert obs[k] == pytest.approx(want, rel=1e-6, abs=1e-7), f"entry {k} {term.term}/{label}"
            k += 1
    # The distinct input makes every joint entry distinct, so a permutation inside a slot could not pass above.
    joint_part = obs[LAYOUT[3].slice.start : LAYOUT[-1].slice.start]
    assert len(np.unique(joint_part)) == joint_part.size


def test_spot_checks_from_sheet_positions() -> None:
    """A few entries located by the sheet's slice starts and slot lists, with the sign written out."""
    inp = distinct_input()
    obs = ObservationBuilder().build(inp)
    pos01 = next(r for r in CONTRACT["observation"] if r["term"] == "joint_pos_slot01")["slice"][0]
    vel45 = next(r for r in CONTRACT["observation"] if r["term"] == "joint_vel_slot45")["slice"][0]
    knee_slot = CONTRACT["slots"]["slot23"]["joints"].index("left_knee_joint")
    pos23 = next(r for r in CONTRACT["observation"] if r["term"] == "joint_pos_slot23")["slice"][0]
    lhp = joints.joint_index("left_hip_pitch_joint")
    lkn = joints.joint_index("left_knee_joint")
    rar = joints.joint_index("right_ankle_roll_joint")
    rar_slot = CONTRACT["slots"]["slot45"]["joints"].index("right_ankle_roll_joint")
    assert obs[0] == pytest.approx(0.25 * 0.31)
    assert obs[1] == pytest.approx(0.25 * -0.72)
    assert obs[5] == pytest.approx(-0.99)
    assert obs[8] == pytest.approx(0.3)
    assert obs[pos01] == pytest.approx(inp.q[lhp] - joints.DEFAULT_POS[lhp])
    assert obs[pos23 + knee_slot] == pytest.approx(inp.q[lkn] - joints.DEFAULT_POS[lkn])
    assert obs[vel45 + rar_slot] == pytest.approx(0.1 * inp.qd[rar])


def test_at_default_pose_joint_positions_are_zero() -> None:
    inp = distinct_input()
    still = replace(inp, q=joints.DEFAULT_POS.copy(), qd=np.zeros(joints.NUM_JOINTS))
    obs = ObservationBuilder().build(still)
    for t in LAYOUT:
        if t.term.startswith(("joint_pos_", "joint_vel_", "actions")):
            assert np.all(obs[t.slice] == 0.0), t.term


def test_neck_motion_does_not_reach_the_observation() -> None:
    base = distinct_input()
    qn = base.q.copy()
    for j in joints.NON_POLICY_JOINTS:
        qn[j] += 0.5
    moved = replace(base, q=qn)
    np.testing.assert_array_equal(ObservationBuilder().build(base), ObservationBuilder().build(moved))


def test_previous_action_feedback_and_reset() -> None:
    builder = ObservationBuilder()
    inp = distinct_input()
    act_slice = next(t.slice for t in LAYOUT if t.term == "actions")
    assert np.all(builder.build(inp)[act_slice] == 0.0)
    a = np.arange(ACTION_DIM, dtype=np.float32) / 10.0
    builder.record_action(a)
    np.testing.assert_array_equal(builder.build(inp)[act_slice], a)
    np.testing.assert_array_equal(builder.previous_action, a)
    builder.reset()
    assert np.all(builder.build(inp)[act_slice] == 0.0)


def test_returned_observation_is_not_shared() -> None:
    builder = ObservationBuilder()
    inp = distinct_input()
    first = builder.build(inp)
    keep = first.copy()
    builder.record_action(np.ones(ACTION_DIM))
    builder.build(inp)
    np.testing.assert_array_equal(first, keep)


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("q", np.zeros(23), "PolicyInput.q must have shape"),
        ("qd", np.zeros(26), "PolicyInput.qd must have shape"),
        ("gyro", np.zeros(4), "PolicyInput.gyro"),
        ("command", np.zeros(2), "PolicyInput.command"),
    ],
)
def test_bad_shapes_are_rejected(field: str, value: np.ndarray, match: str) -> None:
    bad = replace(distinct_input(), **{field: value})
    with pytest.raises(ObservationError, match=match):
        ObservationBuilder().build(bad)


def test_non_finite_input_names_the_entry() -> None:
    qd = distinct_input().qd.copy()
    qd[joints.joint_index("right_knee_joint")] = np.nan
    bad = replace(distinct_input(), qd=qd)
    with pytest.raises(ObservationError, match="joint_vel_slot23/right_knee_joint"):
        ObservationBuilder().build(bad)


@pytest.mark.parametrize("action", [np.zeros(22), np.full(23, np.inf)])
def test_bad_previous_action_is_rejected(action: np.ndarray) -> None:
    with pytest.raises(ObservationError):
        ObservationBuilder().record_action(action)
