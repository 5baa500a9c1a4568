"""state_rows: a control period's RobotState arrays built together are the per-sample ones, bit for bit, so the
frames on the wire do not change; a period with a bad quaternion is left to the per-sample path."""

from __future__ import annotations

import numpy as np
import pytest

from vasimov.motor_current import torque_constant
from vasimov.ros.plant_samples import PlantSample
from vasimov_bridge import sdk_wire
from vasimov_bridge.state_rows import period_rows, sample_rows

KT = torque_constant()


def _samples(rng: np.random.Generator, n: int, first: int = 100) -> list[PlantSample]:
    out = []
    for i in range(n):
        q = rng.normal(size=4) * rng.uniform(0.5, 2.0)  # off unit length, as a float32 wire would leave it
        out.append(PlantSample(0, 0, first + i, (first + i) * 0.005, 7, rng.normal(size=25) * 2.0,
                               rng.normal(size=25) * 10.0, rng.normal(size=25) * 50.0, q, rng.normal(size=3),
                               rng.normal(size=3)))
    return out


def _frame(s: PlantSample, rows) -> bytes:
    return sdk_wire.encode_state(sdk_wire.StateFrame(
        timestamp_us=round(s.time * 1e6), sequence=s.step, current_mode=2, joint_pos=rows.joint_pos,
        joint_vel=rows.joint_vel, base_ang_vel=s.imu_angular_velocity, projected_gravity=rows.projected_gravity,
        base_quat=s.imu_orientation, joint_current=rows.joint_current))


@pytest.mark.parametrize("seed", range(20))
def test_a_period_built_together_gives_the_same_bits_as_each_sample_alone(seed: int) -> None:
    rng = np.random.default_rng(seed)
    samples = _samples(rng, int(rng.integers(1, 9)))
    together = period_rows(samples, KT)
    assert sorted(together) == [s.step for s in samples]
    for s in samples:
        alone = sample_rows(s, KT)
        for name in ("joint_pos", "joint_vel", "joint_current", "projected_gravity"):
            assert getattr(together[s.step], name).tobytes() == getattr(alone, name).tobytes(), name
        assert _frame(s, together[s.step]) == _frame(s, alone)


def test_a_period_with_a_bad_quaternion_is_left_to_each_sample() -> None:
    samples = _samples(np.random.default_rng(1), 4)
    bad = samples[2]
    samples[2] = PlantSample(bad.epoch, bad.boot_state, bad.step, bad.time, bad.command_tick, bad.position,
                             bad.velocity, bad.effort, np.zeros(4), bad.imu_angular_velocity,
                             bad.imu_linear_acceleration)
    assert period_rows(samples, KT) == {}
    assert sample_rows(samples[1], KT).projected_gravity.shape == (3,)  # the good ones still build alone
    with pytest.raises(ValueError, match="quaternion"):
        sample_rows(samples[2], KT)  # the bad one alone is refused (the node counts it and sends no frame)
    assert period_rows([], KT) == {}
