"""Scenes (vasimov.scenes, vasimov.model.terrain): the catalog and its parser, the default flat floor unchanged byte
for byte, every scene compiling, deterministic for a seed, standing a robot lowered from the gantry without a MuJoCo
warning, friction overrides reaching the foot contacts, the ground read back for viewers (and drawn as a Foxglove
SceneUpdate), and the configuration errors of `vasimov up` and the plant node for an unknown scene."""

from __future__ import annotations

import json
import math
import subprocess

import mujoco
import numpy as np
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from harness import ROOT, VENV_BIN, graph_env, next_domain_id

from vasimov.frames import projected_gravity
from vasimov.model.mjcf import build_mjcf, load_model
from vasimov.model.terrain import course_rough_heights, rough_heights, scene_geoms
from vasimov.scenes import BASES, FRICTIONS, START_PAD_RADIUS, VIEWER_COURSES, VIEWER_OBSTACLES, SceneError, parse_scene
from vasimov_bridge.foxglove_scene import scene_update
from vasimov_tools import cli
from vasimov_tools.closed_loop import ClosedLoop
from vasimov_tools.walk_bench import VelocityKeepalive, default_backend_factory, stand_and_balance

ROBOT_MASS_N = 32.2 * 9.81  # pelvis_link subtree weight (fact sheet ~32.2 kg)


# -- the catalog -----------------------------------------------------------------------------------------------------
def test_the_catalog_has_the_issues_scenes_and_overrides():
    kinds = {b.kind for b in BASES.values()}
    assert kinds == {"flat", "slope", "stairs", "stairs_down", "obstacles", "rough", "course_stairs", "course_slope",
                     "course_obstacles", "course_rough"}
    for name in ("flat", "slope_5_up", "slope_10_up", "slope_15_up", "slope_5_down", "slope_10_down", "slope_15_down",
                 "stairs_5cm", "stairs_10cm", "stairs_15cm", "stairs_5cm_down", "stairs_10cm_down", "stairs_15cm_down",
                 "obstacles", "rough", *VIEWER_COURSES.values()):
        assert name in BASES
    assert FRICTIONS["wet"].mu == 0.4 and FRICTIONS["ice"].mu == 0.1


@pytest.mark.parametrize("text", ["flat", "slope_10_up+ice", " stairs_5cm + wet ", "rough"])
def test_scene_names_read_back_to_themselves(text):
    scene = parse_scene(text, seed=4)
    assert parse_scene(scene.name, seed=4) == scene
    assert scene.name == text.replace(" ", "")


def test_empty_means_the_default_flat_floor():
    assert parse_scene("").is_default and parse_scene("flat").is_default
    assert not parse_scene("flat+ice").is_default


@pytest.mark.parametrize(("text", "needle"), [
    ("moon", "unknown scene 'moon'; valid: flat, slope_5_up"),
    ("ice", "flat+ice"),  # a friction alone: the hint says how to combine it
    ("flat+snow", "unknown friction override 'snow'"),
    ("flat+ice+wet", "write BASE or BASE+FRICTION"),
    ("flat+", "write BASE or BASE+FRICTION"),
])
def test_bad_scene_names_are_refused_with_the_valid_ones(text, needle):
    with pytest.raises(SceneError, match=None) as exc:
        parse_scene(text)
    assert needle in str(exc.value)


def test_bad_seeds_are_refused():
    for seed in (-1, 1.5, True):
        with pytest.raises(SceneError):
            parse_scene("rough", seed=seed)  # type: ignore[arg-type]


# -- the MJCF --------------------------------------------------------------------------------------------------------
def test_the_default_scene_leaves_the_model_byte_for_byte_unchanged():
    assert build_mjcf(scene=parse_scene("flat", seed=9)) == build_mjcf()


ALL_SCENES = [*BASES, *(f"{b}+{f}" for b in ("flat", "slope_10_up", "stairs_10cm", "rough") for f in FRICTIONS)]


@pytest.mark.parametrize("name", ALL_SCENES)
def test_every_scene_compiles_and_keeps_the_start_pad_flat_at_zero(name):
    scene = parse_scene(name, seed=1)
    model = load_model(scene=scene)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    groups = np.array([1, 0, 0, 0, 0, 0], dtype=np.uint8)
    hit = np.zeros(1, dtype=np.int32)
    for ang in np.linspace(0.0, 2.0 * math.pi, 12, endpoint=False):
        for r in (0.0, 0.5 * START_PAD_RADIUS, START_PAD_RADIUS):
            x, y = r * math.cos(ang), r * math.sin(ang)
            dist = mujoco.mj_ray(model, data, np.array([x, y, 5.0]), np.array([0.0, 0.0, -1.0]), groups, 1, -1, hit)
            assert 5.0 - dist == pytest.approx(0.0, abs=1e-6), (name, x, y)


@pytest.mark.parametrize("name", ["obstacles", "rough", "viewer_rough"])
def test_seeded_layouts_are_deterministic_for_a_seed(name):
    a, b = build_mjcf(scene=parse_scene(name, seed=5)), build_mjcf(scene=parse_scene(name, seed=5))
    assert a == b
    assert build_mjcf(scene=parse_scene(name, seed=6)) != a


def test_unseeded_scenes_ignore_the_seed():
    assert build_mjcf(scene=parse_scene("stairs_10cm", seed=1)) == build_mjcf(scene=parse_scene("stairs_10cm", seed=2))


@pytest.mark.parametrize(("name", "x", "z"), [
    ("slope_10_up", 0.35 + 1.0, math.tan(math.radians(10)) * 1.0),
    ("slope_15_down", 0.35 + 2.0, -math.tan(math.radians(15)) * 2.0),
    ("slope_15_down", 5.0, -2.5 * math.tan(math.radians(15))),  # the floor moved down to the ramp's foot
    ("stairs_10cm", 0.35 + 0.45, 0.2),  # on the second step
    ("stairs_15cm", 0.35 + 6 * 0.3, 0.9),  # the landing
])
def test_the_ground_is_where_the_parameters_put_it(name, x, z):
    loop = ClosedLoop.create(default_backend_factory(), scene=parse_scene(name))
    assert loop.plant.ground_height(x, 0.0) == pytest.approx(z, abs=2e-4)


def _ground(name: str, points: list[tuple[float, float]], seed: int = 0) -> list[float]:
    """Heights of the compiled ground under (x, y) points: a ray down onto group-0 geoms, as the plant reads it."""
    model = load_model(scene=parse_scene(name, seed=seed))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    groups = np.array([1, 0, 0, 0, 0, 0], dtype=np.uint8)
    hit = np.zeros(1, dtype=np.int32)
    return [5.0 - mujoco.mj_ray(model, data, np.array([x, y, 5.0]), np.array([0.0, 0.0, -1.0]), groups, 1, -1, hit)
            for x, y in points]


def test_stairs_down_start_on_the_top_landing_and_end_on_the_lowered_floor():
    # 6 risers of 10 cm from x = 0.35 m, 0.30 m treads: the landing at 0, tread k at -k risers, the floor at -0.6 m
    xs = [-2.5, 0.0, 0.34, 0.36, 0.35 + 0.45, 0.35 + 5 * 0.3 - 0.01, 0.35 + 5 * 0.3 + 0.01, 6.0]
    want = [0.0, 0.0, 0.0, -0.1, -0.2, -0.5, -0.6, -0.6]
    assert _ground("stairs_10cm_down", [(x, 1.0) for x in xs]) == pytest.approx(want, abs=1e-6)
    assert _ground("stairs_5cm_down", [(0.35 + 2.5 * 0.3, -1.4)]) == pytest.approx([-0.15], abs=1e-6)


@pytest.mark.parametrize("cm", [5, 10])
def test_the_viewer_stairs_course_is_five_up_a_top_and_five_down(cm):
    # the viewer's stairs_{cm}cm.xml: boxes centred at x = 4.0 m, half lengths 2.5, 2.15, 1.8, 1.45, 1.1 m
    h = cm / 100.0
    xs = [1.4, 1.6, 1.5 + 0.35 * 1.5, 2.95, 4.0, 5.05, 6.5 - 0.35 * 1.5, 6.4, 6.6]
    want = [0.0, h, 2 * h, 5 * h, 5 * h, 5 * h, 2 * h, h, 0.0]
    assert _ground(f"viewer_stairs_{cm}cm", [(x, 2.9) for x in xs]) == pytest.approx(want, abs=1e-6)


@pytest.mark.parametrize(("deg", "rise"), [(10, 0.3), (15, 0.4)])
def test_the_viewer_slope_course_ramps_up_holds_a_top_and_ramps_down(deg, rise):
    run = rise / math.tan(math.radians(deg))
    x0, top = 1.5, 1.5
    xs = [1.4, x0 + 0.5 * run, x0 + run + 0.75, x0 + run + top + 0.25 * run, x0 + 2 * run + top + 0.1]
    want = [0.0, 0.5 * rise, rise, 0.75 * rise, 0.0]
    assert _ground(f"viewer_slope_{deg}deg", [(x, -2.0) for x in xs]) == pytest.approx(want, abs=1e-6)


def test_the_viewer_obstacles_are_the_scene_files_boxes():
    def top_at(px: float, py: float) -> float:  # the highest of the (yawed) boxes over a point: some overlap
        best = 0.0
        for x, y, hx, hy, hz, yaw in VIEWER_OBSTACLES:
            c, s = math.cos(yaw), math.sin(yaw)
            u, v = c * (px - x) + s * (py - y), -s * (px - x) + c * (py - y)
            if abs(u) <= hx and abs(v) <= hy:
                best = max(best, 2.0 * hz)
        return best

    centres = [(x, y) for x, y, *_ in VIEWER_OBSTACLES]
    assert _ground("viewer_obstacles", centres) == pytest.approx([top_at(x, y) for x, y in centres], abs=1e-6)
    heights = [2.0 * hz for *_, hz, _ in VIEWER_OBSTACLES]
    assert len(heights) == 14 and min(heights) > 0.03 and max(heights) < 0.07  # the course's 3-7 cm
    assert _ground("viewer_obstacles", [(1.0, 0.0), (7.0, 0.0)]) == pytest.approx([0.0, 0.0], abs=1e-9)


def test_the_viewer_rough_course_is_tiles_of_its_height_range():
    scene = parse_scene("viewer_rough", seed=2)
    heights = course_rough_heights(scene)
    assert heights.shape == (21, 20) and heights.min() >= 0.005 and heights.max() <= 0.04
    centres = [(1.5 + (i + 0.5) * 0.3, -3.0 + (j + 0.5) * 0.3) for i, j in ((0, 0), (10, 9), (20, 19), (7, 13))]
    want = [heights[i, j] for i, j in ((0, 0), (10, 9), (20, 19), (7, 13))]
    assert _ground("viewer_rough", centres, seed=2) == pytest.approx(want, abs=1e-6)
    assert _ground("viewer_rough", [(1.45, 0.0), (7.85, 0.0)], seed=2) == pytest.approx([0.0, 0.0], abs=1e-9)


def test_the_heightfield_matches_its_heights_and_the_published_ground():
    scene = parse_scene("rough", seed=3)
    model = load_model(scene=scene)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    heights, res = rough_heights(scene)
    assert heights.min() == 0.0 and heights.max() == pytest.approx(scene.base.params["amplitude"], rel=0.3)
    hfield = next(g for g in scene_geoms(model) if g["type"] == "hfield")
    hit = np.zeros(1, dtype=np.int32)
    groups = np.array([1, 0, 0, 0, 0, 0], dtype=np.uint8)
    half = scene.base.params["size"] / 2.0
    for i, j in ((10, 150), (80, 3), (140, 90), (100, 100)):  # grid points: exact on the triangulated surface
        x, y = -half + j * res, -half + i * res
        dist = mujoco.mj_ray(model, data, np.array([x, y, 1.0]), np.array([0.0, 0.0, -1.0]), groups, 1, -1, hit)
        assert 1.0 - dist == pytest.approx(heights[i, j], abs=1e-6)
        assert hfield["heights"][i * hfield["ncol"] + j] == pytest.approx(heights[i, j], abs=1e-5)


# -- standing in every scene -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [*BASES, "flat+wet", "flat+ice", "slope_15_down+ice"])
def test_a_robot_lowered_from_the_gantry_stands_and_balances_in_every_scene(name):
    """`menlo stand -y && menlo balance -y` in lockstep (firmware core, built-in controller), then 2 s of balancing:
    no MuJoCo warning (the plant raises PhysicsError on any), upright, pelvis at standing height above the ground,
    and the whole weight on the feet (foot forces count contacts with any ground geom, the start pad of a down
    slope included)."""
    loop = ClosedLoop.create(default_backend_factory(), scene=parse_scene(name, seed=0))
    stand_and_balance(loop)
    keepalive = VelocityKeepalive(loop)
    for _ in range(100):
        keepalive.send(0.0, 0.0, 0.0)
        loop.step_tick()
    tr = loop.plant.truth()
    assert not loop.plant.gantry_engaged
    assert projected_gravity(tr.base_quat)[2] < -0.98
    assert tr.base_pos[2] - loop.plant.ground_height(tr.base_pos[0], tr.base_pos[1]) > 0.55
    assert np.hypot(*tr.base_pos[:2]) < 0.05
    assert tr.left_force + tr.right_force == pytest.approx(ROBOT_MASS_N, rel=0.1)


@pytest.mark.parametrize("friction", list(FRICTIONS))
def test_a_friction_override_governs_the_foot_ground_contacts(friction):
    loop = ClosedLoop.create(default_backend_factory(), scene=parse_scene(f"slope_5_down+{friction}"))
    stand_and_balance(loop)
    m, d, ix = loop.plant.model, loop.plant.data, loop.plant.index
    feet = [c for c in range(d.ncon) if ix.geom_foot_side[d.contact.geom[c]].any()]
    assert feet, "no foot contacts"
    for c in feet:
        assert d.contact.friction[c, 0] == pytest.approx(FRICTIONS[friction].mu)
    assert all(ix.geom_ground[d.contact.geom[c]].any() for c in feet)
    default = ClosedLoop.create(default_backend_factory())
    stand_and_balance(default)
    dd = default.plant.data
    assert dd.ncon > 0 and np.allclose(dd.contact.friction[: dd.ncon, 0], 0.6)  # the feet's, as in the sheet
    assert m.ngeom == default.plant.model.ngeom + 2  # start pad and ramp


def decode(message):
    """A foxglove-sdk message read back through its own advertised protobuf schema (as a client does)."""
    schema = message.get_schema()
    fds = descriptor_pb2.FileDescriptorSet.FromString(schema.data)
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(schema.name))
    return cls.FromString(message.encode())


# -- viewers ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["flat", "stairs_10cm", "slope_15_down", "obstacles", "rough"])
def test_the_ground_becomes_a_foxglove_scene_update(name):
    scene = parse_scene(name, seed=2)
    geoms = scene_geoms(load_model(scene=scene))
    published = json.loads(json.dumps({**scene.describe(), "geoms": geoms}))  # what /vasimov/scene carries
    update = decode(scene_update(published))
    assert [e.id for e in update.entities] == [f"scene/{g['name']}" for g in geoms]
    assert all(e.frame_id == "world" for e in update.entities)
    for e, g in zip(update.entities, geoms, strict=True):
        if g["type"] == "box":
            (cube,) = e.cubes
            assert (cube.size.x, cube.size.y, cube.size.z) == pytest.approx([2 * s for s in g["size"]])
            assert (cube.pose.position.x, cube.pose.position.y, cube.pose.position.z) == pytest.approx(g["pos"])
        elif g["type"] == "hfield":
            (tri,) = e.triangles
            assert len(tri.points) == g["nrow"] * g["ncol"]
            assert len(tri.indices) == 6 * (g["nrow"] - 1) * (g["ncol"] - 1)
    if name == "stairs_10cm":
        assert len(update.entities) == 7  # the floor and six steps


def test_a_broken_scene_description_is_refused_not_drawn():
    with pytest.raises(ValueError, match="cannot draw"):
        scene_update({"geoms": [{"name": "x", "type": "ellipsoid", "size": [1, 1, 1], "pos": [0, 0, 0],
                                 "quat": [1, 0, 0, 0], "rgba": [1, 1, 1, 1]}]})


# -- command line and plant node -------------------------------------------------------------------------------------
def test_vasimov_scenes_lists_every_scene_with_its_parameters(capsys):
    assert cli.main(["scenes"]) == 0
    out = capsys.readouterr().out
    for name in [*BASES, *FRICTIONS]:
        assert name in out
    assert "step_height=0.1" in out and "mu=0.1" in out
    assert cli.main(["scenes", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in listed["scenes"]] == list(BASES)
    assert {f["name"]: f["mu"] for f in listed["frictions"]} == {"wet": 0.4, "ice": 0.1}


@pytest.mark.parametrize("args", [["--scene", "moon"], ["scene:=flat+snow"]])
def test_vasimov_up_refuses_an_unknown_scene_before_starting_anything(args, capsys):
    assert cli.main(["up", "--lockstep", "--duration", "1", *args]) == 2
    err = capsys.readouterr().err
    assert "unknown" in err and "vasimov scenes" in err


def test_the_plant_node_refuses_an_unknown_scene_as_a_configuration_error():
    proc = subprocess.run([str(VENV_BIN / "plant_node"), "--ros-args", "-p", "scene:=moon"],
                          env=graph_env(next_domain_id()), cwd=ROOT, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "plant: configuration error: unknown scene 'moon'" in proc.stderr
