"""The recovery chain's state machine alone (vasimov_edge.recovery): classification, blends, phases, stalls and
retries, driven by synthetic IMU readings and joint positions. No physics, no rclpy."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from vasimov.joints import DEFAULT_POS, STAND_KP
from vasimov_edge import getup_poses
from vasimov_edge.recovery import (
    ARM_JOINTS,
    LEG_JOINTS,
    Lying,
    Phase,
    RecoveryChain,
    RecoveryParams,
    classify,
    fall_direction,
    quintic,
)

DT = 0.02
BACK = np.array([-1.0, 0.0, 0.0])
FRONT = np.array([1.0, 0.0, 0.0])
SIDE = np.array([0.0, 1.0, 0.0])
UPRIGHT = np.array([0.0, 0.0, -1.0])
STILL = np.zeros(3)


def test_classify_reads_the_gravity_direction() -> None:
    p = RecoveryParams()
    assert classify(BACK, p) is Lying.BACK
    assert classify(FRONT, p) is Lying.FRONT
    assert classify(SIDE, p) is Lying.SIDE
    assert classify(np.array([0.0, -0.9, 0.4]), p) is Lying.SIDE
    assert classify(UPRIGHT, p) is Lying.UPRIGHT
    assert classify(np.array([0.3, 0.0, -0.95]), p) is Lying.UPRIGHT


def test_quintic_blend_is_smooth_and_bounded() -> None:
    assert quintic(0.0) == 0.0 and quintic(1.0) == 1.0 and quintic(-1.0) == 0.0 and quintic(2.0) == 1.0
    assert quintic(0.5) == pytest.approx(0.5)
    s = np.array([quintic(x) for x in np.linspace(0, 1, 101)])
    assert np.all(np.diff(s) >= 0.0)
    h = 1e-4  # zero slope at both ends (minimum jerk)
    assert quintic(h) / h < 1e-6 and (1.0 - quintic(1.0 - h)) / h < 1e-6


def test_fall_trip_by_tilt_or_by_rate_while_tilted() -> None:
    c = RecoveryChain()
    assert c.falling(np.array([0.0, 0.9, -0.43]), None)  # past 60 deg
    assert not c.falling(np.array([0.0, 0.6, -0.8]), STILL)  # 37 deg, still
    assert c.falling(np.array([0.0, 0.6, -0.8]), np.array([2.5, 0.0, 0.0]))  # 37 deg, toppling
    assert not c.falling(UPRIGHT, np.array([2.5, 0.0, 0.0]))  # upright: a fast turn is no fall


def _run(c: RecoveryChain, t: float, seconds: float, g: np.ndarray, *, track: bool = True,
         q: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """Tick the chain; with ``track`` the joints follow the targets exactly (ideal motors)."""
    q = DEFAULT_POS.copy() if q is None else q
    for _ in range(round(seconds / DT)):
        out = c.step(t, q, g, STILL)
        if out is not None and track:
            q = out.position.copy()
        t += DT
        if not c.active:
            break
    return t, q


def test_fall_direction_picks_the_protective_pose() -> None:
    assert fall_direction(np.array([0.5, 0.0, -0.87])) == "front"  # tipping forward
    assert fall_direction(np.array([0.4, 0.3, -0.87])) == "front"  # forward more than sideways
    assert fall_direction(np.array([0.3, 0.4, -0.87])) == "other"  # sideways more than forward
    assert fall_direction(np.array([-0.5, 0.0, -0.87])) == "other"  # backward
    assert fall_direction(np.array([0.0, -0.5, -0.87])) == "other"
    assert fall_direction(None) == "other"
    front, other = getup_poses.protective_pose("front"), getup_poses.protective_pose("other")
    assert not np.allclose(front[LEG_JOINTS], other[LEG_JOINTS])  # forward: kneel, otherwise crouch
    np.testing.assert_allclose(front[ARM_JOINTS], other[ARM_JOINTS])  # arms forward in both


@pytest.mark.parametrize(("g_trip", "direction"), [(np.array([0.5, 0.0, -0.87]), "front"),
                                                    (np.array([-0.5, 0.0, -0.87]), "other")])
def test_fall_protects_then_settles_and_picks_the_front_sequence(g_trip: np.ndarray, direction: str) -> None:
    c = RecoveryChain()
    c.start_fall(0.0, DEFAULT_POS, g_trip)
    out = c.step(0.0, DEFAULT_POS, np.array([0.5, 0.0, -0.3]), np.array([3.0, 0.0, 0.0]))
    assert c.phase is Phase.FALLING and out is not None
    np.testing.assert_allclose(out.position, DEFAULT_POS)  # blended from where the joints are
    assert np.all(out.kp[LEG_JOINTS] < STAND_KP[LEG_JOINTS])  # compliant landing on the legs
    assert np.all(out.kp[ARM_JOINTS] > STAND_KP[ARM_JOINTS])  # the arms catch the body
    assert np.all(out.kp <= 2.0 * STAND_KP)  # never above the chain's cap
    out = c.step(0.3, DEFAULT_POS, np.array([0.8, 0.0, 0.0]), np.array([3.0, 0.0, 0.0]))
    assert c.phase is Phase.FALLING and out is not None
    np.testing.assert_allclose(out.position, getup_poses.protective_pose(direction))  # the trip's direction holds
    t = 0.3 + DT
    while c.phase is Phase.FALLING and t < 2.0:
        c.step(t, DEFAULT_POS, FRONT, STILL)
        t += DT
    assert c.phase is Phase.SETTLING
    t, _ = _run(c, t, 1.0, FRONT)
    assert c.phase is Phase.GETUP_FRONT


def test_front_get_up_runs_every_key_pose_then_stands_and_is_done() -> None:
    c = RecoveryChain()
    c.start_getup(0.0, DEFAULT_POS)
    t, q = _run(c, 0.0, 0.7, FRONT)
    assert c.phase is Phase.GETUP_FRONT
    total = sum(k.move_s + k.hold_s for k in getup_poses.FRONT)
    t, q = _run(c, t, total + 0.1, FRONT, q=q)
    assert c.phase is Phase.STANDING_UP
    t, q = _run(c, t, 3.0, UPRIGHT, q=q)
    assert c.done and c.phase is Phase.IDLE and c.retries == 0
    np.testing.assert_allclose(q, DEFAULT_POS, atol=1e-6)


def test_back_rolls_then_settles_again() -> None:
    c = RecoveryChain()
    c.start_getup(0.0, DEFAULT_POS)
    t, q = _run(c, 0.0, 0.7, BACK)
    assert c.phase is Phase.GETUP_BACK
    total = sum(k.move_s + k.hold_s for k in getup_poses.BACK)
    t, q = _run(c, t, total + 0.1, BACK, q=q)
    assert c.phase is Phase.SETTLING


def test_side_rolls_first() -> None:
    c = RecoveryChain()
    c.start_getup(0.0, DEFAULT_POS)
    _run(c, 0.0, 0.7, SIDE)
    assert c.phase is Phase.ROLLING


def test_a_stalled_key_pose_retries_and_gives_up_after_max_retries() -> None:
    c = RecoveryChain(RecoveryParams(max_retries=2))
    c.start_getup(0.0, DEFAULT_POS)
    _run(c, 0.0, 60.0, FRONT, track=False)  # the joints never move: every first key pose stalls
    assert c.phase is Phase.FAILED and not c.active
    assert c.stalls == 3 and c.retries == 3


def test_not_upright_after_standing_up_is_a_retry() -> None:
    c = RecoveryChain()
    c.start_getup(0.0, DEFAULT_POS)
    t, q = _run(c, 0.0, 0.7 + sum(k.move_s + k.hold_s for k in getup_poses.FRONT) + 0.1, FRONT)
    assert c.phase is Phase.STANDING_UP
    _run(c, t, RecoveryParams().stand_window_s + 0.2, FRONT, q=q)  # still lying face down
    assert c.retries == 1 and c.phase in (Phase.SETTLING, Phase.GETUP_FRONT)


def test_without_a_gyro_the_rate_comes_from_the_turn_of_gravity() -> None:
    c = RecoveryChain()
    c.start_fall(0.0, DEFAULT_POS)
    t = 0.0
    for k in range(50):  # gravity turning at ~1 rad/s: never at rest
        a = 0.02 * k
        c.step(t, DEFAULT_POS, np.array([np.sin(a), 0.0, -np.cos(a)]), None)
        t += DT
    assert c.phase is Phase.FALLING
    for _ in range(40):
        c.step(t, DEFAULT_POS, FRONT, None)
        t += DT
    assert c.phase is not Phase.FALLING


def test_key_poses_lie_within_the_joint_ranges() -> None:
    from vasimov.joints import RANGE_HI, RANGE_LO

    for k in (*getup_poses.FRONT, *getup_poses.BACK, *getup_poses.SIDE):
        assert np.all(k.position >= RANGE_LO) and np.all(k.position <= RANGE_HI), k.name
        kp, _ = k.gains()
        assert np.all(kp <= 500.0)  # the trajectory gain range
    for direction in getup_poses.FALL_DIRECTIONS:
        p = getup_poses.protective_pose(direction)
        assert np.all(p >= RANGE_LO) and np.all(p <= RANGE_HI), direction


def test_the_chain_cannot_reach_the_simulator() -> None:
    """Pure: no physics engine, no plant, no ROS in the chain's modules (the twin's no-teleport rule starts here)."""
    root = Path(__file__).resolve().parents[1] / "vasimov_edge"
    for name in ("recovery.py", "getup_poses.py"):
        tree = ast.parse((root / name).read_text())
        mods = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        mods |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not any(m.split(".")[0] in ("mujoco", "vasimov_plant", "rclpy", "vasimov_tools") for m in mods), mods
