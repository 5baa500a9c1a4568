"""The one command validator (``vasimov.command_rules``): its rules as a table, and every inlet refusing the same bad
command with the same reason because each one calls it."""

from __future__ import annotations

import json
import math

import pytest
from asimov_protocol.v1 import asimov_command_pb2
from vasimov_msgs.msg import RobotCommand as RobotCommandMsg

from vasimov.command_rules import Reason, check_finite, validate, validated
from vasimov.commands import CommandSource, DampCommand, Rejection, StandCommand, TrajectoryCommand, VelocityCommand
from vasimov.joints import NUM_JOINTS
from vasimov.ros.command_msgs import from_msg, to_msg
from vasimov_bridge import binary_stream, foxglove_teleop, sdk_wire
from vasimov_edge.firmware import Firmware

OK_POS = (0.0,) * NUM_JOINTS


@pytest.mark.parametrize(("cmd", "reason", "counter"), [
    (DampCommand(), None, None),
    (StandCommand(), None, None),
    (VelocityCommand(0.1, 0.0, -0.2), None, None),
    (TrajectoryCommand(OK_POS, kp=(1.0,) * 3, kd=(math.inf,) * NUM_JOINTS), None, None),  # gains: the firmware's
    (VelocityCommand(math.nan, 0.0, 0.0), Reason.NON_FINITE, "velocity_non_finite"),
    (VelocityCommand(0.0, 0.0, -math.inf), Reason.NON_FINITE, "velocity_non_finite"),
    (VelocityCommand("fast", 0.0, 0.0), Reason.PARSE, "command_unparsable"),  # type: ignore[arg-type]
    (TrajectoryCommand(()), Reason.EMPTY_TRAJECTORY, "trajectory_empty"),
    (TrajectoryCommand((0.0,) * 24), Reason.BAD_LENGTH, "trajectory_bad_length"),
    (TrajectoryCommand((0.0,) * 26), Reason.BAD_LENGTH, "trajectory_bad_length"),
    (TrajectoryCommand((*OK_POS[:-1], math.nan)), Reason.NON_FINITE, "trajectory_non_finite"),
    (TrajectoryCommand(("a",) * NUM_JOINTS), Reason.PARSE, "command_unparsable"),  # type: ignore[arg-type]
    (TrajectoryCommand(OK_POS, kp=("x",) * NUM_JOINTS), Reason.PARSE, "command_unparsable"),  # type: ignore[arg-type]
    ("stand", Reason.UNKNOWN_COMMAND, "command_unknown"),
])
def test_rules(cmd: object, reason: Reason | None, counter: str | None) -> None:
    got = validate(cmd)
    if reason is None:
        assert got is None and validated(cmd) is cmd  # type: ignore[arg-type]
        return
    assert isinstance(got, Rejection) and got.reason == reason and got.detail
    assert got.extra["counter"] == counter
    assert validated(cmd) == got  # type: ignore[arg-type]


def test_check_finite_names_what_it_checked() -> None:
    assert check_finite((0.0, 1.0), "velocity") is None
    r = check_finite((0.0, math.nan), "cmd_vel")
    assert r is not None and r.reason == Reason.NON_FINITE and "cmd_vel" in r.detail


def _udp_velocity(vx: float) -> bytes:
    m = asimov_command_pb2.RobotCommand(protocol_version=1, mode=2)
    m.policy.vx = vx
    return m.SerializeToString()


def _udp_trajectory(positions: tuple[float, ...]) -> bytes:
    m = asimov_command_pb2.RobotCommand(protocol_version=1, mode=2)
    m.all_trajectory.positions.extend(positions)
    return m.SerializeToString()


def _fox_velocity(vx: float) -> bytes:
    return json.dumps({"linear": {"x": vx}}).encode()  # json.dumps writes NaN, which json.loads accepts


_NAN_VELOCITY: dict[str, object] = {
    "udp": sdk_wire.decode_command(_udp_velocity(math.nan)),
    "vac1": binary_stream.decode_command(binary_stream.encode_command(
        binary_stream.CommandPacket(binary_stream.CommandKind.VELOCITY, vx=math.nan))),
    "foxglove": foxglove_teleop.decode("/cmd_vel", "json", _fox_velocity(math.nan),
                                       foxglove_teleop.TeleopLimits(1.0, 1.0)),
    "ros": from_msg(to_msg(VelocityCommand(math.nan, 0.0, 0.0))),
    "firmware": Firmware().submit(VelocityCommand(math.nan, 0.0, 0.0), 0.0),
}


@pytest.mark.parametrize("inlet", sorted(_NAN_VELOCITY))
def test_every_inlet_refuses_a_nan_velocity_as_non_finite(inlet: str) -> None:
    got = _NAN_VELOCITY[inlet]
    assert isinstance(got, Rejection) and got.reason == Reason.NON_FINITE, got


@pytest.mark.parametrize(("positions", "reason"), [
    ((), Reason.EMPTY_TRAJECTORY),
    ((0.0,) * 24, Reason.BAD_LENGTH),
    ((*OK_POS[:-1], math.inf), Reason.NON_FINITE),
])
def test_udp_ros_and_firmware_refuse_a_bad_trajectory_alike(positions: tuple[float, ...], reason: Reason) -> None:
    cmd = TrajectoryCommand(positions, source=CommandSource.UDP)
    msg = RobotCommandMsg()
    to_msg(cmd, msg)
    results = {
        "udp": sdk_wire.decode_command(_udp_trajectory(positions)),
        "ros": from_msg(msg),
        "firmware": Firmware().submit(cmd, 0.0),
    }
    for inlet, got in results.items():
        assert isinstance(got, Rejection) and got.reason == reason, (inlet, got)
    counters = {got.extra["counter"] for got in results.values()}  # type: ignore[union-attr]
    assert len(counters) == 1, counters  # one rule, one counter, whichever path refused it
