"""Walker v2's pure parts: the LIPM/DCM laws (step position and timing adaptation), its model frames, its registry
spec. No simulation here; the closed loop is in test_walker_v2_closed_loop.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vasimov_edge.policy.walker import dcm

OMEGA = dcm.omega_of(0.625)
T = 0.4
LIMITS = dcm.StepLimits()


def test_dcm_runs_away_from_the_zmp_exponentially():
    xi = dcm.propagate_dcm(np.array([0.05, 0.0]), np.zeros(2), OMEGA, 0.3)
    assert xi[0] == pytest.approx(0.05 * math.exp(OMEGA * 0.3))
    assert xi[1] == 0.0


def test_lipm_step_matches_the_dcm_solution():
    """The exact COM update keeps xi_dot = omega (xi - p): the DCM of the updated state is the propagated DCM."""
    c, v, p = np.array([0.02, -0.01]), np.array([0.1, 0.05]), np.array([0.0, 0.01])
    c1, v1 = dcm.lipm_step(c, v, p, OMEGA, 0.02)
    assert dcm.dcm_of(c1, v1, OMEGA) == pytest.approx(dcm.propagate_dcm(dcm.dcm_of(c, v, OMEGA), p, OMEGA, 0.02))


def test_nominal_offset_is_periodic():
    """Walking the nominal gait (foot at xi_T - b every step) reproduces the same offset step after step."""
    v, w = np.array([0.3, 0.1]), 0.2
    stance, side = np.array([0.0, 0.1]), -1.0  # standing on the left, the right foot swings next
    xi = stance + dcm.nominal_offset(v, w, -side, OMEGA, T)  # the offset the left foot landed with
    for _ in range(6):
        b = dcm.nominal_offset(v, w, side, OMEGA, T)
        xi_t = dcm.propagate_dcm(xi, stance, OMEGA, T)
        foot = xi_t - b
        step = foot - stance
        assert step[0] == pytest.approx(v[0] * T)
        assert step[1] == pytest.approx(side * w + v[1] * T)
        stance, xi, side = foot, xi_t, -side


def test_step_adaptation_moves_the_foothold_with_the_dcm_error():
    b = dcm.nominal_offset(np.zeros(2), 0.2, -1.0, OMEGA, T)
    stance = np.array([0.0, 0.1])
    xi0 = stance + dcm.nominal_offset(np.zeros(2), 0.2, 1.0, OMEGA, T)
    nominal = dcm.adapt_step(xi0, stance, stance, 0.0, b, -1.0, 0.2, 0.12, OMEGA, LIMITS)
    pushed = dcm.adapt_step(xi0 + np.array([0.02, 0.0]), stance, stance, 0.0, b, -1.0, 0.2, 0.12, OMEGA, LIMITS)
    assert pushed.pos[0] - nominal.pos[0] == pytest.approx(0.02 * math.exp(OMEGA * 0.2))
    assert nominal.remaining == pushed.remaining == 0.2


def test_timing_adaptation_lands_sooner_when_the_foothold_is_out_of_reach():
    b = dcm.nominal_offset(np.zeros(2), 0.2, -1.0, OMEGA, T)
    stance = np.array([0.0, 0.1])
    xi = stance + np.array([0.12, -0.03])  # a hard push forward
    late = dcm.adapt_step(xi, stance, stance, 0.0, b, -1.0, 0.3, 0.3, OMEGA, LIMITS)
    fh = dcm.adapt_step(xi, stance, stance, 0.0, b, -1.0, 0.3, 0.12, OMEGA, LIMITS)
    assert late.excess > 0.0
    assert fh.remaining < 0.3
    assert fh.excess < late.excess
    rel = fh.pos - stance
    assert -LIMITS.max_backward - 1e-9 <= rel[0] <= LIMITS.max_forward + 1e-9
    assert LIMITS.min_width - 1e-9 <= -rel[1] <= LIMITS.max_width + 1e-9


def test_step_limits_keep_the_feet_apart_on_either_side():
    assert LIMITS.clip(np.array([0.0, 0.02]), -1.0)[1] == pytest.approx(-LIMITS.min_width)
    assert LIMITS.clip(np.array([0.5, 0.02]), 1.0) == pytest.approx([LIMITS.max_forward, LIMITS.min_width])
    assert LIMITS.excess(np.array([0.0, 0.2]), 1.0) == 0.0


def test_zmp_command_pushes_the_dcm_back_toward_its_reference():
    p = dcm.zmp_command(np.zeros(2), np.array([0.02, 0.0]), np.zeros(2), 3.0, OMEGA)
    xi_dot = OMEGA * (np.array([0.02, 0.0]) - p)
    assert xi_dot[0] < 0.0


def test_clip_to_sole_respects_the_rotation():
    p = dcm.clip_to_sole(np.array([0.0, 1.0]), np.zeros(2), math.pi / 2, 0.08, 0.02)
    assert p == pytest.approx([0.0, 0.08])


def test_omega_rejects_a_non_positive_height():
    with pytest.raises(ValueError):
        dcm.omega_of(0.0)


def test_walker_urdf_has_the_frames_placo_needs():
    placo = pytest.importorskip("placo")
    from vasimov_edge.policy.walker.model import soles, walker_urdf

    robot = placo.HumanoidRobot("", placo.Flags.ignore_collisions, walker_urdf())
    assert robot.total_mass() == pytest.approx(32.2249, abs=1e-3)
    sole = soles()["left"]
    assert sole.half_length == pytest.approx((0.122 + 0.045) / 2)
    assert sole.half_width == pytest.approx(0.020)
    for frame in ("left_foot", "right_foot", "trunk"):
        assert robot.get_T_world_frame(frame).shape == (4, 4)


def test_registry_builds_walker_v2_beside_the_default():
    pytest.importorskip("placo")
    from vasimov_edge.policy.registry import make_backend

    assert make_backend("builtin-v2").name == "builtin-v2"
    assert make_backend("builtin").name == "builtin"


def test_heel_off_rolls_the_sole_target_about_its_toe_line_and_puts_the_zmp_there():
    """Walking forward, a stance sole with the COM command well ahead of it is rolled onto its toe line: the foot
    task's toe point stays where the flat sole's toe is, the heel rises, and the commanded ZMP moves onto the toe line
    (the heel carries nothing). Behind the start distance, or strafing, the sole stays flat and the ZMP is left
    alone."""
    pytest.importorskip("placo")
    from vasimov_edge.policy.walker import WalkerV2
    from vasimov_edge.policy.walker.controller import FootPlan

    walker = WalkerV2()
    cfg, hl = walker.cfg, walker.sole.half_length
    yaw = 0.3
    fwd = np.array([math.cos(yaw), math.sin(yaw)])
    walker.feet = {"left": FootPlan(np.array([0.1, 0.1, 0.0]), yaw), "right": FootPlan(np.array([0.0, -0.1, 0.0]), yaw)}
    centre = walker.feet["left"].pos[:2].copy()
    p = centre + 0.01 * fwd
    walker.gait_vel = np.array([0.0, 0.2])  # strafing: never rolled
    walker.com_cmd = centre + 0.2 * fwd
    assert np.array_equal(walker._heel_off("left", p), p) and walker.feet["left"].pitch == 0.0
    walker.gait_vel = np.array([cfg.heel_off_min_speed, 0.0])  # walking forward

    walker.com_cmd = centre + 0.5 * cfg.heel_off_start * fwd  # not far enough ahead: flat
    assert np.array_equal(walker._heel_off("left", p), p) and walker.feet["left"].pitch == 0.0

    walker.com_cmd = centre + (cfg.heel_off_start + 0.05) * fwd
    zmp = walker._heel_off("left", p)
    pitch = walker.feet["left"].pitch
    assert pitch == pytest.approx(min(cfg.heel_off_gain * 0.05, cfg.heel_off_max))
    assert float((zmp - centre) @ fwd) == pytest.approx(hl - cfg.zmp_margin)  # on the toe line, inside the margin

    body = walker.body
    body._set_targets(walker.feet, walker.com_cmd, yaw)
    t = np.asarray(body.foot_task["left"].T_world_frame)
    toe_flat = np.append(centre + hl * fwd, 0.0)
    np.testing.assert_allclose(t[:3, :3] @ np.array([hl, 0.0, 0.0]) + t[:3, 3], toe_flat, atol=1e-12)
    heel = t[:3, :3] @ np.array([-hl, 0.0, 0.0]) + t[:3, 3]
    assert heel[2] == pytest.approx(2.0 * hl * math.sin(pitch))


def test_walking_backward_the_swing_sole_lands_on_its_toe_and_the_stance_sole_rolls_as_heel_off_does():
    """Walking backward the new sole lands behind the body, where a flat sole would need more ankle dorsiflexion than
    the 0.35 rad stop: over the second half of its swing it rolls onto its toe line by the roll heel-off gives a
    stance sole at the foothold, and as the stance sole it keeps the heel-off rule, flattening as the body passes
    over it. With ``toe_landing`` off (or walking forward) the swing sole comes down flat."""
    pytest.importorskip("placo")
    from dataclasses import replace

    from vasimov_edge.policy.walker import WalkerV2
    from vasimov_edge.policy.walker.config import WalkerConfig
    from vasimov_edge.policy.walker.controller import FootPlan

    def late_swing(cfg: WalkerConfig, vx: float) -> tuple[WalkerV2, float]:
        walker = WalkerV2(cfg)
        walker.feet = {"left": FootPlan(np.array([0.0, 0.1, 0.0]), 0.0),
                       "right": FootPlan(np.array([0.0, -0.1, 0.0]), 0.0)}
        walker.gait_vel = np.array([vx, 0.0])
        walker.com_cmd = np.array([0.0, 0.0])
        walker.step_period, walker.swing_t0, walker.t_step = 0.4, 0.0, 0.36  # 90 % of the swing done
        target = np.array([-0.15, 0.1])  # the foothold 15 cm behind the COM command
        walker._move_swing("left", target, 0.0, 0.04)
        return walker, walker._roll_for(target, 0.0)

    on = replace(WalkerConfig(), toe_landing=True)
    walker, roll = late_swing(on, -0.3)
    assert roll == pytest.approx(min(on.heel_off_gain * (0.15 - on.heel_off_start), on.heel_off_max))
    assert walker.feet["left"].pitch == pytest.approx(roll)  # fully rolled by 90 % of the swing
    assert late_swing(replace(on, toe_landing=False), -0.3)[0].feet["left"].pitch == 0.0
    assert late_swing(on, 0.3)[0].feet["left"].pitch == 0.0  # forward: lands flat

    # as the stance sole, walking backward: rolled while the COM command is ahead of it, flat once it is over it
    walker.feet["left"].pos[:2] = np.array([-0.15, 0.1])
    walker._heel_off("left", np.array([-0.15, 0.1]))
    assert walker.feet["left"].pitch == pytest.approx(roll)
    walker.com_cmd = np.array([-0.15, 0.0])
    walker._heel_off("left", np.array([-0.15, 0.1]))
    assert walker.feet["left"].pitch == 0.0


def test_ground_following_pitches_the_sole_targets_and_raises_footholds_along_the_followed_pitch():
    """Opt-in ground following: in single support the stance sole's ground pitch moves toward its measured pitch,
    except within the dead band (level ground); the sole task is pitched by it (toe up), the next foothold continues
    the stance sole's height along it, and the COM target rises by the soles' mean ground height. Off by default:
    nothing moves."""
    pytest.importorskip("placo")
    from types import SimpleNamespace

    from vasimov_edge.policy.walker import WalkerV2
    from vasimov_edge.policy.walker.config import WalkerConfig
    from vasimov_edge.policy.walker.controller import FootPlan

    def walking(cfg: WalkerConfig) -> WalkerV2:
        w = WalkerV2(cfg)
        w.feet = {"left": FootPlan(np.array([0.1, 0.1, 0.02]), 0.0), "right": FootPlan(np.array([0.0, -0.1, 0.0]), 0.0)}
        w.mode, w.stance = "walk", "left"
        w.swing_start = FootPlan(np.array([0.0, -0.1, 0.0]), 0.0)  # single support
        return w

    uphill = SimpleNamespace(feet_pitch={"left": 0.1, "right": 0.0})
    level = SimpleNamespace(feet_pitch={"left": 0.03, "right": 0.0})  # within the 0.05 rad dead band
    off = walking(WalkerConfig())
    off._follow_ground(uphill)
    assert off.feet["left"].ground == 0.0 and off._ground_z(np.array([0.3, 0.1]), "left") == 0.0
    w = walking(WalkerConfig(ground_pitch_follow=0.5, ground_height_follow=True))
    w._follow_ground(uphill)
    assert w.feet["left"].ground == pytest.approx(0.05)
    assert w.feet["right"].ground == 0.0  # the swinging sole is not measured
    w._follow_ground(level)
    assert w.feet["left"].ground == pytest.approx(0.025)  # level ground: back toward 0
    w.feet["left"].ground = 0.1
    assert w._ground_z(np.array([0.3, 0.1]), "left") == pytest.approx(0.02 + math.tan(0.1) * 0.2)
    assert w._ground_height() == pytest.approx(0.5 * (0.02 + 0.0))  # the swinging sole counts where it lifted off
    body = w.body
    body._set_targets(w.feet, np.zeros(2), 0.0, w._ground_height())
    x_axis = np.asarray(body.foot_task["left"].T_world_frame)[:3, 0]
    assert math.atan2(x_axis[2], x_axis[0]) == pytest.approx(0.1)  # toe up by the followed pitch
    assert np.asarray(body.com_task.target_world)[2] == pytest.approx(w.cfg.com_height + 0.01)
    for bad in ({"ground_pitch_follow": 1.5}, {"max_ground_pitch": -0.1}, {"ground_pitch_deadband": float("nan")}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            WalkerConfig(**bad)


def test_land_depth_ends_the_swing_target_below_the_floor_and_is_refused_out_of_range():
    """``land_depth`` ramps the swing sole's height target down over the second half of the swing, to that depth below
    the floor at the timed touchdown (the sole lags its target by 1-2 ticks); 0 (the default) leaves the raised cosine
    alone. A depth below zero or deeper than the swing is high is refused by name."""
    pytest.importorskip("placo")
    from dataclasses import replace

    from vasimov_edge.policy.walker import WalkerV2
    from vasimov_edge.policy.walker.config import WalkerConfig
    from vasimov_edge.policy.walker.controller import FootPlan

    def swing_z(cfg: WalkerConfig, t_step: float) -> float:
        walker = WalkerV2(cfg)
        walker.feet = {"left": FootPlan(np.array([0.0, 0.1, 0.0]), 0.0),
                       "right": FootPlan(np.array([0.0, -0.1, 0.0]), 0.0)}
        walker.gait_vel = np.array([0.2, 0.0])
        walker.step_period, walker.swing_t0, walker.t_step = 0.4, 0.0, t_step
        walker._move_swing("left", np.array([0.1, 0.1]), 0.0, 0.4 - t_step)
        return float(walker.feet["left"].pos[2])

    cfg = WalkerConfig()
    deep = replace(cfg, land_depth=0.006)
    assert swing_z(cfg, 0.4) == pytest.approx(0.0, abs=1e-12)
    assert swing_z(deep, 0.4) == pytest.approx(-0.006)  # at the timed touchdown
    assert swing_z(deep, 0.3) == pytest.approx(swing_z(cfg, 0.3) - 0.003)  # half-way down the ramp
    assert swing_z(deep, 0.1) == pytest.approx(swing_z(cfg, 0.1))  # the first half is untouched
    for bad in (-0.001, cfg.swing_height + 0.001, float("nan")):
        with pytest.raises(ValueError, match="land_depth"):
            replace(cfg, land_depth=bad)
