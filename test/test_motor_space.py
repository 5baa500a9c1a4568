"""The ankle linkage map: fact-sheet values, exact round trips, virtual work, and agreement with menlo-sdk."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from menlo.asimov import robots as sdk_robots

from vasimov import motor_space as ms
from vasimov.joints import ANKLE_PAIRS, DEFAULT_POS, NUM_JOINTS, RANGE_HI, RANGE_LO, facts

finite = st.floats(min_value=-10.0, max_value=10.0, allow_nan=False, allow_infinity=False)
vec25 = arrays(np.float64, NUM_JOINTS, elements=finite)


def test_constants_come_from_the_fact_sheet() -> None:
    c = facts()["ankle_coupling"]
    assert (ms.K_PITCH, ms.K_ROLL) == (c["k_pitch"], c["k_roll"]) == (2.02, 0.8)
    assert (ms.ANKLE_PITCH_LIMIT, ms.ANKLE_ROLL_LIMIT) == (0.35, 0.1)
    # ...and the SDK's own copy of the firmware constants agrees.
    assert (ms.K_PITCH, ms.K_ROLL) == (sdk_robots.ANKLE_K_PITCH, sdk_robots.ANKLE_K_ROLL)
    assert (ms.ANKLE_PITCH_LIMIT, ms.ANKLE_ROLL_LIMIT) == (
        sdk_robots.ANKLE_PITCH_LIMIT_RAD,
        sdk_robots.ANKLE_ROLL_LIMIT_RAD,
    )
    assert ANKLE_PAIRS == sdk_robots.ASIMOV_1_BIPED_ANKLES


def test_default_pose_maps_to_the_sheets_state_frame() -> None:
    pose = facts()["default_standing_pose"]
    np.testing.assert_allclose(ms.joint_to_state(DEFAULT_POS), pose["firmware_order_state_frame_derived"], atol=1e-12)
    # The trajectory wire frame is joint space: the default pose is sent as itself.
    wire = np.array(pose["firmware_order_trajectory_wire_derived"])
    np.testing.assert_allclose(ms.state_to_trajectory_wire(ms.joint_to_state(DEFAULT_POS)), wire, atol=1e-12)
    targets, clamped = ms.trajectory_to_joint_targets(wire)
    assert not clamped
    np.testing.assert_allclose(targets, DEFAULT_POS)


def test_reported_stand_pose_passes_the_sdk_ankle_check() -> None:
    # The SDK refuses a target more than 0.02 rad past the ankle limits; the stand pose must be sendable as reported.
    sdk_robots.check_ankle_limits(tuple(ms.joint_to_state(DEFAULT_POS)))


@pytest.mark.parametrize(
    ("pitch", "roll", "a", "b"),
    [
        (0.0, 0.0, 0.0, 0.0),
        (-0.3, 0.0, -0.606, 0.606),
        (0.3, 0.0, 0.606, -0.606),
        (0.0, 0.1, -0.08, -0.08),
        (0.1, -0.05, 0.202 + 0.04, -0.202 + 0.04),
    ],
)
def test_ankle_table(pitch: float, roll: float, a: float, b: float) -> None:
    ma, mb = ms.ankle_joint_to_motor(pitch, roll)
    assert (float(ma), float(mb)) == pytest.approx((a, b), abs=1e-12)
    p, r = ms.ankle_motor_to_joint(a, b)
    assert (float(p), float(r)) == pytest.approx((pitch, roll), abs=1e-12)


@settings(max_examples=200)
@given(vec25)
def test_position_and_velocity_round_trip(q: np.ndarray) -> None:
    np.testing.assert_allclose(ms.state_to_joint(ms.joint_to_state(q)), q, atol=1e-12)
    np.testing.assert_allclose(ms.joint_to_state(ms.state_to_joint(q)), q, atol=1e-12)
    np.testing.assert_allclose(ms.state_to_joint_velocity(ms.joint_to_state_velocity(q)), q, atol=1e-12)
    # Only the ankle slots change.
    others = np.ones(NUM_JOINTS, dtype=bool)
    for i, j in ANKLE_PAIRS:
        others[[i, j]] = False
    np.testing.assert_array_equal(ms.joint_to_state(q)[others], q[others])


@settings(max_examples=200)
@given(vec25, vec25)
def test_torque_round_trip_and_virtual_work(tau: np.ndarray, qd: np.ndarray) -> None:
    tau_m = ms.joint_to_state_torque(tau)
    np.testing.assert_allclose(ms.state_to_joint_torque(tau_m), tau, atol=1e-9)
    # Power is the same in both frames: tau_joint . qd_joint == tau_motor . qd_motor.
    assert float(tau @ qd) == pytest.approx(float(tau_m @ ms.joint_to_state_velocity(qd)), abs=1e-8)


def test_torque_formulas_from_the_sheet() -> None:
    tau = np.zeros(NUM_JOINTS)
    i, j = ANKLE_PAIRS[0]
    tau[i], tau[j] = 10.0, 4.0  # pitch, roll
    m = ms.joint_to_state_torque(tau)
    assert m[i] == pytest.approx(0.5 * (10.0 / 2.02 - 4.0 / 0.8))
    assert m[j] == pytest.approx(0.5 * (-10.0 / 2.02 - 4.0 / 0.8))
    back = ms.state_to_joint_torque(m)
    assert back[i] == pytest.approx(2.02 * (m[i] - m[j]))
    assert back[j] == pytest.approx(-0.8 * (m[i] + m[j]))


@settings(max_examples=200)
@given(
    st.lists(
        st.tuples(st.floats(-0.35, 0.35), st.floats(-0.1, 0.1)),
        min_size=len(ANKLE_PAIRS),
        max_size=len(ANKLE_PAIRS),
    )
)
def test_sdk_wire_conversion_is_undone_exactly(ankles: list[tuple[float, float]]) -> None:
    """What the SDK sends for a motor-frame target comes back as that target after the firmware's conversion."""
    q = DEFAULT_POS.copy()
    for (i, j), (p, r) in zip(ANKLE_PAIRS, ankles, strict=True):
        q[i], q[j] = p, r
    reported = ms.joint_to_state(q)
    wire = np.array(sdk_robots.trajectory_wire_positions(tuple(reported)))
    np.testing.assert_allclose(wire, ms.state_to_trajectory_wire(reported), atol=1e-12)
    targets, _ = ms.trajectory_to_joint_targets(wire)
    np.testing.assert_allclose(ms.joint_to_state(targets), reported, atol=1e-9)


def test_trajectory_clamps_ankles_to_firmware_limits() -> None:
    wire = DEFAULT_POS.copy()
    (lp, lr), (rp, rr) = ANKLE_PAIRS
    wire[lp], wire[lr], wire[rp], wire[rr] = 0.5, -0.3, -0.36, 0.1
    targets, clamped = ms.trajectory_to_joint_targets(wire)
    assert clamped
    assert (targets[lp], targets[lr], targets[rp], targets[rr]) == (0.35, -0.1, -0.35, 0.1)
    # The motor targets the firmware would send stay within what the clamp allows.
    a, b = ms.ankle_joint_to_motor(targets[lp], targets[lr])
    assert float(a) == pytest.approx(2.02 * 0.35 + 0.8 * 0.1)
    assert float(b) == pytest.approx(-2.02 * 0.35 + 0.8 * 0.1)


def test_trajectory_clamps_other_joints_to_their_ranges() -> None:
    wire = DEFAULT_POS.copy()
    wire[0] = 10.0
    wire[3] = -1.0  # left knee range starts at 0
    targets, clamped = ms.trajectory_to_joint_targets(wire)
    assert clamped
    assert targets[0] == RANGE_HI[0]
    assert targets[3] == RANGE_LO[3]
    inside, clamped_inside = ms.trajectory_to_joint_targets(DEFAULT_POS)
    assert not clamped_inside
    np.testing.assert_array_equal(inside, DEFAULT_POS)


def test_batches_and_inputs_untouched() -> None:
    batch = np.stack([DEFAULT_POS, -DEFAULT_POS, np.zeros(NUM_JOINTS)])
    before = batch.copy()
    out = ms.joint_to_state(batch)
    assert out.shape == batch.shape
    np.testing.assert_array_equal(batch, before)
    for k in range(batch.shape[0]):
        np.testing.assert_allclose(out[k], ms.joint_to_state(batch[k]))
    ms.trajectory_to_joint_targets(before)
    ms.joint_to_state_torque(before)
    np.testing.assert_array_equal(batch, before)


@pytest.mark.parametrize(
    "fn",
    [
        ms.joint_to_state,
        ms.state_to_joint,
        ms.joint_to_state_velocity,
        ms.state_to_joint_velocity,
        ms.joint_to_state_torque,
        ms.state_to_joint_torque,
        ms.trajectory_to_joint_targets,
    ],
)
@pytest.mark.parametrize("bad", [np.zeros(24), np.zeros(26), np.float64(1.0), np.zeros((25, 2))])
def test_wrong_length_is_a_value_error(fn, bad) -> None:
    with pytest.raises(ValueError, match="25"):
        fn(bad)
