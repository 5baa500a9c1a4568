"""Scenes in MJCF: the ground geoms of each base world of ``vasimov.scenes`` and the friction overrides.

``build_mjcf(scene=...)`` calls :func:`add_scene` on its element tree; the default scene (flat, no override) never
comes here, so its MJCF stays the fact sheet's byte for byte. Every scene geom is a static geom of the world body in
group 0 (``SCENE_GROUP``), named ``scene_*``, colliding like the floor (contype = conaffinity = 1, priority 0, the
floor's friction), so the feet's friction governs foot contacts exactly as on the flat floor. A friction override
gives the floor and every scene geom priority 2 and its sliding coefficient: then the ground's friction governs.

Seeded layouts (obstacles, rough ground, the tile heights of the viewer's rough course) draw from their own stream
of the run's seed (``SeedSequence([seed, salt])``), so the same seed gives the same world and the plant's own
generator is untouched.

:func:`scene_geoms` reads the ground back from a *compiled* model (what MuJoCo simulates, not what was asked for)
as plain JSON-able data: the plant publishes it on ``/vasimov/scene`` for viewers (the Foxglove bridge draws it).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from typing import Any

import mujoco
import numpy as np

from vasimov.scenes import START_PAD_RADIUS, VIEWER_OBSTACLES, Scene

SCENE_PREFIX = "scene_"
SCENE_GROUP = 0  # the floor's group; the robot's geoms are groups 2 (visual) and 3 (collision)
FRICTION_PRIORITY = 2  # above the feet's 1: an override's friction governs the contact
_HALF_THICKNESS = 0.05  # m, ramps
# Colors only (no physics): each kind of ground looks distinct in the head camera and in stills (docs/cameras.md)
_COLOR_RAMP = "0.40 0.56 0.33 1"  # grass green
_COLOR_STEP = ("0.74 0.71 0.66 1", "0.56 0.54 0.50 1")  # light/dark concrete, alternating so each step edge shows
_COLOR_OBSTACLE = "0.85 0.45 0.15 1"
_COLOR_ROUGH = "0.52 0.40 0.27 1"  # bare earth
# a friction override tints the floor: (checker colors, reflectance)
_FLOOR_LOOK = {"wet": (("0.22 0.30 0.40", "0.18 0.25 0.34"), 0.35), "ice": (("0.80 0.88 0.95", "0.70 0.80 0.90"), 0.5)}
_COLOR_TERRAIN = "0.66 0.63 0.58 1"  # concrete: the viewer courses' slopes and landings
_SALT = {"obstacles": 1, "rough": 2, "course_rough": 3}


def _fmt(values: Any) -> str:
    arr = np.atleast_1d(np.asarray(values, dtype=float))
    return " ".join(repr(float(v)) for v in arr)


def _quat_y(angle: float) -> list[float]:
    """Quaternion (w x y z) of a rotation by ``angle`` rad about +y."""
    return [math.cos(angle / 2.0), 0.0, math.sin(angle / 2.0), 0.0]


def _quat_z(angle: float) -> list[float]:
    return [math.cos(angle / 2.0), 0.0, 0.0, math.sin(angle / 2.0)]


def _box(world: ET.Element, name: str, half: Any, pos: Any, rgba: str, quat: Any = None) -> None:
    attrs = {"name": SCENE_PREFIX + name, "type": "box", "size": _fmt(half), "pos": _fmt(pos), "rgba": rgba,
             "group": str(SCENE_GROUP)}
    if quat is not None:
        attrs["quat"] = _fmt(quat)
    ET.SubElement(world, "geom", attrs)


def _slope(world: ET.Element, floor: ET.Element | None, p: dict[str, Any]) -> None:
    """A ramp whose top face runs from (start_x, 0) to (start_x + length, rise), then level ground. Going down, the
    floor plane moves to z = rise and a pad box keeps the start at z = 0."""
    x0, length, rise, width = float(p["start_x"]), float(p["length"]), float(p["rise"]), float(p["width"])
    theta = math.atan2(rise, length)
    half_len = math.hypot(length, rise) / 2.0
    normal = np.array([-math.sin(theta), 0.0, math.cos(theta)])
    centre = np.array([x0 + length / 2.0, 0.0, rise / 2.0]) - _HALF_THICKNESS * normal
    _box(world, "ramp", [half_len, width / 2.0, _HALF_THICKNESS], centre, _COLOR_RAMP, _quat_y(-theta))
    if rise >= 0.0:
        _box(world, "plateau", [1.0, width / 2.0, rise / 2.0], [x0 + length + 1.0, 0.0, rise / 2.0], _COLOR_RAMP)
    else:
        back = 3.0  # m of start pad behind the robot
        _box(world, "start_pad", [(x0 + back) / 2.0, width / 2.0, -rise / 2.0], [(x0 - back) / 2.0, 0.0, rise / 2.0],
             _COLOR_RAMP)
        if floor is not None:
            floor.set("pos", _fmt([0.0, 0.0, rise]))


def _stairs(world: ET.Element, p: dict[str, Any]) -> None:
    """Steps k = 1..n as boxes from the floor to k risers; the last one is a 1.5 m landing."""
    h, tread, n, x0, width = (float(p["step_height"]), float(p["tread"]), int(p["steps"]), float(p["start_x"]),
                              float(p["width"]))
    for k in range(1, n + 1):
        depth = tread if k < n else 1.5
        x_lo = x0 + (k - 1) * tread
        _box(world, f"step{k}", [depth / 2.0, width / 2.0, k * h / 2.0], [x_lo + depth / 2.0, 0.0, k * h / 2.0],
             _COLOR_STEP[k % 2])


def _stairs_down(world: ET.Element, floor: ET.Element | None, p: dict[str, Any]) -> None:
    """The top landing (z = 0) from 3 m behind the robot to ``start_x``, then treads k = 1..n-1 at -k risers, then
    the floor, moved down to -n risers. Every box stands on the moved floor, so there is no gap under a tread."""
    h, tread, n, x0, width = (float(p["step_height"]), float(p["tread"]), int(p["steps"]), float(p["start_x"]),
                              float(p["width"]))
    bottom = -n * h
    back = 3.0  # m of landing behind the robot
    _box(world, "landing", [(x0 + back) / 2.0, width / 2.0, n * h / 2.0], [(x0 - back) / 2.0, 0.0, bottom / 2.0],
         _COLOR_TERRAIN)
    for k in range(1, n):
        top = -k * h
        _box(world, f"step{k}", [tread / 2.0, width / 2.0, (top - bottom) / 2.0],
             [x0 + (k - 0.5) * tread, 0.0, (top + bottom) / 2.0], _COLOR_STEP[k % 2])
    if floor is not None:
        floor.set("pos", _fmt([0.0, 0.0, bottom]))


def _course_stairs(world: ET.Element, p: dict[str, Any]) -> None:
    """The viewer's stairs course: ``steps`` boxes stacked one riser each, every one ``tread`` shorter at both ends
    than the one below, so the flight goes up, along a ``top`` long top and down again."""
    h, tread, n, top, x0, width = (float(p["step_height"]), float(p["tread"]), int(p["steps"]), float(p["top"]),
                                   float(p["start_x"]), float(p["width"]))
    total = 2.0 * (n - 1) * tread + top
    for k in range(1, n + 1):
        half = total / 2.0 - (k - 1) * tread
        _box(world, f"stair{k}", [half, width / 2.0, h / 2.0], [x0 + total / 2.0, 0.0, (k - 0.5) * h],
             _COLOR_STEP[k % 2])


def _course_slope(world: ET.Element, p: dict[str, Any]) -> None:
    """The viewer's slope course: a ramp up at ``angle_deg`` from ``start_x`` to ``rise``, a level ``top``, and the
    mirror ramp down to the floor (ramps 2 x 0.1 m thick, their top faces meeting the floor and the top exactly)."""
    theta = math.radians(float(p["angle_deg"]))
    rise, top, x0, width = float(p["rise"]), float(p["top"]), float(p["start_x"]), float(p["width"])
    run = rise / math.tan(theta)
    half_len = math.hypot(run, rise) / 2.0
    thick = 0.1
    for name, xc, sign in (("ramp_up", x0 + run / 2.0, 1.0), ("ramp_down", x0 + run + top + run / 2.0, -1.0)):
        normal = np.array([-sign * math.sin(theta), 0.0, math.cos(theta)])
        centre = np.array([xc, 0.0, rise / 2.0]) - thick * normal
        _box(world, name, [half_len, width / 2.0, thick], centre, _COLOR_TERRAIN, _quat_y(-sign * theta))
    _box(world, "top", [top / 2.0, width / 2.0, rise / 2.0], [x0 + run + top / 2.0, 0.0, rise / 2.0], _COLOR_TERRAIN)


def _course_obstacles(world: ET.Element) -> None:
    for i, (x, y, hx, hy, hz, yaw) in enumerate(VIEWER_OBSTACLES):
        _box(world, f"obstacle{i}", [hx, hy, hz], [x, y, hz], _COLOR_OBSTACLE, _quat_z(yaw))


def course_rough_heights(scene: Scene) -> np.ndarray:
    """Tile heights (m) of the viewer's rough course, rows along +x from ``start_x``, columns along +y from
    -width/2: uniform in ``height_range``, drawn from the run's seed."""
    p = scene.base.params
    lo, hi = p["height_range"]
    return _rng(scene).uniform(float(lo), float(hi), size=(int(p["rows"]), int(p["cols"])))


def _course_rough(world: ET.Element, scene: Scene) -> None:
    p = scene.base.params
    tile, x0, width = float(p["tile"]), float(p["start_x"]), float(p["width"])
    for i, row in enumerate(course_rough_heights(scene)):
        for j, height in enumerate(row):
            _box(world, f"tile{i}_{j}", [tile / 2.0, tile / 2.0, height / 2.0],
                 [x0 + (i + 0.5) * tile, -width / 2.0 + (j + 0.5) * tile, height / 2.0], _COLOR_STEP[(i + j) % 2])


def _rng(scene: Scene) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([scene.seed, _SALT[scene.base.kind]]))


def _obstacles(world: ET.Element, scene: Scene) -> None:
    p = scene.base.params
    rng = _rng(scene)
    placed = 0
    while placed < int(p["count"]):
        x, y = rng.uniform(*p["x_range"]), rng.uniform(*p["y_range"])
        hx, hy = rng.uniform(*p["width_range"], size=2) / 2.0
        height = rng.uniform(*p["height_range"])
        yaw = rng.uniform(-math.pi, math.pi)
        if math.hypot(x, y) - math.hypot(hx, hy) < START_PAD_RADIUS:
            continue  # the start pad stays clear
        _box(world, f"obstacle{placed}", [hx, hy, height / 2.0], [x, y, height / 2.0], _COLOR_OBSTACLE,
             _quat_z(yaw))
        placed += 1


def rough_heights(scene: Scene) -> tuple[np.ndarray, float]:
    """The rough ground's heights (m, rows along +y from -size/2, columns along +x) and its grid spacing: uniform
    noise on a ``feature`` grid, bilinearly interpolated, scaled to ``amplitude``, faded in from the start pad."""
    p = scene.base.params
    size, res, amp, feature = float(p["size"]), float(p["resolution"]), float(p["amplitude"]), float(p["feature"])
    n = round(size / res) + 1
    nc = round(size / feature) + 1
    coarse = _rng(scene).uniform(0.0, 1.0, size=(nc, nc))
    fine_axis = np.linspace(0.0, nc - 1.0, n)
    coarse_axis = np.arange(nc, dtype=float)
    rows = np.array([np.interp(fine_axis, coarse_axis, r) for r in coarse])  # (nc, n): along x
    grid = np.array([np.interp(fine_axis, coarse_axis, c) for c in rows.T]).T  # (n, n): rows y, cols x
    xs = np.linspace(-size / 2.0, size / 2.0, n)
    r = np.hypot(*np.meshgrid(xs, xs))
    w = np.clip((r - float(p["pad_radius"])) / float(p["blend"]), 0.0, 1.0)
    heights = amp * grid * (w * w * (3.0 - 2.0 * w))  # smoothstep fade: no ledge at the pad's edge
    return heights, res


def _rough(root: ET.Element, world: ET.Element, scene: Scene) -> None:
    heights, _ = rough_heights(scene)
    top = float(heights.max())
    if top <= 0.0:
        raise ValueError("rough ground has no relief (amplitude 0?)")
    n = heights.shape[0]
    half = float(scene.base.params["size"]) / 2.0
    # MuJoCo normalises elevation to [0, 1] and reads the attribute's first row as the +y edge: hand it normalised
    # (the pad's zeros stay exactly 0) and flipped, so compiled row 0 is the -y edge like ``heights``.
    elevation = np.flipud(heights / top)
    asset = root.find("asset")
    if asset is None:
        asset = ET.SubElement(root, "asset")
    ET.SubElement(asset, "hfield", name=SCENE_PREFIX + "rough", nrow=str(n), ncol=str(n),
                  size=_fmt([half, half, top, 0.05]), elevation=" ".join(f"{v:.6g}" for v in elevation.ravel()))
    ET.SubElement(world, "geom", name=SCENE_PREFIX + "rough", type="hfield", hfield=SCENE_PREFIX + "rough",
                  rgba=_COLOR_ROUGH, group=str(SCENE_GROUP))


def add_scene(root: ET.Element, world: ET.Element, floor: ET.Element | None, scene: Scene) -> None:
    """Add ``scene``'s ground to an MJCF tree being built (``floor``: the floor plane element, if any)."""
    kind, p = scene.base.kind, scene.base.params
    if kind == "slope":
        _slope(world, floor, p)
    elif kind == "stairs":
        _stairs(world, p)
    elif kind == "stairs_down":
        _stairs_down(world, floor, p)
    elif kind == "course_stairs":
        _course_stairs(world, p)
    elif kind == "course_slope":
        _course_slope(world, p)
    elif kind == "course_obstacles":
        _course_obstacles(world)
    elif kind == "course_rough":
        _course_rough(world, scene)
    elif kind == "obstacles":
        _obstacles(world, scene)
    elif kind == "rough":
        _rough(root, world, scene)
    elif kind != "flat":
        raise ValueError(f"no builder for scene kind {kind!r}")
    if scene.friction is not None and floor is not None and scene.friction.name in _FLOOR_LOOK:
        (rgb1, rgb2), reflectance = _FLOOR_LOOK[scene.friction.name]
        asset = root.find("asset")
        if asset is None:
            asset = ET.SubElement(root, "asset")
        name = SCENE_PREFIX + scene.friction.name
        ET.SubElement(asset, "texture", name=name, type="2d", builtin="checker", width="512", height="512",
                      rgb1=rgb1, rgb2=rgb2, mark="edge", markrgb="0.9 0.95 1")
        ET.SubElement(asset, "material", name=name, texture=name, texrepeat="8 8", reflectance=str(reflectance))
        floor.set("material", name)
    if scene.friction is not None:
        ground = [g for g in world.findall("geom") if g is floor or g.get("name", "").startswith(SCENE_PREFIX)]
        for g in ground:
            g.set("priority", str(FRICTION_PRIORITY))
            g.set("friction", _fmt([scene.friction.mu, 0.005, 0.0001]))
            g.set("condim", "3")


# -- reading the ground back -------------------------------------------------------------------------------------------
def ground_geom_ids(model: mujoco.MjModel) -> np.ndarray:
    """Ids of the ground: colliding geoms of the world body (the floor and every scene geom)."""
    static = (model.geom_bodyid == 0) & ((model.geom_contype | model.geom_conaffinity) != 0)
    return np.flatnonzero(static)


def scene_geoms(model: mujoco.MjModel) -> list[dict[str, Any]]:
    """The ground as compiled, in the world frame: ``type`` box | plane | hfield | sphere | cylinder | capsule,
    ``name``, ``pos``, ``quat`` (w x y z), ``rgba``, ``size`` (MuJoCo's: half sizes, radii); an hfield adds
    ``nrow``, ``ncol`` and ``heights`` (m above its ``pos``, row-major, row 0 at -y)."""
    out: list[dict[str, Any]] = []
    for g in ground_geom_ids(model):
        gtype = mujoco.mjtGeom(int(model.geom_type[g])).name.removeprefix("mjGEOM_").lower()
        mat = int(model.geom_matid[g])
        rgba = model.mat_rgba[mat] if mat >= 0 else model.geom_rgba[g]
        item: dict[str, Any] = {"name": mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, int(g)) or f"geom{g}",
                                "type": gtype, "pos": [float(v) for v in model.geom_pos[g]],
                                "quat": [float(v) for v in model.geom_quat[g]],
                                "rgba": [float(v) for v in rgba], "size": [float(v) for v in model.geom_size[g]]}
        if gtype == "hfield":
            h = int(model.geom_dataid[g])
            nrow, ncol = int(model.hfield_nrow[h]), int(model.hfield_ncol[h])
            adr = int(model.hfield_adr[h])
            data = model.hfield_data[adr : adr + nrow * ncol] * float(model.hfield_size[h, 2])
            item.update(size=[float(v) for v in model.hfield_size[h]], nrow=nrow, ncol=ncol,
                        heights=[round(float(v), 5) for v in data])
        out.append(item)
    return out
