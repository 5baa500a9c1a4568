"""`vasimov snapshot`: a still of the robot in a scene, drawn by the twin's own renderer (``vasimov.model.render``).

The robot is put where a user's run puts it: the plant's own core (``vasimov_plant.physics.PlantCore``) with the
scene and seed, booted into a boot state (``standing`` by default: the stand pose, settled on the ground for 2 s
of simulated time by ``vasimov_plant.boot_pose``). Then one picture: a third-person view orbiting the robot
(``--view third``, with MuJoCo's shadows, reflections and multisampling: stills are not real time) or exactly what
the head camera publishes (``--view head``).

``--gallery DIR`` writes the README's picture (``vasimov.png``, 800x450) and one still per scene of
:data:`GALLERY` into DIR; docs/images/ holds them (regenerate: ``vasimov snapshot --gallery docs/images``).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vasimov.boot_states import parse_boot
from vasimov.camera import HEAD_CAMERA
from vasimov.scenes import parse_scene

#: scenes in the gallery (docs/images/scene_<name>.png): one of each kind and both friction looks
GALLERY = ("flat", "slope_10_up", "stairs_10cm", "obstacles", "rough", "flat+wet", "flat+ice")
HERO = ("stairs_10cm", "vasimov.png")  # the README's picture: scene, file name


@dataclass(frozen=True)
class View:
    """A third-person orbit around ``lookat`` (m, world; None: ahead of the pelvis) in MuJoCo's angles (deg)."""

    azimuth: float = 305.0
    elevation: float = -20.0
    distance: float = 3.4
    lookat: tuple[float, float, float] | None = None


def _posed(scene_name: str, seed: int, boot_name: str):
    from vasimov_plant.boot_pose import boot
    from vasimov_plant.physics import PlantCore

    core = PlantCore(seed=seed, scene=parse_scene(scene_name, seed=seed))
    boot(core, parse_boot(boot_name))
    return core


def render_still(scene_name: str, width: int, height: int, view: View | None = None, seed: int = 0,
                 boot_name: str = "standing", head: bool = False) -> np.ndarray:
    """The picture as RGB (height, width, 3) uint8."""
    from vasimov.model.render import Renderer, orbit_camera

    core = _posed(scene_name, seed, boot_name)
    if head:
        spec = HEAD_CAMERA.with_(width=width, height=height)
        r = Renderer.for_camera(core.model, spec)
    else:
        core.model.vis.quality.shadowsize = 8192  # finer shadow map: no shadow speckles on the far floor
        r = Renderer(core.model, width, height, near=0.05, far=60.0, fast=False, skybox=True)
    try:
        r.data.qpos[:] = core.data.qpos
        r.forward()
        if head:
            frame = r.render()
            rgb = frame.rgb.copy()
            from vasimov_bridge.camera_node import SKY_RGB

            rgb[np.isnan(frame.depth)] = SKY_RGB
            return rgb
        v = view or View()
        pelvis = core.data.qpos[:3]
        lookat = v.lookat if v.lookat is not None else (float(pelvis[0]) + 0.9, float(pelvis[1]), 0.4)
        return r.render(orbit_camera(lookat, v.distance, v.azimuth, v.elevation), depth=False).rgb.copy()
    finally:
        r.close()


def save_png(rgb: np.ndarray, out: Path) -> Path:
    from PIL import Image

    out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rgb).save(out, format="PNG", optimize=True)
    return out


def gallery(directory: Path, seed: int = 0) -> list[Path]:
    """The README's picture (800x450) and a 480x270 still of each gallery scene."""
    scene, name = HERO
    paths = [save_png(render_still(scene, 800, 450, seed=seed), directory / name)]
    for s in GALLERY:
        paths.append(save_png(render_still(s, 480, 270, seed=seed), directory / f"scene_{s.replace('+', '_')}.png"))
    return paths


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("out", nargs="?", help="PNG file to write")
    p.add_argument("--scene", default="flat", metavar="NAME[+FRICTION]", help="world (vasimov scenes lists them)")
    p.add_argument("--seed", type=int, default=0, help="seed of seeded layouts (obstacles, rough)")
    p.add_argument("--boot", default="standing", help="boot state: standing (default), gantry, lying_back, ...")
    p.add_argument("--view", choices=("third", "head"), default="third",
                   help="third: orbit view of the robot (default); head: what the head camera publishes")
    p.add_argument("--width", type=int, default=800)
    p.add_argument("--height", type=int, default=450)
    p.add_argument("--azimuth", type=float, default=View.azimuth, help="orbit azimuth, deg (MuJoCo's)")
    p.add_argument("--elevation", type=float, default=View.elevation, help="orbit elevation, deg (negative: above)")
    p.add_argument("--distance", type=float, default=View.distance, help="orbit distance, m")
    p.add_argument("--gallery", metavar="DIR", help="write the README picture and one still per scene into DIR")


def run(ns: argparse.Namespace) -> int:
    import sys

    from vasimov.boot_states import BootError
    from vasimov.model.render import GLUnavailableError
    from vasimov.scenes import SceneError

    try:
        if ns.gallery:
            for path in gallery(Path(ns.gallery), seed=ns.seed):
                print(path)
            return 0
        if not ns.out:
            print("vasimov snapshot: give an output file (or --gallery DIR)", file=sys.stderr)
            return 2
        rgb = render_still(ns.scene, ns.width, ns.height, View(ns.azimuth, ns.elevation, ns.distance), seed=ns.seed,
                           boot_name=ns.boot, head=ns.view == "head")
        print(save_png(rgb, Path(ns.out)))
        return 0
    except (SceneError, BootError, ValueError) as exc:
        print(f"vasimov snapshot: {exc}", file=sys.stderr)
        return 2
    except GLUnavailableError as exc:
        print(f"vasimov snapshot: {exc}", file=sys.stderr)
        return 1
