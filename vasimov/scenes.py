"""The scene catalog: which worlds the twin can put Asimov 1 in, their parameters, and the one parser of a scene name.

A scene is chosen at start (``vasimov up --scene NAME``, launch argument ``scene``, plant parameter ``scene``) and is
written ``BASE`` or ``BASE+FRICTION``: a base world (flat floor, slope, stairs up or down, obstacles, rough ground,
one of Menlo's viewer terrain courses) and, if given, a floor friction override that combines with any base
(``slope_10_up+ice``). One string, because it travels as one launch argument, one ROS parameter, one provenance field
and one line of a bag, and reads back the same everywhere.

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
    kind: str  # flat | slope | stairs | stairs_down | obstacles | rough | course_* (the viewer's terrain courses)
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


def _stairs_down(cm: int) -> BaseScene:
    """The mirror of :func:`_stairs`: the robot boots on the top landing (z = 0) and the flight goes down 6 risers to
    the floor, which moves to z = -6 risers (as the down slopes move it)."""
    return BaseScene(
        f"stairs_{cm}cm_down", "stairs_down",
        f"flight of 6 steps down, {cm} cm risers, 0.30 m treads: the robot starts on the top landing, the first "
        f"edge at x = {FEATURE_START_X} m, the floor 6 risers below",
        {"step_height": cm / 100.0, "tread": 0.30, "steps": 6, "start_x": FEATURE_START_X, "width": FEATURE_WIDTH})


# Menlo's humanoid-policy-viewer terrain courses (benchmarks_in_viewer.terrain in the fact sheet): every course starts
# 1.5 m ahead of the spawn point, is 6 m wide and runs along +x. The numbers below are those of the viewer's scene
# fragments (menloresearch/humanoid-policy-viewer public/examples/scenes/terrain/*.xml, generated by its
# scripts/make_terrain_benchmark.py); where this model departs from them the description says so.
VIEWER_COURSE_START_X = 1.5
VIEWER_COURSE_WIDTH = 6.0
VIEWER_SOURCE = "menloresearch/humanoid-policy-viewer public/examples/scenes/terrain/{}.xml"
# The 14 boxes of obstacles.xml: centre x, y (m), half sizes x, y, z (m), yaw (rad); heights 3.1-6.9 cm.
VIEWER_OBSTACLES: tuple[tuple[float, float, float, float, float, float], ...] = (
    (2.1201, 0.0431, 0.1324, 0.1151, 0.0280, 1.14885),
    (4.2151, -0.5162, 0.1058, 0.1507, 0.0157, 0.28498),
    (2.9948, 0.1529, 0.1425, 0.1827, 0.0175, 2.97732),
    (1.9702, 0.4302, 0.1577, 0.1397, 0.0345, 0.90983),
    (6.4335, -0.3831, 0.1144, 0.1118, 0.0212, 1.82715),
    (2.0642, -0.5285, 0.1639, 0.1372, 0.0260, 0.64704),
    (5.0963, -0.0562, 0.1680, 0.1428, 0.0213, 0.94175),
    (5.0317, 0.0302, 0.1794, 0.1699, 0.0199, 2.74933),
    (2.3848, -0.0983, 0.1729, 0.1288, 0.0346, 2.37863),
    (5.5757, 0.3175, 0.1152, 0.1489, 0.0158, 1.80021),
    (5.1473, 0.0959, 0.1875, 0.1314, 0.0289, 1.43321),
    (5.5521, -0.5272, 0.1840, 0.1945, 0.0245, 2.20380),
    (3.3507, -0.1371, 0.1647, 0.1993, 0.0314, 2.10063),
    (2.3792, -0.5293, 0.1023, 0.1462, 0.0184, 2.41348),
)


def _viewer_stairs(cm: int) -> BaseScene:
    return BaseScene(
        f"viewer_stairs_{cm}cm", "course_stairs",
        f"Menlo viewer course stairs_{cm}cm: 5 steps up ({cm} cm risers, 0.35 m treads) from x = 1.5 m, a 2.2 m top "
        f"(the course README says 1.5 m; the scene file's boxes give 2.2 m), 5 steps down; 6 m wide",
        {"step_height": cm / 100.0, "tread": 0.35, "steps": 5, "top": 2.2, "start_x": VIEWER_COURSE_START_X,
         "width": VIEWER_COURSE_WIDTH, "source": VIEWER_SOURCE.format(f"stairs_{cm}cm")})


def _viewer_slope(deg: int, rise: float) -> BaseScene:
    return BaseScene(
        f"viewer_slope_{deg}deg", "course_slope",
        f"Menlo viewer course slope_{deg}deg: {deg} deg ramp up from x = 1.5 m to {rise} m, a 1.5 m top, the same ramp "
        f"down to the floor; 6 m wide",
        {"angle_deg": float(deg), "rise": rise, "top": 1.5, "start_x": VIEWER_COURSE_START_X,
         "width": VIEWER_COURSE_WIDTH, "source": VIEWER_SOURCE.format(f"slope_{deg}deg")})


BASES: dict[str, BaseScene] = {b.name: b for b in (
    BaseScene("flat", "flat", "the level floor plane (the default; the fact sheet's floor)"),
    *(_slope(d, direction) for direction in ("up", "down") for d in (5, 10, 15)),
    *(_stairs(cm) for cm in (5, 10, 15)),
    *(_stairs_down(cm) for cm in (5, 10, 15)),
    BaseScene("obstacles", "obstacles",
              "boxes scattered ahead of the robot (seeded layout): 2-10 cm high, 10-30 cm wide, random yaw",
              {"count": 16, "x_range": [0.5, 4.0], "y_range": [-1.5, 1.5], "height_range": [0.02, 0.10],
               "width_range": [0.10, 0.30]}, seeded=True),
    BaseScene("rough", "rough",
              "rough ground: a seeded heightfield, 0-4 cm bumps on a 0.2 m grid, flat within the start pad",
              {"size": 8.0, "resolution": 0.05, "amplitude": 0.04, "feature": 0.2,
               "pad_radius": round(START_PAD_RADIUS + 0.1, 3), "blend": 0.3}, seeded=True),
    *(_viewer_stairs(cm) for cm in (5, 10)),
    _viewer_slope(10, 0.3),
    _viewer_slope(15, 0.4),
    BaseScene("viewer_obstacles", "course_obstacles",
              "Menlo viewer course obstacles: its 14 boxes (3.1-6.9 cm high, 0.2-0.4 m footprint, yawed) at the "
              "scene file's positions, x 1.8-6.6 m, y -0.7..0.6 m",
              {"boxes": len(VIEWER_OBSTACLES), "source": VIEWER_SOURCE.format("obstacles")}),
    BaseScene("viewer_rough", "course_rough",
              "Menlo viewer course rough: 0.3 m square tiles 0.5-4 cm high, 21 rows from x = 1.5 m by 20 across "
              "(6 m wide); the heights are drawn uniformly from the run's seed (the scene file's own draw is not "
              "reproduced, only its tiling and range)",
              {"tile": 0.3, "rows": 21, "cols": 20, "height_range": [0.005, 0.04], "start_x": VIEWER_COURSE_START_X,
               "width": VIEWER_COURSE_WIDTH, "source": VIEWER_SOURCE.format("rough")}, seeded=True),
)}
# The viewer bench's terrain scene files -> the scenes that model them (vasimov_tools.viewer_suite writes these).
VIEWER_COURSES = {
    "terrain/stairs_5cm.xml": "viewer_stairs_5cm", "terrain/stairs_10cm.xml": "viewer_stairs_10cm",
    "terrain/slope_10deg.xml": "viewer_slope_10deg", "terrain/slope_15deg.xml": "viewer_slope_15deg",
    "terrain/obstacles.xml": "viewer_obstacles", "terrain/rough.xml": "viewer_rough",
}


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
