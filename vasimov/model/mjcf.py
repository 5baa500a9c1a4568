"""The MJCF of Asimov 1, generated from the fact sheet instead of kept as a hand-edited XML file.

Generating the model from ``vasimov.joints.facts()`` keeps one source of truth: the joint table, the URDF and the
MuJoCo scene cannot drift apart, and a corrected number in the sheet reaches every consumer at once.

Choices made here that are not robot properties (see ``asimov1_facts_NOTES.md``):

* **No passive joint damping by default.** vasimov's XML carries damping 5.0/2.0 *and* runs a PD loop with the
  training Kd, which counts the damping twice relative to training (Isaac's ``damping`` *is* the PD Kd). The motor
  model (``vasimov_plant.motor_model``) supplies Kd, so the joints get ``damping=0`` unless
  ``passive_damping=True`` asks for the sheet's values (useful to reproduce vasimov's settled height).
* **25 ``motor`` actuators, gear 1**, one per joint, named after the joint and declared in joint-index order, with
  ``ctrlrange = forcerange = ±effort``. The plant writes motor-model torques into ``data.ctrl`` so MuJoCo's own
  ``actuator_force`` holds the applied torque. Nothing may rely on the declaration order: resolve by name.
* **``virtual_gantry`` weld** from the world to ``pelvis_link`` (vasimov artefact standing in for the boot stand).
* **Primitive visuals** (group 2, no collision, no mass): the upstream meshes are not available.
* **A head camera** ``head_camera`` on ``neck_pitch_link`` (``vasimov.camera``: the sheet has none; assumed numbers).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from typing import Any

import mujoco
import numpy as np

from vasimov.camera import HEAD_CAMERA, HEAD_CAMERA_NAME, mujoco_xyaxes
from vasimov.joints import BY_SIM_NAME, SIM_NAMES, facts
from vasimov.model import terrain
from vasimov.scenes import Scene

MODEL_NAME = "asimov1"
ROOT_BODY = "pelvis_link"
FREE_JOINT = "floating_base"
GANTRY_EQUALITY = "virtual_gantry"
FLOOR_GEOM = "floor"
# Boot gantry height (m) of the pelvis origin: the sheet's training spawn height (pelvis_height.training_spawn_z).
# The robot boots limp with straight legs, whose foot spheres reach 0.630 m below the pelvis; 0.639 leaves them
# 8.6 mm clear of the floor (0.62 would push them 10 mm *into* it). After STAND, the default pose hangs the feet
# 24.5 mm up, the same drop training starts every episode with.
DEFAULT_GANTRY_HEIGHT = 0.639
# The weld's time constant: 2 physics steps, MuJoCo's stable minimum, so the gantry holds the 32 kg robot with
# ~0.1 mm sag instead of the default constraint's ~0.3 mm and 0.6 deg pitch.
GANTRY_SOLREF = (0.01, 1.0)

# Sensor and site names (from the sheet's ``sensors`` section); consumers import these instead of retyping strings.
IMU_SITE = "imu_in_pelvis"
PELVIS_SITE = "pelvis_site"
FOOT_SITES = ("left_foot", "right_foot")
SENSOR_GYRO = "imu_ang_vel"
SENSOR_VELOCIMETER = "imu_lin_vel"
SENSOR_ACCEL = "imu_lin_acc"
SENSOR_QUAT = "imu_quat"
SENSOR_ANGMOM = "root_angmom"

# The sheet names the foot-contact geoms ``<side>_foot<k>_collision``; the plant classifies contacts by this prefix.
FOOT_BODIES = {"left": "left_ankle_roll_link", "right": "right_ankle_roll_link"}

# Visual styling only (no physical meaning).
_COLOR_SHELL = "0.82 0.84 0.88 1"
_COLOR_JOINT = "0.20 0.22 0.26 1"
_COLOR_ACCENT = "0.95 0.55 0.15 1"
_COLOR_FOOT = "0.15 0.15 0.17 1"
_BONE_MIN_LENGTH = 1e-3  # m; shorter links get a sphere instead of a (degenerate) capsule


def _fmt(values: Iterable[float] | float) -> str:
    """Shortest round-trip text for numbers, so the generated XML reproduces the sheet's values exactly."""
    if isinstance(values, int | float):
        return repr(float(values))
    return " ".join(repr(float(v)) for v in values)


def _bodies() -> list[dict[str, Any]]:
    return list(facts()["kinematic_tree"]["bodies"])


def _children(bodies: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for b in bodies:
        out.setdefault(b["parent"], []).append(b)
    return out


def _joint_limits_ok(bodies: Sequence[dict[str, Any]]) -> None:
    """Refuse a sheet whose joints disagree with the joint table; a silent mismatch would mislabel every array."""
    hinge_names = [b["joint"]["name"] for b in bodies if b.get("joint", {}).get("type", "hinge") == "hinge"]
    if sorted(hinge_names) != sorted(SIM_NAMES):
        raise ValueError(f"fact sheet hinges {sorted(hinge_names)} != joint table {sorted(SIM_NAMES)}")


def _add_option(root: ET.Element) -> None:
    sim = facts()["simulation_options"]
    opt = sim["mjcf_option"]
    comp = sim["compiler"]
    ET.SubElement(
        root,
        "compiler",
        angle=str(comp["angle"]),
        autolimits=str(comp["autolimits"]).lower(),
    )
    ET.SubElement(
        root,
        "option",
        timestep=_fmt(opt["timestep"]),
        integrator=str(opt["integrator"]),
        solver=str(opt["solver"]),
        iterations=str(int(opt["iterations"])),
        ls_iterations=str(int(opt["ls_iterations"])),
        noslip_iterations=str(int(opt["noslip_iterations"])),
        impratio=_fmt(opt["impratio"]),
        cone=str(opt["cone"]),
    )


def _foot_contact(torsional_friction: float | None) -> tuple[int, list[float]]:
    """``condim`` and ``friction`` of the foot spheres: the sheet's, or torsional friction switched on."""
    foot = facts()["feet"]
    friction = [float(v) for v in foot["friction_mjcf"]]
    if torsional_friction is None:
        return int(foot["condim"]), friction
    if not (math.isfinite(torsional_friction) and torsional_friction > 0.0):
        raise ValueError(f"foot_torsional_friction must be finite and > 0 (m), got {torsional_friction}")
    friction[1] = float(torsional_friction)
    return 4, friction


def _add_defaults(root: ET.Element, foot_torsional_friction: float | None = None) -> None:
    sim = facts()["simulation_options"]
    coll = sim["collision_default_class"]
    foot = facts()["feet"]
    foot_condim, foot_friction = _foot_contact(foot_torsional_friction)
    default = ET.SubElement(root, "default")
    ET.SubElement(
        ET.SubElement(default, "default", {"class": "collision"}),
        "geom",
        group=str(int(coll["group"])),
        contype=str(int(coll["contype"])),
        conaffinity=str(int(coll["conaffinity"])),
        priority=str(int(coll["priority"])),
        condim=str(int(coll["condim"])),
        rgba="0.9 0.3 0.3 0.4",
    )
    ET.SubElement(
        ET.SubElement(default, "default", {"class": "foot"}),
        "geom",
        group=str(int(coll["group"])),
        contype=str(int(coll["contype"])),
        conaffinity=str(int(coll["conaffinity"])),
        priority=str(int(foot["priority"])),
        condim=str(foot_condim),
        friction=_fmt(foot_friction),
        rgba="0.9 0.3 0.3 0.6",
    )
    ET.SubElement(
        ET.SubElement(default, "default", {"class": "visual"}),
        "geom",
        group="2",
        contype="0",
        conaffinity="0",
        density="0",
    )


def _add_assets(root: ET.Element) -> None:
    asset = ET.SubElement(root, "asset")
    ET.SubElement(
        asset,
        "texture",
        name="grid",
        type="2d",
        builtin="checker",
        width="512",
        height="512",
        rgb1="0.32 0.34 0.38",
        rgb2="0.26 0.28 0.32",
        mark="edge",
        markrgb="0.5 0.5 0.5",
    )
    ET.SubElement(asset, "material", name="grid", texture="grid", texrepeat="8 8", reflectance="0.1")
    ET.SubElement(
        asset,
        "texture",
        name="sky",
        type="skybox",
        builtin="gradient",
        width="256",
        height="256",
        rgb1="0.55 0.65 0.78",
        rgb2="0.1 0.12 0.15",
    )


def _add_visuals(body_el: ET.Element, body: dict[str, Any], children: Sequence[dict[str, Any]]) -> None:
    """Primitive stand-ins for the missing meshes: the collision capsules, a bone to every child, a joint puck."""
    name = body["name"]
    k = 0

    def geom(**attrs: str) -> None:
        nonlocal k
        ET.SubElement(body_el, "geom", {"class": "visual", "name": f"{name}_visual{k}", **attrs})
        k += 1

    for c in body.get("collision", []):
        if c["type"] == "capsule":
            geom(type="capsule", size=_fmt(c["size"]), fromto=_fmt(c["fromto"]), rgba=_COLOR_SHELL)
    for child in children:
        p = np.asarray(child["pos"], dtype=float)
        length = float(np.linalg.norm(p))
        if length >= _BONE_MIN_LENGTH:
            geom(type="capsule", size="0.018", fromto=_fmt([0.0, 0.0, 0.0, *p]), rgba=_COLOR_JOINT)
    joint = body.get("joint", {})
    if joint.get("type", "hinge") == "hinge" and "axis" in joint:
        axis = np.asarray(joint["axis"], dtype=float)
        axis = axis / np.linalg.norm(axis)
        half = 0.022 * axis
        geom(type="cylinder", size="0.026", fromto=_fmt([*(-half), *half]), rgba=_COLOR_ACCENT)
    if name in FOOT_BODIES.values():
        spheres = np.array([c["pos"] for c in body["collision"] if c["type"] == "sphere"], dtype=float)
        lo, hi = spheres.min(axis=0), spheres.max(axis=0)
        centre = (lo + hi) / 2.0
        half = np.array([(hi[0] - lo[0]) / 2.0 + 0.01, (hi[1] - lo[1]) / 2.0 + 0.012, 0.009])
        centre[2] = lo[2] + half[2]  # sole plate sits on the contact spheres' centres
        geom(type="box", size=_fmt(half), pos=_fmt(centre), rgba=_COLOR_FOOT)
    if name == "waist_yaw_link":
        geom(type="box", size="0.07 0.11 0.1", pos="-0.02 0 0.2", rgba=_COLOR_SHELL)
    if name == "neck_pitch_link":
        geom(type="box", size="0.06 0.075 0.06", pos="0.02 0 0.06", rgba=_COLOR_SHELL)
        geom(type="box", size="0.005 0.06 0.025", pos="0.08 0 0.065", rgba=_COLOR_JOINT)  # visor, shows facing


def _add_body(
    parent_el: ET.Element,
    body: dict[str, Any],
    children_of: dict[str, list[dict[str, Any]]],
    *,
    passive_damping: bool,
) -> None:
    name = body["name"]
    attrs = {"name": name, "pos": _fmt(body["pos"])}
    if "quat" in body:
        attrs["quat"] = _fmt(body["quat"])
    body_el = ET.SubElement(parent_el, "body", attrs)
    inertial = body["inertial"]
    ET.SubElement(
        body_el,
        "inertial",
        pos=_fmt(inertial["pos"]),
        mass=_fmt(inertial["mass"]),
        fullinertia=_fmt(inertial["fullinertia"]),
    )
    joint = body.get("joint")
    if joint is not None:
        if joint.get("type") == "free":
            ET.SubElement(body_el, "freejoint", name=joint["name"])
        else:
            jattrs = {
                "name": joint["name"],
                "type": "hinge",
                "axis": _fmt(joint["axis"]),
                "range": _fmt(joint["range"]),
                "armature": _fmt(joint.get("armature", 0.0)),
                "frictionloss": _fmt(joint.get("frictionloss", 0.0)),
                "damping": _fmt(joint.get("damping", 0.0) if passive_damping else 0.0),
            }
            if "ref" in joint:
                jattrs["ref"] = _fmt(joint["ref"])
            ET.SubElement(body_el, "joint", jattrs)
    for c in body.get("collision", []):
        cls = "foot" if c["type"] == "sphere" and name in FOOT_BODIES.values() else "collision"
        gattrs = {"class": cls, "name": c["name"], "type": c["type"], "size": _fmt(c["size"])}
        if "fromto" in c:
            gattrs["fromto"] = _fmt(c["fromto"])
        if "pos" in c:
            gattrs["pos"] = _fmt(c["pos"])
        ET.SubElement(body_el, "geom", gattrs)
    children = children_of.get(name, [])
    _add_visuals(body_el, body, children)
    for s in body.get("sites", []):
        sattrs = {"name": s["name"], "pos": _fmt(s["pos"])}
        if "size" in s:
            sattrs["size"] = _fmt(s["size"])
        ET.SubElement(body_el, "site", sattrs)
    if name == HEAD_CAMERA.body:
        # the head camera (vasimov.camera: every number of it); a camera has no mass and no collision
        ET.SubElement(body_el, "camera", name=HEAD_CAMERA_NAME, pos=_fmt(HEAD_CAMERA.pos),
                      xyaxes=_fmt(mujoco_xyaxes()), fovy=_fmt(HEAD_CAMERA.vfov_deg),
                      resolution=f"{HEAD_CAMERA.width} {HEAD_CAMERA.height}")
    for child in children:
        _add_body(body_el, child, children_of, passive_damping=passive_damping)


def build_mjcf(
    *,
    floor: bool = True,
    gantry: bool = True,
    passive_damping: bool = False,
    gantry_height: float = DEFAULT_GANTRY_HEIGHT,
    foot_torsional_friction: float | None = None,
    scene: Scene | None = None,
) -> str:
    """The Asimov 1 scene as MJCF text.

    ``floor``: add the ground plane (a model without it is for kinematics/inertia checks). ``gantry``: add the
    ``virtual_gantry`` weld, active at boot, holding ``pelvis_link`` upright at ``gantry_height``; the plant
    re-targets it at run time. ``passive_damping``: use the sheet's (vasimov's) joint damping instead of 0.

    ``foot_torsional_friction`` (m; default ``None`` = the sheet's ``condim 3``): give the foot spheres
    ``condim 4`` with this torsional coefficient, so each sphere resists spinning with up to
    ``coefficient x normal force``. Why it exists: the real sole is a plate and training used PhysX convex hulls
    (patch friction), while four ``condim 3`` point contacts resist yaw only through their lever arms -- nothing
    once the pressure sits on a single sphere. Measured on an isolated foot (the sheet's spheres, 32.2 kg, yaw
    torque ramped until the foot turns 0.01 rad): one loaded sphere slips at ~0.9 N*m with ``condim 3`` and
    ~2.5 N*m with 0.005 m; two toe spheres 6.1 -> 6.4 N*m; four spheres ~17 N*m either way. 0.005 m (the sheet's
    own, so far unused, MuJoCo default; ~(2/3) mu a for a ~1 cm rubber patch) is the physically plausible value.
    Off by default: it is not in the sheet's contact model, and the built-in walker's results do not change with it.

    ``scene`` (``vasimov.scenes.parse_scene``): the ground around the robot (``vasimov.model.terrain``); ``None`` or
    the default scene (flat, no friction override) leaves the text exactly as without it.
    """
    if not math.isfinite(gantry_height):
        raise ValueError(f"gantry_height must be finite, got {gantry_height}")
    bodies = _bodies()
    _joint_limits_ok(bodies)
    children_of = _children(bodies)
    sim = facts()["simulation_options"]

    root = ET.Element("mujoco", model=MODEL_NAME)
    _add_option(root)
    ET.SubElement(root, "visual").append(ET.Element("headlight", diffuse="0.5 0.5 0.5", ambient="0.3 0.3 0.3"))
    _add_defaults(root, foot_torsional_friction)
    _add_assets(root)

    world = ET.SubElement(root, "worldbody")
    ET.SubElement(world, "light", name="sun", pos="0 0 4", dir="0 0 -1", directional="true", diffuse="0.7 0.7 0.7")
    floor_el = None
    if floor:
        fl = sim["floor_geom"]
        floor_el = ET.SubElement(
            world,
            "geom",
            name=FLOOR_GEOM,
            type=str(fl["type"]),
            size="0 0 0.05",
            friction=_fmt(fl["friction"]),
            condim=str(int(fl["condim"])),
            priority=str(int(fl["priority"])),
            material="grid",
        )
    if scene is not None and not scene.is_default:
        terrain.add_scene(root, world, floor_el, scene)
    for top in children_of.get("world", []):
        _add_body(world, top, children_of, passive_damping=passive_damping)

    contact = ET.SubElement(root, "contact")
    for b in bodies:
        if b["parent"] != "world" and "joint" in b:
            ET.SubElement(contact, "exclude", name=f"exclude_{b['parent']}__{b['name']}", body1=b["parent"],
                          body2=b["name"])

    if gantry:
        equality = ET.SubElement(root, "equality")
        # body1 = world, body2 = pelvis: relpose is the pelvis pose in the world frame (upright, at gantry_height).
        ET.SubElement(
            equality,
            "weld",
            name=GANTRY_EQUALITY,
            body1="world",
            body2=ROOT_BODY,
            relpose=_fmt([0.0, 0.0, gantry_height, 1.0, 0.0, 0.0, 0.0]),
            solref=_fmt(GANTRY_SOLREF),
            active="true",
        )

    actuator = ET.SubElement(root, "actuator")
    for name in SIM_NAMES:  # joint-index order, for readability only; code resolves actuators by name
        effort = BY_SIM_NAME[name].effort_limit
        ET.SubElement(
            actuator,
            "motor",
            name=name,
            joint=name,
            gear="1",
            ctrlrange=_fmt([-effort, effort]),
            forcerange=_fmt([-effort, effort]),
        )

    sensor = ET.SubElement(root, "sensor")
    ET.SubElement(sensor, "gyro", name=SENSOR_GYRO, site=IMU_SITE)
    ET.SubElement(sensor, "velocimeter", name=SENSOR_VELOCIMETER, site=IMU_SITE)
    ET.SubElement(sensor, "accelerometer", name=SENSOR_ACCEL, site=IMU_SITE)
    ET.SubElement(sensor, "framequat", name=SENSOR_QUAT, objtype="site", objname=IMU_SITE)
    ET.SubElement(sensor, "subtreeangmom", name=SENSOR_ANGMOM, body=ROOT_BODY)

    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"


def load_model(**kw: Any) -> mujoco.MjModel:
    """Compile ``build_mjcf(**kw)``; the keyword arguments are those of :func:`build_mjcf`."""
    return mujoco.MjModel.from_xml_string(build_mjcf(**kw))
