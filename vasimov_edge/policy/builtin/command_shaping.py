"""Command shaping for the built-in walker: from the velocity the firmware passes on to the one the gait walks.

Why a module of its own: the gait plans with the command, not with the body's momentum, so what it is given must be
one it was shown to walk and must change no faster than the body can follow. That is a rule about commands alone
(dead band, the walked envelope, the combined limit, the slew and its run-down-first order, the integrated heading)
and it is tuned and tested on commands alone, with no robot state.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from vasimov_edge.policy.builtin.config import ControllerConfig
from vasimov_edge.policy.builtin.footsteps import wrap

Vec = NDArray[np.float64]

MAX_HEADING_LEAD = 0.3  # rad; the integrated heading command may lead the measured heading by at most this


class CommandShaper:
    """The command the gait uses (``cmd``: vx, vy m/s, wz rad/s) and the heading it aims for (``heading``, rad)."""

    def __init__(self, cfg: ControllerConfig) -> None:
        self.cfg = cfg
        self.reset()

    def reset(self) -> None:
        self.cmd = np.zeros(3)  # the slewed command the gait walks
        self.target = np.zeros(3)  # the limited command it slews toward
        self.nonzero = False  # the target asks for motion (at least one part beyond its dead band)
        self.heading = 0.0

    def slew(self, raw: Vec) -> None:
        """The command the gait uses: dead-banded, limited to the envelope the gait was shown to walk (a combined
        command is scaled down as a whole so its parts together stay inside), and slewed -- the slewed command is
        held inside the same combined limit, so changing from one command to another never passes through a
        combination beyond it (fast forward fading while a turn builds up)."""
        cfg = self.cfg
        dead = np.array(cfg.command_deadband)
        target = np.where(np.abs(raw) < dead, 0.0, raw)
        fwd, back, side, turn = cfg.command_limit
        target = self.limit_combined(np.clip(target, [-back, -side, -turn], [fwd, side, turn]))
        rate = np.array(cfg.command_rate) * cfg.control_dt
        # run down first, then build up: while a part still has to fade or reverse (more than
        # command_run_down_margin of its limit left), the parts that grow wait (command_build_while_slowing of their
        # rate). The gait the body is in must end before a new one starts: a turn or strafe started while the body
        # still carries the old momentum loads the sole's toe or heel, where it holds little yaw.
        limits = np.array([fwd if self.cmd[0] >= 0.0 else back, side, turn])
        running_down = np.where(self.cmd * target >= 0.0, np.abs(self.cmd) - np.abs(target), np.abs(self.cmd))
        if float(np.max(running_down / limits)) > cfg.command_run_down_margin:
            growing = (np.abs(target) > np.abs(self.cmd)) & (self.cmd * target >= 0.0)
            rate = np.where(growing, rate * cfg.command_build_while_slowing, rate)
        cmd = self.cmd + np.clip(target - self.cmd, -rate, rate)
        self.cmd = self.limit_combined(cmd) if cfg.limit_slewed_command else cmd
        self.target = target
        self.nonzero = bool(np.any(np.abs(target) >= dead))

    def limit_combined(self, v: Vec) -> Vec:
        """``v`` scaled down as a whole so the sum of its parts (as fractions of their limits) stays allowed."""
        cfg = self.cfg
        fwd, back, side, turn = cfg.command_limit
        parts = np.abs(v) / np.array([fwd if v[0] >= 0.0 else back, side, turn])
        total = float(parts.sum())
        if cfg.command_combined_exponent > 0.0 and total > 0.0:
            dominance = (float(parts.max()) / total) ** cfg.command_combined_exponent
            allowed = cfg.command_combined_limit + (1.0 - cfg.command_combined_limit) * dominance
        else:
            allowed = max(float(parts.max()), cfg.command_combined_limit)  # one part alone may use its whole range
        return v * (allowed / total) if total > allowed else v

    def integrate_heading(self, yaw: float) -> None:
        """Advance the desired heading by the turn command, kept within ``MAX_HEADING_LEAD`` of the measured ``yaw``
        (a body that cannot follow is not wound up against)."""
        self.heading += self.cmd[2] * self.cfg.control_dt
        self.heading = yaw + float(np.clip(wrap(self.heading - yaw), -MAX_HEADING_LEAD, MAX_HEADING_LEAD))
