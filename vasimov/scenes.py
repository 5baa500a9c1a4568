"""The scene catalog: which worlds the twin can put Asimov 1 in, their parameters, and the one parser of a scene name.

A scene is chosen at start (``vasimov up --scene NAME``, launch argument ``scene``, plant parameter ``scene``) and is
written ``BASE`` or ``BASE+FRICTION``: a base world (flat floor, slope, stairs, obstacles, rough ground) and, if
given, a floor friction override that combines with any base (``slope_10_up+ice``). One string, because it travels
as one launch argument, one ROS parameter, one provenance field and one line of a bag, and reads back the same
everywhere.

This module is pure (no MuJoCo): names, numbers and validation. ``vasimov.model.terrain`` turns a :class:`Scene`
into MJCF. Every base keeps the robot's boot spot flat at z = 0 within :data:`START_PAD_RADIUS` of the origin,
because the virtual gantry lowers the robot onto a floor at z = 0 (``vasimov_plant.physics``); the terrain starts
ahead of the robot (+x, the direction it faces at boot), so a stand works in every scene and walking forward meets
the feature.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

SCENE_SEPARATOR = "+"
DEFAULT_SCENE = "flat"
# Every scene's ground is flat at z = 0 within this radius (m) of the origin: the robot boots there and the gantry
# lowers it onto z = 0. The feet span x -0.09..+0.17 m and y +-0.13 m around the pelvis at boot.
START_PAD_RADIUS = 0.35
# Where (m, +x) slopes and stairs begin: 0.2 m ahead of the toes, so the 5 s bench walk at 0.2 m/s reaches them.
FEATURE_START_X = 0.35
FEATURE_WIDTH = 3.0  # m across (y) of ramps and stairs


class SceneError(ValueError):
    """An unknown scene or friction name, or a malformed scene string. A configuration error (exit code 2)."""


@dataclass(frozen=True)
class Friction:
    """A floor friction override: every ground geom gets sliding friction ``mu`` and contact priority over the feet,
    so ``mu`` (not the feet's 0.6) governs the foot-ground contact, and every other robot-ground contact too."""

    name: str
    mu: float
    description: str
    source: str


# The fact sheet's nominal foot friction is 0.6 (feet priority 1 > floor 0: the feet's friction governs); training
# randomised 0.8-1.2 on the feet. The overrides are typical sliding coefficients of rubber soles.
FRICTIONS: dict[str, Friction] = {f.name: f for f in (
    Friction("wet", 0.4, "wet floor: rubber sole on wet tile or painted concrete",
             "typical wet rubber-on-tile coefficient (0.3-0.5); Menlo's policy viewer bench runs a wet floor"),
    Friction("ice", 0.1, "icy floor: rubber sole on ice",
             "typical rubber-on-ice coefficient (0.05-0.15); Menlo's policy viewer bench runs an icy floor"),
)}


@dataclass(frozen=True)
class BaseScene:
    """One base world. ``kind`` picks the builder in ``vasimov.model.terrain``; ``params`` are its numbers (m, deg)."""

    name: str
    kind: str  # flat | slope | stairs | obstacles | rough
    description: str
    params: dict[str, Any] = field(default_factory=dict)
    seeded: bool = False  # the layout is drawn from the run's seed


def _slope(deg: int, direction: str) -> BaseScene:
    sign = 1 if direction == "up" else -1
    length = 2.5  # m of ramp (horizontal); then a level plateau (up) or the floor (down)
    rise = round(length * math.tan(math.radians(deg)), 4)
    return BaseScene(
        f"slope_{deg}_{direction}", "slope",
        f"{deg} deg ramp {direction} from x = {FEATURE_START_X} m, {length} m long, then level",
        {"angle_deg": float(sign * deg), "start_x": FEATURE_START_X, "length": length, "rise": sign * rise,
         "width": FEATURE_WIDTH})


def _stairs(cm: int) -> BaseScene:
    return BaseScene(
        f"stairs_{cm}cm", "stairs",
        f"flight of 6 steps up, {cm} cm risers, 0.30 m treads, from x = {FEATURE_START_X} m, then a landing",
        {"step_height": cm / 100.0, "tread": 0.30, "steps": 6, "start_x": FEATURE_START_X, "width": FEATURE_WIDTH})


BASES: dict[str, BaseScene] = {b.name: b for b in (
    BaseScene("flat", "flat", "the level floor plane (the default; the fact sheet's floor)"),
    *(_slope(d, direction) for direction in ("up", "down") for d in (5, 10, 15)),
    *(_stairs(cm) for cm in (5, 10, 15)),
    BaseScene("obstacles", "obstacles",
              "boxes scattered ahead of the robot (seeded layout): 2-10 cm high, 10-30 cm wide, random yaw",
              {"count": 16, "x_range": [0.5, 4.0], "y_range": [-1.5, 1.5], "height_range": [0.02, 0.10],
               "width_range": [0.10, 0.30]}, seeded=True),
    BaseScene("rough", "rough",
              "rough ground: a seeded heightfield, 0-4 cm bumps on a 0.2 m grid, flat within the start pad",
              {"size": 8.0, "resolution": 0.05, "amplitude": 0.04, "feature": 0.2,
               "pad_radius": round(START_PAD_RADIUS + 0.1, 3), "blend": 0.3}, seeded=True),
)}


@dataclass(frozen=True)
class Scene:
    """A parsed scene: a base world, an optional friction override, and the seed of the seeded layouts."""

    base: BaseScene
    friction: Friction | None = None
    seed: int = 0

    @property
    def name(self) -> str:
        """The canonical text (``slope_10_up+ice``): what ``parse_scene`` reads back to this scene."""
        return self.base.name + (SCENE_SEPARATOR + self.friction.name if self.friction else "")

    @property
    def is_default(self) -> bool:
        """The flat floor without an override: the model is the fact sheet's, bit for bit."""
        return self.base.kind == "flat" and self.friction is None

    def describe(self) -> dict[str, Any]:
        """Name, parameters and seed, JSON-able: for provenance, the scene topic and ``vasimov scenes --json``."""
        return {"name": self.name, "base": self.base.name, "kind": self.base.kind,
                "params": dict(self.base.params),
                "friction": None if self.friction is None else
                {"name": self.friction.name, "mu": self.friction.mu},
                "seed": self.seed if self.base.seeded else None}


def parse_scene(text: str, seed: int = 0) -> Scene:
    """``BASE`` or ``BASE+FRICTION`` (whitespace around the parts ignored; empty means the default)."""
    if not isinstance(text, str):
        raise SceneError(f"scene must be a string, got {type(text).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SceneError(f"scene seed must be an integer >= 0, got {seed!r}")
    parts = [p.strip() for p in text.strip().split(SCENE_SEPARATOR)] if text.strip() else [DEFAULT_SCENE]
    if len(parts) > 2 or not all(parts):
        raise SceneError(f"scene {text!r}: write BASE or BASE{SCENE_SEPARATOR}FRICTION "
                         f"(e.g. slope_10_up{SCENE_SEPARATOR}ice)")
    base = BASES.get(parts[0])
    if base is None:
        hint = " (a friction override combines with a base: flat+" + parts[0] + ")" if parts[0] in FRICTIONS else ""
        raise SceneError(f"unknown scene {parts[0]!r}{hint}; valid: {', '.join(BASES)}")
    friction = None
    if len(parts) == 2:
        friction = FRICTIONS.get(parts[1])
        if friction is None:
            raise SceneError(f"unknown friction override {parts[1]!r} in scene {text!r}; valid: {', '.join(FRICTIONS)}")
    return Scene(base, friction, seed)


def custom_friction(mu: float) -> Friction:
    """A floor friction override by coefficient (scenario files: ``friction: 0.3``), for benches that name a number
    rather than one of ``FRICTIONS``."""
    if isinstance(mu, bool) or not isinstance(mu, int | float) or not 0.0 < mu <= 2.0:
        raise SceneError(f"friction must be a number in (0, 2], got {mu!r}")
    return Friction(f"mu{mu:g}", float(mu), f"floor friction {mu:g} (a scenario's override)", "the scenario file")


def format_catalog() -> str:
    """The text of ``vasimov scenes``: every base with its parameters, then the friction overrides and the syntax."""
    w = max(len(n) for n in BASES)
    lines = ["scenes (vasimov up --scene NAME[+FRICTION], launch argument scene:=NAME[+FRICTION]):"]
    for b in BASES.values():
        params = ", ".join(f"{k}={v}" for k, v in b.params.items())
        lines.append(f"  {b.name:<{w}}  {b.description}" + (" [seed: the run's --seed]" if b.seeded else ""))
        if params:
            lines.append(f"  {'':<{w}}    {params}")
    lines.append("friction overrides (combine with any scene, e.g. slope_10_up+ice; default: the feet's 0.6):")
    for f in FRICTIONS.values():
        lines.append(f"  {f.name:<{w}}  mu={f.mu}: {f.description}")
    return "\n".join(lines)
