"""typed command <-> vasimov_msgs/RobotCommand. Bridges publish what they validated; the edge rebuilds the typed
command (and re-validates lengths, since a ROS message can come from anyone on the graph)."""

from __future__ import annotations

import math

from vasimov_msgs.msg import RobotCommand as RobotCommandMsg

from vasimov.commands import (
    CommandSource,
    DampCommand,
    Rejection,
    RobotCommand,
    StandCommand,
    TrajectoryCommand,
    VelocityCommand,
)
from vasimov.joints import NUM_JOINTS

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
    try:
        source = CommandSource(m.source)
    except ValueError:
        return Rejection("UNSUPPORTED_SOURCE", f"unknown source {m.source}")
    seq = int(m.sequence)
    if m.kind == RobotCommandMsg.KIND_DAMP:
        return DampCommand(source=source, sequence=seq)
    if m.kind == RobotCommandMsg.KIND_STAND:
        return StandCommand(source=source, sequence=seq)
    if m.kind == RobotCommandMsg.KIND_VELOCITY:
        v = (m.vx, m.vy, m.vyaw)
        if not all(math.isfinite(x) for x in v):
            return Rejection("NON_FINITE", "velocity has a non-finite component")
        return VelocityCommand(*v, source=source, sequence=seq)
    if m.kind == RobotCommandMsg.KIND_TRAJECTORY:
        pos = tuple(float(x) for x in m.positions)
        if len(pos) == 0:
            return Rejection("EMPTY_TRAJECTORY", "no positions")
        if len(pos) != NUM_JOINTS:
            return Rejection("BAD_LENGTH", f"{len(pos)} positions, expected {NUM_JOINTS}")
        kp = tuple(float(x) for x in m.kp) or None
        kd = tuple(float(x) for x in m.kd) or None
        return TrajectoryCommand(pos, kp, kd, source=source, sequence=seq)
    return Rejection("UNKNOWN_COMMAND", f"unknown kind {m.kind}")
