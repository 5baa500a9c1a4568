"""vasimov.frames: projected gravity's scalar path for one quaternion gives numpy's bits, and both paths refuse the
same bad input. The bit-identity matters: the firmware's fall and arming thresholds, the policy observation and the
SDK's state all take this value, and lockstep runs are compared bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vasimov import frames


def _quaternions(n: int = 20000) -> np.ndarray:
    rng = np.random.default_rng(7)
    near_upright = np.array([1.0, 0.0, 0.0, 0.0]) + 0.05 * rng.normal(size=(n // 2, 4))  # a standing robot's IMU
    anywhere = rng.normal(size=(n // 4, 4))
    scaled = rng.normal(size=(n - n // 2 - n // 4, 4)) * 10.0 ** rng.uniform(-150, 150, size=(n - n // 2 - n // 4, 1))
    return np.concatenate([near_upright, anywhere, scaled])


def test_one_quaternion_gives_the_batch_path_s_bits():
    qs = _quaternions()
    batch = frames.projected_gravity(qs)  # numpy's path, row by row the same element-wise operations
    one = np.array([frames.projected_gravity(q) for q in qs])
    assert one.dtype == np.float64 and one.shape == batch.shape
    assert np.array_equal(one, batch)  # bit for bit, not approximately
    assert np.array_equal(frames.projected_gravity(list(qs[0])), batch[0])  # a plain sequence takes the same path


def test_known_attitudes():
    assert np.array_equal(frames.projected_gravity([1.0, 0.0, 0.0, 0.0]), [-0.0, -0.0, -1.0])
    half = math.sqrt(0.5)
    assert frames.projected_gravity([half, half, 0.0, 0.0]) == pytest.approx([0.0, -1.0, 0.0], abs=1e-15)  # rolled
    assert frames.projected_gravity([2.0, 0.0, 0.0, 0.0]) == pytest.approx([0.0, 0.0, -1.0])  # off unit length


@pytest.mark.parametrize("bad", [[0.0, 0.0, 0.0, 0.0], [math.nan, 0.0, 0.0, 1.0], [math.inf, 0.0, 0.0, 0.0],
                                 [1e200, 1e200, 0.0, 0.0]])
def test_both_paths_refuse_a_zero_or_non_finite_quaternion(bad):
    with pytest.raises(ValueError, match="finite and non-zero"):
        frames.projected_gravity(bad)
    with pytest.raises(ValueError, match="finite and non-zero"), np.errstate(over="ignore"):
        frames.projected_gravity([bad, [1.0, 0.0, 0.0, 0.0]])


def test_a_wrong_shape_is_refused():
    with pytest.raises(ValueError, match="4 components"):
        frames.projected_gravity([1.0, 0.0, 0.0])
