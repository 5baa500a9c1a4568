"""The head camera's maths against rendered known scenes: intrinsics from the field of view (a box of known size at a
known distance lands on the pixels the pinhole model predicts), depth linearisation (metres along the optical axis,
NaN where nothing is hit), the REP 103 optical frame against MuJoCo's camera frame, and which states become frames.
Renders headless (EGL, else OSMesa: vasimov.model.render)."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from vasimov.camera import (
    HEAD_CAMERA,
    HEAD_CAMERA_NAME,
    CameraSpec,
    intrinsics,
    linearise_depth,
    mujoco_xyaxes,
    optical_frame_in_body,
)
from vasimov.model.mjcf import load_model
from vasimov.model.render import GLUnavailableError, QposWriter, Renderer, choose_gl_backend
from vasimov_bridge.camera_node import FramePicker

DIST = 2.0  # m, the box's front face from the camera
HALF_W, HALF_H = 0.30, 0.20  # m, the face's half extents


def _known_scene(spec: CameraSpec, offset_y: float = 0.0) -> mujoco.MjModel:
    """A camera at the origin looking along +x (the head camera's mount axes) at a thin box whose front face is
    ``DIST`` ahead; nothing else (no floor), so everything around it is "no hit"."""
    xy = " ".join(repr(v) for v in mujoco_xyaxes())
    return mujoco.MjModel.from_xml_string(f"""
<mujoco>
  <worldbody>
    <light pos="0 0 3" dir="0 0 -1" directional="true"/>
    <camera name="{HEAD_CAMERA_NAME}" pos="0 0 0" xyaxes="{xy}" fovy="{spec.vfov_deg}"/>
    <geom type="box" pos="{DIST + 0.01} {offset_y} 0" size="0.01 {HALF_W} {HALF_H}" rgba="0.8 0.2 0.2 1"/>
  </worldbody>
</mujoco>""")


@pytest.fixture(scope="module")
def spec() -> CameraSpec:
    return HEAD_CAMERA


def _render(model: mujoco.MjModel, spec: CameraSpec):
    r = Renderer.for_camera(model, spec)
    try:
        r.forward()
        f = r.render()
        return f.rgb.copy(), f.depth.copy()
    finally:
        r.close()


def test_intrinsics_follow_the_vertical_field_of_view(spec):
    i = intrinsics(spec)
    assert i.fx == i.fy == pytest.approx(120.0 / math.tan(math.radians(29.0)))
    assert (i.cx, i.cy) == (159.5, 119.5)  # the image centre, pixel centres at integers (ROS/OpenCV)
    assert i.k == [i.fx, 0.0, i.cx, 0.0, i.fy, i.cy, 0.0, 0.0, 1.0]
    assert i.project(np.array([0.0, 0.0, 3.0])) == (i.cx, i.cy)


def test_a_box_of_known_size_covers_the_pixels_the_intrinsics_predict(spec):
    i = intrinsics(spec)
    rgb, depth = _render(_known_scene(spec), spec)
    hit = np.isfinite(depth)
    rows, cols = np.nonzero(hit)
    # size: the face spans 2 f X / Z pixels (each pixel counted when its centre is inside the projection)
    assert cols.max() - cols.min() + 1 == pytest.approx(2 * i.fx * HALF_W / DIST, abs=1.0)
    assert rows.max() - rows.min() + 1 == pytest.approx(2 * i.fy * HALF_H / DIST, abs=1.0)
    # centre: the principal point
    assert cols.mean() == pytest.approx(i.cx, abs=0.5) and rows.mean() == pytest.approx(i.cy, abs=0.5)
    # the box's red face is where the depth says something was hit
    assert (rgb[hit][:, 0] > rgb[hit][:, 2]).all()


def test_a_box_to_the_right_lands_right_of_the_centre_where_the_pinhole_model_puts_it(spec):
    """Sign conventions: body -y is the image's +u (right); the box's edges back-project to its true extent."""
    i = intrinsics(spec)
    _, depth = _render(_known_scene(spec, offset_y=-0.5), spec)
    cols = np.nonzero(np.isfinite(depth[int(i.cy)]))[0]
    # optical x of the face's edges: 0.5 - 0.3 and 0.5 + 0.3 (body -y)
    left, right = i.project(np.array([0.2, 0.0, DIST]))[0], i.project(np.array([0.8, 0.0, DIST]))[0]
    assert cols.min() == pytest.approx(left, abs=1.0) and cols.max() == pytest.approx(right, abs=1.0)


def test_depth_is_metres_along_the_optical_axis_and_nan_where_nothing_is_hit(spec):
    _, depth = _render(_known_scene(spec), spec)
    hit = np.isfinite(depth)
    # a face square to the axis has one depth everywhere (range would grow towards the edges: 1/cos)
    assert np.nanmax(np.abs(depth[hit] - DIST)) < 2e-3
    assert hit.sum() > 1000 and np.isnan(depth[~hit]).all() and np.isnan(depth[0, 0])


def test_linearisation_inverts_the_perspective_z_buffer():
    near, far = 0.05, 20.0
    z = np.array([0.05, 0.1, 0.5, 1.0, 3.0, 10.0, 19.9], dtype=np.float64)
    d = 1.0 - near * (far - z) / (z * (far - near))  # mjDEPTH_ZERONEAR: 0 at near, 1 at far
    back = linearise_depth(d.astype(np.float32), near, far)
    assert back == pytest.approx(z, rel=2e-3)
    assert np.isnan(linearise_depth(np.array([1.0], np.float32), near, far)).all()
    assert back.dtype == np.float32


def test_the_optical_frame_is_mujocos_camera_frame_turned_to_rep_103():
    """MuJoCo's camera looks along its -z with +y up; REP 103's optical frame looks along +z with +y down: the
    same frame turned 180 deg about x. Checked against the compiled model's camera in the head's body frame."""
    model = load_model()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    cam = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, HEAD_CAMERA_NAME)
    body = int(model.cam_bodyid[cam])
    assert mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, body) == HEAD_CAMERA.body
    cam_in_body = data.xmat[body].reshape(3, 3).T @ data.cam_xmat[cam].reshape(3, 3)
    pos, (x, y, z, w) = optical_frame_in_body(HEAD_CAMERA)
    quat = np.array([w, x, y, z])
    r = np.zeros(9)
    mujoco.mju_quat2Mat(r, quat)
    assert r.reshape(3, 3) == pytest.approx(cam_in_body @ np.diag([1.0, -1.0, -1.0]), abs=1e-12)
    assert np.array(pos) == pytest.approx(model.cam_pos[cam])
    assert r.reshape(3, 3)[:, 2] == pytest.approx([1.0, 0.0, 0.0])  # optical z: the head's forward
    assert model.cam_fovy[cam] == HEAD_CAMERA.vfov_deg


def test_the_head_camera_sees_the_floor_ahead_at_the_distance_geometry_gives():
    """The robot model on its boot gantry: the floor's depth in the bottom image row matches the camera height and
    the row's viewing angle (a whole-model check of mount, intrinsics and depth together)."""
    model = load_model()
    r = Renderer.for_camera(model, HEAD_CAMERA)
    try:
        w = QposWriter(model)
        r.data.qpos[:] = model.qpos0
        w.write(r.data.qpos, [0.0, 0.0, 0.639], [1.0, 0.0, 0.0, 0.0], np.zeros(0, int), [])
        r.forward()
        cam = r.fixed.fixedcamid
        height = float(r.data.cam_xpos[cam][2])
        depth = r.render().depth
    finally:
        r.close()
    i = intrinsics(HEAD_CAMERA)
    v = HEAD_CAMERA.height - 1
    # a camera looking level: row v sees the floor at optical z = height * fy / (v - cy)
    assert float(np.median(depth[v])) == pytest.approx(height * i.fy / (v - i.cy), rel=0.03)


def test_frames_are_the_first_states_at_or_after_each_frame_time():
    p = FramePicker(10.0)
    times = [k * 0.02 for k in range(30)]  # 50 Hz states
    picked = [t for t in times if p.due(t)]
    assert picked == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4, 0.5])
    assert not p.due(0.5)  # the same frame time is not rendered twice
    assert p.due(0.04)  # a restart (time went back) starts the grid again


def test_a_bad_camera_spec_is_refused():
    with pytest.raises(ValueError, match="near < far"):
        CameraSpec(near=1.0, far=0.5)
    with pytest.raises(ValueError, match="vfov_deg"):
        CameraSpec(vfov_deg=0.0)


def test_an_unusable_gl_choice_is_refused_naming_the_packages(monkeypatch):
    monkeypatch.setenv("MUJOCO_GL", "glfw")  # a windowed backend: no use to a headless node
    with pytest.raises(GLUnavailableError, match="egl, osmesa") as err:
        choose_gl_backend()
    assert "libosmesa6" in str(err.value) and "libegl1" in str(err.value)
