"""Which command source controls the robot: Asimov Edge's arbiter, for the twin's four sources.

The real robot ranks its controllers Manager cockpit > paired gamepad > UDP (SDK) > LiveKit, invisibly in state
(contract 5.13), and drops "any command ... from a source that is not the arbiter's active controller" (Menlo API
page, refusal ``NOT_ACTIVE``). The twin's sources and their documented priority, highest first::

    SCRIPT    the simulator's own timed command script (scenarios must be reproducible, so nothing overrides them)
    FOXGLOVE  teleop from the Foxglove viewer, standing in for the Manager cockpit
    UDP       menlo-sdk / menlo CLI
    BINARY    the VAC1 binary WebSocket stream for light clients

Rules:

* A source takes control when it sends a command and nobody holds control, or when it outranks the holder.
* The holder keeps control until it has been silent for ``hold_s``; every command it sends (accepted by the
  firmware or not) restarts that time. The same source is never refused.
* A lower-ranked source's command while a higher one holds control is refused as ``NOT_ACTIVE`` (counted).
* DAMP is accepted from every source at any time (a stop request must never be blocked); from a lower-ranked
  source it neither takes nor refreshes control.

With only the SDK as controller (the contract's case) every UDP command is admitted. Pure: time comes in as ``t``
(firmware seconds since boot); ``reset()`` on a virtual restart, since the clock restarts with it.
"""

from __future__ import annotations

import math

from vasimov.command_rules import Reason
from vasimov.commands import (
    CommandSource,
    DampCommand,
    Rejection,
    RobotCommand,
    StandCommand,
    TrajectoryCommand,
    VelocityCommand,
)

_COMMAND_TYPES = (DampCommand, StandCommand, VelocityCommand, TrajectoryCommand)

# Highest priority first; ``CommandSource`` values already encode it (lower value = higher priority).
PRIORITY: tuple[CommandSource, ...] = tuple(sorted(CommandSource, key=lambda s: s.value))

COUNTERS: tuple[str, ...] = (
    "admitted",
    "not_active",  # refused: a higher-priority source holds control
    "damp_from_inactive",  # DAMP from a lower-priority source while another holds control (admitted)
    "takeovers",  # control changed hands
    "unsupported_source",  # refused: the command names no known source
    "unknown_command",  # refused: not a robot command
)


class Arbiter:
    """Admits or refuses commands by source priority; see the module docstring for the rules."""

    def __init__(self, hold_s: float = 1.0) -> None:
        if not (isinstance(hold_s, int | float) and math.isfinite(hold_s) and hold_s >= 0.0):
            raise ValueError(f"hold_s must be a finite number >= 0, got {hold_s!r}")
        self.hold_s = float(hold_s)
        self.reset()

    def reset(self) -> None:
        """Nobody holds control; counters restart (call on a virtual restart, when the firmware clock restarts)."""
        self._holder: CommandSource | None = None
        self._holder_last_t = 0.0
        self._now = 0.0
        self._counters: dict[str, int] = dict.fromkeys(COUNTERS, 0)

    @property
    def counters(self) -> dict[str, int]:
        return dict(self._counters)

    def _time(self, t: float | None) -> float:
        if t is None:
            return self._now
        try:
            tf = float(t)
        except (TypeError, ValueError):
            return self._now
        if math.isfinite(tf):
            self._now = max(self._now, tf)
        return self._now

    def _expired(self, t: float) -> bool:
        return self._holder is None or t - self._holder_last_t >= self.hold_s

    def holder(self, t: float | None = None) -> CommandSource | None:
        """The source in control at ``t`` (default: the latest time seen), None when nobody holds control."""
        now = self._time(t)
        return None if self._expired(now) else self._holder

    def holder_name(self, t: float | None = None) -> str:
        """``holder(t)`` as a name for state messages; ``""`` when nobody holds control."""
        h = self.holder(t)
        return "" if h is None else h.name

    def admit(self, cmd: RobotCommand, t: float) -> Rejection | None:
        """None if ``cmd`` (arriving at firmware time ``t``) may go on to the firmware, else why not."""
        now = self._time(t)
        if not isinstance(cmd, _COMMAND_TYPES):
            return self._refuse("unknown_command", Reason.UNKNOWN_COMMAND, f"not a robot command: {type(cmd).__name__}")
        try:
            source = CommandSource(cmd.source)
        except (ValueError, TypeError):
            valid = ", ".join(s.name for s in CommandSource)
            return self._refuse("unsupported_source", Reason.UNSUPPORTED_SOURCE,
                                f"source {cmd.source!r}; valid: {valid}")
        holder = None if self._expired(now) else self._holder
        if holder is None or source.value <= holder.value:
            if source is not self._holder:
                self._counters["takeovers"] += 1
            self._holder, self._holder_last_t = source, now
            self._counters["admitted"] += 1
            return None
        if isinstance(cmd, DampCommand):
            self._counters["damp_from_inactive"] += 1
            self._counters["admitted"] += 1
            return None
        left = self.hold_s - (now - self._holder_last_t)
        return self._refuse(
            "not_active",
            Reason.NOT_ACTIVE,
            f"{holder.name} holds control (outranks {source.name}) until it is silent for {self.hold_s:g} s "
            f"({left:.2f} s left); only DAMP is admitted",
        )

    def _refuse(self, counter: str, reason: Reason, detail: str) -> Rejection:
        self._counters[counter] += 1
        return Rejection(reason=reason, detail=detail, extra={"counter": f"arbiter_{counter}"})


__all__ = ["COUNTERS", "PRIORITY", "Arbiter"]
