"""typed command <-> vasimov_msgs/RobotCommand. Bridges publish what they validated; the edge rebuilds the typed
command and validates it again with the same validator (``vasimov.command_rules``), since a ROS message can come from
anyone on the graph."""

from __future__ import annotations

from vasimov_msgs.msg import RobotCommand as RobotCommandMsg

from vasimov.command_rules import Reason, validated
from vasimov.commands import (
    CommandSource,
    DampCommand,
    Rejection,
    RobotCommand,
    StandCommand,
    TrajectoryCommand,
    VelocityCommand,
)

_KIND = {DampCommand: RobotCommandMsg.KIND_DAMP, StandCommand: RobotCommandMsg.KIND_STAND,
         VelocityCommand: RobotCommandMsg.KIND_VELOCITY, TrajectoryCommand: RobotCommandMsg.KIND_TRAJECTORY}


def to_msg(cmd: RobotCommand, out: RobotCommandMsg | None = None) -> RobotCommandMsg:
    m = out if out is not None else RobotCommandMsg()
    m.source = int(cmd.source)
    m.kind = _KIND[type(cmd)]
    m.sequence = int(cmd.sequence) & 0xFFFFFFFF
    if isinstance(cmd, VelocityCommand):
        m.vx, m.vy, m.vyaw = float(cmd.vx), float(cmd.vy), float(cmd.vyaw)
    if isinstance(cmd, TrajectoryCommand):
        m.positions = [float(v) for v in cmd.positions]
        m.kp = [float(v) for v in cmd.kp] if cmd.kp is not None else []
        m.kd = [float(v) for v in cmd.kd] if cmd.kd is not None else []
    return m


def from_msg(m: RobotCommandMsg) -> RobotCommand | Rejection:
    """A RobotCommand message -> the typed command, through the one validator (a ROS message can come from anyone
    on the graph, so it is checked like any wire's command)."""
    try:
        source = CommandSource(m.source)
    except ValueError:
        return Rejection(Reason.UNSUPPORTED_SOURCE, f"unknown source {m.source}")
    seq = int(m.sequence)
    if m.kind == RobotCommandMsg.KIND_DAMP:
        return DampCommand(source=source, sequence=seq)
    if m.kind == RobotCommandMsg.KIND_STAND:
        return StandCommand(source=source, sequence=seq)
    if m.kind == RobotCommandMsg.KIND_VELOCITY:
        return validated(VelocityCommand(m.vx, m.vy, m.vyaw, source=source, sequence=seq))
    if m.kind == RobotCommandMsg.KIND_TRAJECTORY:
        kp = tuple(float(x) for x in m.kp) or None
        kd = tuple(float(x) for x in m.kd) or None
        return validated(TrajectoryCommand(tuple(float(x) for x in m.positions), kp, kd, source=source, sequence=seq))
    return Rejection(Reason.UNKNOWN_COMMAND, f"unknown kind {m.kind}")
