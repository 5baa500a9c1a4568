"""Headless rendering of the twin's model: the head camera's color and depth, and third-person stills.

Why here: the camera node (``vasimov_bridge.camera_node``) and ``vasimov snapshot`` (``vasimov_tools``) draw with
the same code, so a picture in the docs is what a perception user gets on the topics.

* **GL**: headless, no display. ``MUJOCO_GL`` picks the backend when set (``egl`` or ``osmesa``); otherwise
  :func:`choose_gl_backend` probes EGL first (Mesa's software EGL works without a GPU: Debian ``libegl1``,
  ``libopengl0``, ``libegl-mesa0``, ``libgl1-mesa-dri``), then OSMesa (``libosmesa6``), each in a throw-away child
  process, because PyOpenGL fixes its platform at first import and a failed EGL probe in-process would block the
  OSMesa fallback.
* **One GL context, one thread**: a :class:`Renderer` owns its context; every call must come from the thread that
  built it (GL contexts are current per thread). The camera node gives it a thread of its own.
* **Speed over looks** (``fast=True``, the camera's setting): no shadows, no reflections, no multisampling.
  Measured on this project's 2-core machine with software GL at 320x240: ~300 ms a frame with MuJoCo's default
  shadows, reflections and 4x multisampling, ~17 ms without (docs/cameras.md). Stills (``fast=False``) keep them.
* **One pass, two images**: ``mjr_readPixels`` reads color and the z-buffer of the same render; the z-buffer is
  linearised by ``vasimov.camera.linearise_depth`` with the clip planes this module sets. The camera draws without
  MuJoCo's skybox (drawn at a finite distance, it would give the sky a depth): where nothing is hit, depth is NaN
  and the color is left to the caller (the camera node paints a flat sky).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from vasimov.camera import HEAD_CAMERA_NAME, CameraSpec, linearise_depth

GL_BACKENDS = ("egl", "osmesa")
_PROBE = ("import mujoco, sys; "
          "from importlib import import_module; "
          "ctx = import_module('mujoco.' + sys.argv[1]).GLContext(8, 8); ctx.make_current(); ctx.free()")
_PROBE_TIMEOUT_S = 30.0
# Debian packages each backend needs (software Mesa); .ci/run installs them, docs/cameras.md lists them
GL_PACKAGES = {"egl": ("libegl1", "libegl-mesa0", "libgl1-mesa-dri", "libopengl0"), "osmesa": ("libosmesa6",)}


class GLUnavailableError(RuntimeError):
    """No headless OpenGL here: the message says what was tried and which packages provide it."""


def _hint() -> str:
    return ("install software Mesa: apt-get install " + " ".join(GL_PACKAGES["egl"]) + " (EGL) or "
            + " ".join(GL_PACKAGES["osmesa"]) + " (OSMesa); or set MUJOCO_GL=egl|osmesa")


def choose_gl_backend() -> str:
    """The headless GL backend for this process, set into ``MUJOCO_GL``/``PYOPENGL_PLATFORM`` before any GL import.
    ``MUJOCO_GL`` wins when set; otherwise EGL, then OSMesa, each probed in a child process.
    Raises GLUnavailableError."""
    chosen = os.environ.get("MUJOCO_GL", "").strip().lower()
    if chosen:
        if chosen not in GL_BACKENDS:
            raise GLUnavailableError(f"MUJOCO_GL={chosen!r}: headless rendering needs one of "
                                     f"{', '.join(GL_BACKENDS)}; {_hint()}")
        os.environ.setdefault("PYOPENGL_PLATFORM", chosen)
        return chosen
    errors = []
    for backend in GL_BACKENDS:
        env = dict(os.environ, MUJOCO_GL=backend, PYOPENGL_PLATFORM=backend)
        try:
            r = subprocess.run([sys.executable, "-c", _PROBE, backend], env=env, capture_output=True, text=True,
                               timeout=_PROBE_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            errors.append(f"{backend}: {exc}")
            continue
        if r.returncode == 0:
            os.environ["MUJOCO_GL"] = backend
            os.environ["PYOPENGL_PLATFORM"] = backend
            return backend
        last = (r.stderr.strip().splitlines() or ["exit " + str(r.returncode)])[-1]
        errors.append(f"{backend}: {last}")
    raise GLUnavailableError("no headless OpenGL (" + "; ".join(errors) + "); " + _hint())


def _gl_context(width: int, height: int) -> Any:
    backend = choose_gl_backend()
    try:
        module = __import__(f"mujoco.{backend}", fromlist=["GLContext"])
        ctx = module.GLContext(width, height)
        ctx.make_current()
    except Exception as exc:  # ImportError, OpenGL errors: all mean "no GL here"
        raise GLUnavailableError(f"{backend}: {type(exc).__name__}: {exc}; {_hint()}") from exc
    return ctx


@dataclass(frozen=True)
class Frame:
    """One render: RGB (h, w, 3) uint8 top row first, depth (h, w) float32 metres along the optical axis (NaN: no
    hit), both views of the renderer's buffers until the next render."""

    rgb: np.ndarray
    depth: np.ndarray


class QposWriter:
    """Writes a robot state (base pose + joint angles by name) into ``qpos``: what the camera needs from the plant."""

    def __init__(self, model: mujoco.MjModel) -> None:
        free = [j for j in range(model.njnt) if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
        self.base_adr = int(model.jnt_qposadr[free[0]]) if free else None
        self.adr: dict[str, int] = {}
        for j in range(model.njnt):
            if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE:
                self.adr[mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j)] = int(model.jnt_qposadr[j])

    def slots(self, names: Sequence[str]) -> np.ndarray:
        """qpos addresses of ``names`` (ValueError on an unknown joint)."""
        missing = [n for n in names if n not in self.adr]
        if missing:
            raise ValueError(f"unknown joints {missing}")
        return np.array([self.adr[n] for n in names], dtype=int)

    def write(self, qpos: np.ndarray, base_pos: Sequence[float], base_quat_wxyz: Sequence[float],
              slots: np.ndarray, q: Sequence[float]) -> None:
        if self.base_adr is not None:
            quat = np.asarray(base_quat_wxyz, dtype=float)
            norm = float(np.linalg.norm(quat))
            if not np.isfinite(norm) or norm < 1e-9:
                raise ValueError(f"base quaternion {list(quat)} is not a rotation")
            qpos[self.base_adr : self.base_adr + 3] = base_pos
            qpos[self.base_adr + 3 : self.base_adr + 7] = quat / norm
        qpos[slots] = q


class Renderer:
    """One offscreen GL context, scene and buffers for ``model`` (which it adjusts: buffer size, clip planes,
    multisampling). Call everything from the thread that built it; ``close()`` frees the context."""

    def __init__(self, model: mujoco.MjModel, width: int, height: int, near: float, far: float,
                 fast: bool = True, skybox: bool = True) -> None:
        self.model = model
        self.width, self.height = int(width), int(height)
        self.near, self.far = float(near), float(far)
        vis = model.vis
        vis.global_.offwidth = max(int(vis.global_.offwidth), self.width)
        vis.global_.offheight = max(int(vis.global_.offheight), self.height)
        if fast:
            vis.quality.offsamples = 0
        extent = float(model.stat.extent)
        vis.map.znear = self.near / extent  # MuJoCo's clip planes are in units of the model's extent
        vis.map.zfar = self.far / extent
        self.gl = _gl_context(self.width, self.height)
        self.context = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_100)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self.context)
        self.context.readDepthMap = mujoco.mjtDepthMap.mjDEPTH_ZERONEAR  # linearise_depth's convention
        self.scene = mujoco.MjvScene(model, maxgeom=4000)
        if fast:
            self.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
            self.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
        # the skybox is drawn at a finite distance: a camera whose depth must say "nothing hit" goes without it
        self.scene.flags[mujoco.mjtRndFlag.mjRND_SKYBOX] = int(skybox)
        self.option = mujoco.MjvOption()
        self.option.sitegroup[:] = 0  # IMU/foot sites are markers, not things a camera sees
        self.option.geomgroup[:] = 0
        self.option.geomgroup[0] = 1  # floor and scene
        self.option.geomgroup[2] = 1  # the robot's visuals (collision geoms, group 3, stay hidden)
        self.data = mujoco.MjData(model)
        self.rect = mujoco.MjrRect(0, 0, self.width, self.height)
        self._rgb = np.zeros((self.height, self.width, 3), dtype=np.uint8)
        self._z = np.zeros((self.height, self.width), dtype=np.float32)
        self.fixed = mujoco.MjvCamera()
        self.fixed.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self.renders = 0

    @classmethod
    def for_camera(cls, model: mujoco.MjModel, spec: CameraSpec, fast: bool = True) -> Renderer:
        """A renderer sized and clipped for ``spec``; the model's camera takes the spec's field of view."""
        cam = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, HEAD_CAMERA_NAME)
        if cam < 0:
            raise ValueError(f"the model has no camera {HEAD_CAMERA_NAME!r}")
        model.cam_fovy[cam] = spec.vfov_deg
        r = cls(model, spec.width, spec.height, spec.near, spec.far, fast=fast, skybox=False)
        r.fixed.fixedcamid = cam
        return r

    def forward(self) -> None:
        """Kinematics only (body and camera poses from ``data.qpos``): nothing of the dynamics is needed to draw."""
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_camlight(self.model, self.data)

    def render(self, camera: mujoco.MjvCamera | None = None, depth: bool = True) -> Frame:
        """Draw the current ``data`` from ``camera`` (default: the fixed camera of ``for_camera``)."""
        cam = self.fixed if camera is None else camera
        mujoco.mjv_updateScene(self.model, self.data, self.option, None, cam, mujoco.mjtCatBit.mjCAT_ALL,
                               self.scene)
        mujoco.mjr_render(self.rect, self.scene, self.context)
        mujoco.mjr_readPixels(self._rgb, self._z if depth else None, self.rect, self.context)
        self.renders += 1
        rgb = np.flipud(self._rgb)  # GL reads bottom row first; images go top row first
        z = linearise_depth(np.flipud(self._z), self.near, self.far) if depth else np.empty((0, 0), np.float32)
        return Frame(rgb=rgb, depth=z)

    def close(self) -> None:
        try:
            self.context.free()
        finally:
            self.gl.free()


def orbit_camera(lookat: Sequence[float], distance: float, azimuth_deg: float, elevation_deg: float
                 ) -> mujoco.MjvCamera:
    """A free camera orbiting ``lookat`` (MuJoCo's azimuth/elevation, degrees): the third-person view of stills."""
    cam = mujoco.MjvCamera()
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.lookat[:] = lookat
    cam.distance = float(distance)
    cam.azimuth = float(azimuth_deg)
    cam.elevation = float(elevation_deg)
    return cam
