"""The one PlantSamples layout (``vasimov.ros.plant_samples``): a control period's steps packed by the plant and
unpacked by the SDK bridge, through real CDR, exactly."""

from __future__ import annotations

import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from vasimov_msgs.msg import PlantSamples

from vasimov import joints
from vasimov.ros import plant_samples as ps

N = joints.NUM_JOINTS


def _period(n: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return dict(time=12.345 + 0.005 * np.arange(n), command_tick=np.array([-1] + [41] * (n - 1))[:n],
                position=rng.normal(size=(n, N)), velocity=rng.normal(size=(n, N)), effort=rng.normal(size=(n, N)),
                imu_orientation=rng.normal(size=(n, 4)), imu_angular_velocity=rng.normal(size=(n, 3)),
                imu_linear_acceleration=rng.normal(size=(n, 3)))


def test_a_period_round_trips_through_cdr_bit_for_bit() -> None:
    p = _period(4)
    truth = ps.Truth(0.0, np.array([1.0, 2.0, 0.6]), np.array([1.0, 0, 0, 0]), np.array([0.3, 0, 0]),
                     np.array([0, 0, 0.1]))
    msg = ps.fill(PlantSamples(), 3, 2, 160, truth=truth, **p)
    samples, got = ps.unpack(deserialize_message(serialize_message(msg), PlantSamples))
    assert [s.step for s in samples] == [160, 161, 162, 163]
    assert {(s.epoch, s.boot_state) for s in samples} == {(3, 2)}
    assert [s.command_tick for s in samples] == [-1, 41, 41, 41]
    assert [s.time for s in samples] == p["time"].tolist()
    for name in ("position", "velocity", "effort", "imu_orientation", "imu_angular_velocity",
                 "imu_linear_acceleration"):
        assert np.array_equal(np.stack([getattr(s, name) for s in samples]), p[name]), name
    assert got is not None and got.time == p["time"][-1]  # the truth is the last sample's
    assert np.array_equal(got.base_pos, truth.base_pos) and np.array_equal(got.base_ang_vel, truth.base_ang_vel)


def test_a_period_without_truth_and_a_single_step() -> None:
    samples, truth = ps.unpack(ps.fill(PlantSamples(), 0, 0, 0, truth=None, **_period(1)))
    assert [s.step for s in samples] == [0] and truth is None
    assert ps.unpack(PlantSamples()) == ([], None)  # an empty message is no samples, not an error


def test_inconsistent_arrays_are_refused_with_the_reason() -> None:
    msg = ps.fill(PlantSamples(), 0, 0, 0, truth=None, **_period(4))
    msg.velocity = msg.velocity[:-1]
    with pytest.raises(ValueError, match="velocity 99 \\(expected 100\\)"):
        ps.unpack(msg)
