"""The Foxglove bridge's scene channel: the ground around the robot (slopes, stairs, obstacles, rough ground) drawn in
the 3D panel.

The plant publishes its scene once, latched, on ``/vasimov/scene`` (std_msgs/String JSON: name, parameters, seed and
the ground geoms as MuJoCo compiled them, ``vasimov.model.terrain.scene_geoms``). This module turns it into one
``foxglove.SceneUpdate`` on the Foxglove-only channel ``/vasimov/scene/entities``: boxes as cubes, the floor plane as
a thin 20 m square, a heightfield as an indexed triangle list, all in the ``world`` frame that ``/tf`` hangs the
robot from. Foxglove channels are not latched, so the update is logged again for each client that subscribes later
(``TopicBridge.reconcile`` asks). The bridge reads the topic from start (one message; it costs nothing after).
"""

from __future__ import annotations

import json
from typing import Any

from foxglove.channels import SceneUpdateChannel
from foxglove.messages import (
    Color,
    CubePrimitive,
    CylinderPrimitive,
    Point3,
    Pose,
    Quaternion,
    SceneEntity,
    SceneUpdate,
    SpherePrimitive,
    Timestamp,
    TriangleListPrimitive,
    Vector3,
)
from std_msgs.msg import String

from vasimov.ros import qos, topics

WORLD_FRAME = "world"
PLANE_EXTENT = 20.0  # m: the drawn square of MuJoCo's infinite floor plane
PLANE_THICKNESS = 0.002  # m, drawn just below the plane


def _pose(pos: list[float], quat_wxyz: list[float], dz: float = 0.0) -> Pose:
    w, x, y, z = quat_wxyz
    return Pose(position=Vector3(x=pos[0], y=pos[1], z=pos[2] + dz), orientation=Quaternion(x=x, y=y, z=z, w=w))


def _color(rgba: list[float]) -> Color:
    return Color(r=rgba[0], g=rgba[1], b=rgba[2], a=rgba[3])


def _hfield(g: dict[str, Any]) -> TriangleListPrimitive:
    """The heightfield as MuJoCo collides with it: a grid of points, two triangles per cell (indices)."""
    nrow, ncol = int(g["nrow"]), int(g["ncol"])
    sx, sy = float(g["size"][0]), float(g["size"][1])
    h = g["heights"]
    if len(h) != nrow * ncol or nrow < 2 or ncol < 2:
        raise ValueError(f"heightfield {g['name']!r}: {len(h)} heights for {nrow} x {ncol}")
    points = [Point3(x=-sx + 2.0 * sx * j / (ncol - 1), y=-sy + 2.0 * sy * i / (nrow - 1), z=float(h[i * ncol + j]))
              for i in range(nrow) for j in range(ncol)]
    indices: list[int] = []
    for i in range(nrow - 1):
        for j in range(ncol - 1):
            a = i * ncol + j
            indices += [a, a + 1, a + ncol + 1, a, a + ncol + 1, a + ncol]
    return TriangleListPrimitive(pose=_pose(g["pos"], g["quat"]), points=points, color=_color(g["rgba"]),
                                 indices=indices)


def scene_update(scene: dict[str, Any], sec: int = 0, nsec: int = 0) -> SceneUpdate:
    """One entity per ground geom of the plant's scene description (``/vasimov/scene``)."""
    entities = []
    for g in scene["geoms"]:
        kind, size = g["type"], g["size"]
        prims: dict[str, list[Any]] = {}
        if kind == "box":
            prims["cubes"] = [CubePrimitive(pose=_pose(g["pos"], g["quat"]),
                                            size=Vector3(x=2 * size[0], y=2 * size[1], z=2 * size[2]),
                                            color=_color(g["rgba"]))]
        elif kind == "plane":
            prims["cubes"] = [CubePrimitive(pose=_pose(g["pos"], g["quat"], -PLANE_THICKNESS / 2.0),
                                            size=Vector3(x=PLANE_EXTENT, y=PLANE_EXTENT, z=PLANE_THICKNESS),
                                            color=_color(g["rgba"]))]
        elif kind == "hfield":
            prims["triangles"] = [_hfield(g)]
        elif kind == "sphere":
            prims["spheres"] = [SpherePrimitive(pose=_pose(g["pos"], g["quat"]),
                                                size=Vector3(x=2 * size[0], y=2 * size[0], z=2 * size[0]),
                                                color=_color(g["rgba"]))]
        elif kind in ("cylinder", "capsule"):  # a capsule drawn as its cylinder
            prims["cylinders"] = [CylinderPrimitive(pose=_pose(g["pos"], g["quat"]),
                                                    size=Vector3(x=2 * size[0], y=2 * size[0], z=2 * size[1]),
                                                    bottom_scale=1.0, top_scale=1.0, color=_color(g["rgba"]))]
        else:
            raise ValueError(f"cannot draw ground geom {g.get('name')!r} of type {kind!r}")
        entities.append(SceneEntity(timestamp=Timestamp(sec, nsec), frame_id=WORLD_FRAME, id=f"scene/{g['name']}",
                                    frame_locked=False, **prims))
    return SceneUpdate(entities=entities)


class ScenePublisher:
    """Reads the latched ``/vasimov/scene`` and logs its ``SceneUpdate`` on ``/vasimov/scene/entities``, again for
    every client that subscribes later."""

    def __init__(self, node: Any, fox_context: Any) -> None:
        self.node = node  # create_subscription, count, log_limited, sim_ns
        self.channel = SceneUpdateChannel(topics.FOXGLOVE_SCENE, context=fox_context)
        self.update: SceneUpdate | None = None
        self.name = ""
        self.clients: set[int] = set()  # written by SDK threads under the TopicBridge lock
        self.served: set[int] = set()
        node.create_subscription(String, topics.SCENE, self.on_scene, qos.LATCHED)

    def on_scene(self, msg: String) -> None:
        try:
            scene = json.loads(msg.data)
            self.update = scene_update(scene)
            self.name = str(scene.get("name", ""))
            count = len(scene["geoms"])
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            self.node.count("scene_rejected")
            self.node.log_limited("scene", f"cannot draw the scene: {exc}")
            return
        self.node.get_logger().info(f"scene {self.name}: {count} ground entities on "
                                    f"{topics.FOXGLOVE_SCENE}")
        self.channel.log(self.update, log_time=self.node.sim_ns())
        self.node.count("scene_published")

    def reconcile(self, clients: set[int]) -> None:
        """Executor: log the scene again when a client has newly subscribed (channels keep no last message)."""
        newcomers = clients - self.served
        self.served = set(clients)
        if newcomers and self.update is not None:
            self.channel.log(self.update, log_time=self.node.sim_ns())
            self.node.count("scene_published")
