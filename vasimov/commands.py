"""Typed robot commands, as every source (SDK over UDP, Foxglove teleop, binary stream, scripts) hands them to the
firmware core. Decoders build these after validation; the firmware core never sees raw bytes or ROS messages.

Trajectory positions are in the *wire* frame of a 25-entry ``AllTrajectory`` (firmware order, ankle A slot = pitch,
ankle B slot = roll); ``vasimov.motor_space`` turns them into joint targets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


class CommandSource(IntEnum):
    """Who sent a command. Lower value = higher priority in the arbiter (see ``vasimov_edge.arbiter``)."""

    SCRIPT = 0  # a scenario/command script driven by the simulator itself
    FOXGLOVE = 1  # teleop from the Foxglove viewer (the twin's stand-in for the Manager cockpit)
    UDP = 2  # menlo-sdk / menlo CLI over the UDP lane
    BINARY = 3  # the VAC1 binary WebSocket stream for light clients


@dataclass(frozen=True)
class DampCommand:
    source: CommandSource = CommandSource.UDP
    sequence: int = 0


@dataclass(frozen=True)
class StandCommand:
    source: CommandSource = CommandSource.UDP
    sequence: int = 0


@dataclass(frozen=True)
class VelocityCommand:
    vx: float
    vy: float
    vyaw: float
    source: CommandSource = CommandSource.UDP
    sequence: int = 0


@dataclass(frozen=True)
class TrajectoryCommand:
    positions: tuple[float, ...]  # 25, wire frame
    kp: tuple[float, ...] | None = None  # 25 or None (firmware gain table)
    kd: tuple[float, ...] | None = None
    source: CommandSource = CommandSource.UDP
    sequence: int = 0


RobotCommand = DampCommand | StandCommand | VelocityCommand | TrajectoryCommand


@dataclass
class Rejection:
    """Why a command was refused; ``reason`` is one of the firmware's Refusal names where one fits."""

    reason: str
    detail: str = ""
    extra: dict[str, object] = field(default_factory=dict)
