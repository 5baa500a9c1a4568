"""The named states a (virtual) restart boots into: the one list every inlet, the plant and the firmware share.

The real robot powers up limp (DAMP), hanging from its gantry hook; that is the twin's default boot, ``gantry``. The
others are twin-only shortcuts to a situation a test or a user would otherwise spend a run getting into:

* ``standing``: free on its feet in the stand pose, the gantry off, the firmware already in STAND with its ramp done
  (not armed: the firmware's 0.5 s upright hold starts at the first tick, as after any STAND). DECISION: a real robot
  cannot power up like this -- its firmware always boots in DAMP, and a free-standing robot in DAMP collapses (kd
  only, no stiffness). So ``standing`` is the state a few seconds after ``menlo stand`` with the hook then taken
  away (the plant lets the robot settle under the STAND gains before the boot), not a power-up.
* ``lying_back`` / ``lying_front``: on the floor after a fall, at rest, the gantry off, the firmware in DAMP; its fall
  detector sees the tilt on the first tick and latches FALL_DETECTED (DAMP latched, ``error_flags`` set), exactly
  what the SDK reads after a fall. Only a restart (into ``gantry`` or ``standing``) recovers, as on the robot.

A boot state travels as its name (HTTP, ``SimControl.boot``, launch argument) and as its number in ``PlantState``
(``boot_state``), which is how the edge learns which firmware state to boot into for the life that starts.
"""

from __future__ import annotations

from enum import IntEnum


class BootState(IntEnum):
    """Wire numbers of ``PlantState.boot_state``; names are what users type."""

    GANTRY = 0
    STANDING = 1
    LYING_BACK = 2
    LYING_FRONT = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @property
    def gantry(self) -> bool:
        """Whether the robot boots hanging from the gantry hook."""
        return self is BootState.GANTRY

    @property
    def lying(self) -> bool:
        return self in (BootState.LYING_BACK, BootState.LYING_FRONT)


DEFAULT_BOOT = BootState.GANTRY
BOOT_NAMES: tuple[str, ...] = tuple(b.label for b in BootState)
DESCRIPTIONS: dict[BootState, str] = {
    BootState.GANTRY: "limp on the gantry hook, firmware in DAMP (the real power-up)",
    BootState.STANDING: "free on its feet in the stand pose, firmware in STAND (ramp done, not yet armed)",
    BootState.LYING_BACK: "on its back after a fall, firmware DAMP with FALL_DETECTED latched",
    BootState.LYING_FRONT: "on its front after a fall, firmware DAMP with FALL_DETECTED latched",
}


class BootError(ValueError):
    """An unknown boot state; the message lists the valid names."""


def parse_boot(value: object) -> BootState:
    """A boot state's name (``""`` or ``None`` = the default, ``gantry``) or wire number -> ``BootState``."""
    if value is None or value == "":
        return DEFAULT_BOOT
    if isinstance(value, BootState):
        return value
    if isinstance(value, str):
        try:
            return BootState[value.strip().upper()]
        except KeyError:
            pass
    elif isinstance(value, int) and not isinstance(value, bool):
        try:
            return BootState(value)
        except ValueError:
            pass
    raise BootError(f"unknown boot state {value!r}; valid: {', '.join(BOOT_NAMES)}")
