"""A backend that walks less than it is commanded says so: the pure notice, and what each walker reports using.

The firmware takes the SDK's envelope (0.4 / 0.4 m/s, 0.8 rad/s); the built-in walker scales larger and combined
commands down and stands still below its dead band. `PolicyOutput.command_used` carries what it walks, and
`CommandLimitNotice` turns a difference into one line for the policy runner's log (test_node_policy checks the line
in a running node).
"""

from __future__ import annotations

import numpy as np
import pytest

from vasimov import joints
from vasimov_edge.policy.builtin import BuiltinController, ControllerConfig
from vasimov_edge.policy.command_notice import REPEAT_S, CommandLimitNotice, walks_less
from vasimov_edge.policy.interface import PolicyInput


def _input(command: tuple[float, float, float], tick: int = 0) -> PolicyInput:
    return PolicyInput(tick=tick, sim_time=tick * 0.02, gyro=np.zeros(3), projected_gravity=np.array([0.0, 0.0, -1.0]),
                       quat=np.array([1.0, 0.0, 0.0, 0.0]), command=np.array(command), q=joints.DEFAULT_POS.copy(),
                       qd=np.zeros(joints.NUM_JOINTS))


def test_a_limited_command_is_said_once_with_both_velocities():
    notice = CommandLimitNotice("builtin")
    said = notice.update(1.0, (0.4, 0.0, 0.0), (0.3, 0.0, 0.0))
    assert said is not None and said.startswith("builtin walks vx +0.30 m/s")
    assert "of the commanded vx +0.40 m/s, vy +0.00 m/s, vyaw +0.00 rad/s" in said
    assert [notice.update(1.0 + 0.02 * k, (0.4, 0.0, 0.0), (0.3, 0.0, 0.0)) for k in range(1, 500)] == [None] * 499


def test_walks_less_is_one_rule_for_the_notice_and_the_bench():
    assert walks_less((0.4, 0.0, 0.0), (0.3, 0.0, 0.0))
    assert walks_less((0.0, 0.0, 0.01), (0.0, 0.0, 0.0))
    assert not walks_less((0.2, 0.1, 0.0), (0.2005, 0.1, 0.0))
    assert not walks_less((0.4, 0.0, 0.0), None)
    assert not walks_less((0.4, 0.0, 0.0), (np.inf, 0.0, 0.0))
    assert not walks_less((0.4, 0.0, 0.0), (0.3, 0.0))


def test_a_command_walked_as_given_or_by_a_backend_without_limits_says_nothing():
    notice = CommandLimitNotice("builtin")
    assert notice.update(0.0, (0.2, -0.1, 0.3), (0.2, -0.1, 0.3)) is None
    assert notice.update(0.0, (0.2, 0.0, 0.0), (0.2005, 0.0, 0.0)) is None  # within the tolerance
    assert notice.update(0.0, (0.4, 0.0, 0.0), None) is None  # an ONNX policy walks the command as given
    assert notice.update(0.0, (0.4, 0.0, 0.0), (np.nan, 0.0, 0.0)) is None  # nothing to report on a broken output


def test_a_new_limited_command_is_said_again_but_a_changing_one_at_most_every_repeat_interval():
    notice = CommandLimitNotice("builtin")
    assert notice.update(0.0, (0.4, 0.0, 0.0), (0.3, 0.0, 0.0)) is not None
    # a joystick beyond the envelope: the command changes every tick, one line per REPEAT_S
    lines = [notice.update(0.02 * k, (0.4, 0.001 * k, 0.0), (0.3, 0.0, 0.0)) for k in range(1, 600)]
    times = [0.02 * k for k, s in zip(range(1, 600), lines, strict=True) if s is not None]
    assert len(times) == 2 and times[0] >= REPEAT_S and times[1] - times[0] >= REPEAT_S
    # back inside the envelope, then beyond it again: said at once
    assert notice.update(20.0, (0.1, 0.0, 0.0), (0.1, 0.0, 0.0)) is None
    assert notice.update(20.02, (0.4, 0.0, 0.0), (0.3, 0.0, 0.0)) is not None
    # a restart forgets what was said
    notice.reset()
    assert notice.update(20.04, (0.4, 0.0, 0.0), (0.3, 0.0, 0.0)) is not None


@pytest.mark.parametrize(("command", "used"), [
    ((0.4, 0.0, 0.0), (0.3, 0.0, 0.0)),  # forward beyond its 0.3 m/s
    ((-0.4, 0.0, 0.0), (-0.2, 0.0, 0.0)),  # backward beyond 0.2
    ((0.0, 0.4, 0.0), (0.0, 0.18, 0.0)),  # sideways beyond 0.18
    ((0.0, 0.0, -0.8), (0.0, 0.0, -0.5)),  # turning beyond 0.5 rad/s
    ((0.01, 0.0, 0.0), (0.0, 0.0, 0.0)),  # below the dead band: it stands
    ((0.2, 0.0, 0.0), (0.2, 0.0, 0.0)),  # inside: as given
])
def test_the_builtin_walker_reports_the_command_it_walks(command, used):
    out = BuiltinController().step(_input(command))
    np.testing.assert_allclose(out.command_used, used, atol=1e-12)


def test_a_combined_command_is_reported_scaled_down_as_a_whole():
    fwd, _back, side, turn = ControllerConfig().command_limit
    limits = np.array([fwd, side, turn])  # each part at its own limit
    used = np.asarray(BuiltinController().step(_input(tuple(limits))).command_used)
    assert np.all(used < limits - 1e-3) and np.all(used > 0.0)
    np.testing.assert_allclose(used / limits, used[0] / fwd, rtol=1e-9)  # one scale for all parts


def test_walker_v2_reports_the_sdk_envelope_as_walked():
    placo = pytest.importorskip("placo")
    assert placo
    from vasimov_edge.policy.walker import WalkerV2

    walker = WalkerV2()
    np.testing.assert_allclose(walker.step(_input((0.4, -0.4, 0.8))).command_used, (0.4, -0.4, 0.8))
    np.testing.assert_allclose(walker.step(_input((0.005, 0.0, 0.0), tick=1)).command_used, (0.0, 0.0, 0.0))
