"""The bench's tracking metrics (vasimov_tools.tracking) on synthetic series whose answers are known: RMS over 1 s
blocks, the time to half of a commanded change, the time to a stop after a zero command, and their edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vasimov_tools import tracking as tk

DT = 0.02


def _series(n: int, fill: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> np.ndarray:
    return np.tile(np.array(fill, dtype=float), (n, 1))


def test_rms_block_error_is_the_rms_of_block_mean_differences():
    cmd = _series(150, (0.4, 0.0, 0.0))  # 3 s
    meas = _series(150, (0.4, 0.0, 0.0))
    meas[:50, 0] = 0.1  # first block 0.3 m/s short, the others exact
    assert tk.rms_block_error(meas, cmd, DT) == pytest.approx(math.sqrt(0.3**2 / 3))
    # sway averages out within a block: a +-0.2 m/s lateral oscillation at 1 Hz costs nothing
    t = np.arange(150) * DT
    swaying = _series(150, (0.4, 0.0, 0.0))
    swaying[:, 1] = 0.2 * np.sin(2.0 * math.pi * t)
    assert tk.rms_block_error(swaying, cmd, DT) == pytest.approx(0.0, abs=1e-9)
    assert tk.rms_block_error(meas, cmd, DT, slice(2, 3)) == 0.0  # yaw only
    assert tk.rms_block_error(meas[:10], cmd[:10], DT) == 0.0  # shorter than a block


def test_command_changes_see_every_change_and_the_first_sample_only_against_an_initial_command():
    cmd = _series(10)
    cmd[3:] = (0.4, 0.0, 0.0)
    cmd[7:] = (0.0, 0.0, 0.0)
    changes = tk.command_changes(cmd)
    assert [(c.index, c.end) for c in changes] == [(3, 7), (7, 10)]
    assert changes[0].before.tolist() == [0.0, 0.0, 0.0] and changes[0].after.tolist() == [0.4, 0.0, 0.0]
    moving = _series(5, (0.2, 0.0, 0.0))
    assert tk.command_changes(moving) == []
    assert [c.index for c in tk.command_changes(moving, initial=np.zeros(3))] == [0]


def test_step_half_time_of_a_first_order_lag_is_its_half_life():
    tau = 0.4  # s: velocity = 0.4 (1 - exp(-t / tau)) after a 0.4 m/s step at t = 1 s
    n = round(6.0 / DT)
    t = np.arange(n) * DT
    cmd = _series(n)
    cmd[50:] = (0.4, 0.0, 0.0)
    meas = _series(n)
    meas[50:, 0] = 0.4 * (1.0 - np.exp(-(t[50:] - 1.0) / tau))
    (half,) = tk.step_half_times(meas, cmd, DT)
    # the true half-life is 0.277 s; the centred mean of a concave rise lies below it (Jensen), so it reads late
    assert tau * math.log(2.0) <= half <= tau * math.log(2.0) + 0.1


def test_step_half_time_of_a_ramp_is_exact():
    n = round(5.0 / DT)
    t = np.arange(n) * DT
    cmd = _series(n)
    cmd[50:] = (0.0, 0.0, 0.8)  # a yaw step at 1 s, followed by a linear ramp over 0.6 s
    meas = _series(n)
    meas[:, 2] = np.clip((t - 1.0) / 0.6, 0.0, 1.0) * 0.8
    assert tk.step_half_times(meas, cmd, DT) == [pytest.approx(0.3, abs=DT)]


def test_step_half_time_ignores_small_changes_and_caps_a_response_that_never_comes():
    n = 200
    cmd = _series(n)
    cmd[20:] = (0.05, 0.0, 0.0)  # below MIN_PLANAR_STEP
    cmd[100:] = (0.05, 0.0, 0.8)  # a yaw step the body never follows
    assert tk.step_half_times(_series(n), cmd, DT) == [pytest.approx(100 * DT)]


def test_an_instant_response_and_a_reversal():
    n = 300
    cmd = _series(n)
    cmd[0:] = (0.4, 0.0, 0.0)
    cmd[150:] = (-0.4, 0.0, 0.0)
    meas = cmd.copy()
    meas[150:165] = (0.4, 0.0, 0.0)  # the reversal lags 0.3 s
    halves = tk.step_half_times(meas, cmd, DT, initial=np.zeros(3))
    assert halves[0] == pytest.approx(0.0, abs=DT)
    assert halves[1] == pytest.approx(0.3, abs=DT)


def test_stop_time_is_when_the_net_motion_over_the_next_window_ends():
    n = round(6.0 / DT)
    t = np.arange(n) * DT
    cmd = _series(n, (0.3, 0.0, 0.0))
    cmd[100:] = (0.0, 0.0, 0.0)  # zero at t = 2 s
    meas = _series(n, (0.3, 0.0, 0.0))
    meas[100:, 0] = np.clip(0.3 * (1.0 - (t[100:] - 2.0) / 0.6), 0.0, None)  # linear decel to 0 in 0.6 s
    meas[:, 1] = 0.1 * np.sin(2.0 * math.pi * t)  # sideways sway (stepping in place) is not motion
    (stop,) = tk.stop_times(meas, cmd, DT)
    # stopped = less than 5 cm of net motion left over the next 1 s: 0.25 (0.6 - s)^2 < 0.05 from s = 0.153 s
    assert stop == pytest.approx(0.6 - math.sqrt(0.2), abs=1.5 * DT)
    assert tk.stop_times(cmd * 0.0 + meas * 0.0 + _series(n), cmd, DT) == [0.0]  # already still


def test_stop_time_of_a_body_that_drifts_on_is_the_whole_segment_and_short_zeros_are_not_scored():
    n = 250
    cmd = _series(n, (0.3, 0.0, 0.0))
    cmd[100:] = 0.0
    assert tk.stop_times(_series(n, (0.3, 0.0, 0.0)), cmd, DT) == [pytest.approx(150 * DT)]
    turning = _series(n)
    turning[:, 2] = 0.5
    assert tk.stop_times(turning, cmd, DT) == [pytest.approx(150 * DT)]  # a yaw rate is motion too
    short = _series(n, (0.3, 0.0, 0.0))
    short[100:120] = 0.0  # 0.4 s of zero: shorter than the window
    assert tk.stop_times(short, short, DT) == []


def test_bad_series_are_refused():
    with pytest.raises(ValueError, match=r"\(N, 3\)"):
        tk.rms_block_error(np.zeros((5, 2)), np.zeros((5, 2)), DT)
