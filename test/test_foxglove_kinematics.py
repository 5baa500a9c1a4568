"""kinematics_tf: link transforms that put the URDF exactly where MuJoCo has the bodies."""

from __future__ import annotations

import re

import mujoco
import numpy as np
import pytest

from vasimov import joints
from vasimov.model.mjcf import load_model
from vasimov.model.urdf import build_urdf
from vasimov_bridge.kinematics_tf import WORLD_FRAME, KinematicTree, compose_world_poses


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    return load_model(floor=False, gantry=False)


@pytest.fixture(scope="module")
def tree(model) -> KinematicTree:
    return KinematicTree(model)


def _mujoco_poses(model: mujoco.MjModel, q: np.ndarray, names: tuple[str, ...], pos, quat):
    data = mujoco.MjData(model)
    free = next(j for j in range(model.njnt) if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE)
    adr = model.jnt_qposadr[free]
    data.qpos[adr:adr + 3] = pos
    data.qpos[adr + 3:adr + 7] = quat
    for name, angle in zip(names, q, strict=True):
        data.qpos[model.jnt_qposadr[model.joint(name).id]] = angle
    mujoco.mj_kinematics(model, data)
    return data


def _assert_same_pose(poses, model, data):
    for b in range(1, model.nbody):
        name = model.body(b).name
        p, qw = poses[name]
        np.testing.assert_allclose(p, data.xpos[b], atol=1e-12, err_msg=name)
        # q and -q are the same rotation
        sign = 1.0 if np.dot(qw, data.xquat[b]) >= 0 else -1.0
        np.testing.assert_allclose(sign * qw, data.xquat[b], atol=1e-12, err_msg=name)


@pytest.mark.parametrize("seed", range(8))
def test_links_match_mujoco_body_poses_for_random_joint_angles_and_base_poses(model, tree, seed):
    rng = np.random.default_rng(seed)
    lo, hi = (np.array([model.jnt_range[model.joint(n).id][k] for n in tree.joint_names]) for k in (0, 1))
    q = rng.uniform(lo - 0.3, hi + 0.3)  # also beyond the limits: kinematics does not clamp
    pos = rng.normal(scale=2.0, size=3)
    quat = rng.normal(size=4)
    quat *= rng.uniform(0.2, 3.0) / np.linalg.norm(quat)  # not unit: normalised like MuJoCo does
    data = _mujoco_poses(model, q, tree.joint_names, pos, quat / np.linalg.norm(quat))
    transforms = tree.transforms(q, pos, quat)
    assert transforms[0].parent == WORLD_FRAME and transforms[0].child == "pelvis_link"
    assert len(transforms) == model.nbody - 1
    for t in transforms:
        assert abs(np.linalg.norm(t.rotation_xyzw) - 1.0) < 1e-12
    _assert_same_pose(compose_world_poses(transforms), model, data)


def test_joint_state_order_is_mapped_by_name(model, tree):
    rng = np.random.default_rng(42)
    q_sim = rng.uniform(-0.5, 0.5, joints.NUM_JOINTS)  # /joint_states order = joints.SIM_NAMES
    order = tree.order_for(joints.SIM_NAMES)
    q_tree = q_sim[order]
    data = _mujoco_poses(model, q_tree, tree.joint_names, [0, 0, 0.7], [1, 0, 0, 0])
    _assert_same_pose(compose_world_poses(tree.transforms(q_tree, [0, 0, 0.7], [1, 0, 0, 0])), model, data)
    shuffled = list(reversed(joints.SIM_NAMES))
    assert [shuffled[i] for i in tree.order_for(shuffled)] == list(tree.joint_names)


def test_frames_are_the_urdf_links_and_parents_are_the_urdf_joints(tree):
    urdf = build_urdf()
    links = set(re.findall(r'<link name="([^"]+)"', urdf))
    assert set(tree.link_names) == links
    pairs = set(re.findall(r'<parent link="([^"]+)"\s*/>\s*<child link="([^"]+)"', urdf))
    got = {(t.parent, t.child) for t in tree.transforms(np.zeros(len(tree.joint_names)), [0, 0, 0], [1, 0, 0, 0])}
    assert got - {(WORLD_FRAME, tree.root)} == pairs


@pytest.mark.parametrize("names,match", [
    (joints.SIM_NAMES[:-1], r"missing \['neck_pitch_joint'\]"),
    ((*joints.SIM_NAMES, "tail_joint"), r"unknown \['tail_joint'\]"),
    ((*joints.SIM_NAMES[:-1], joints.SIM_NAMES[0]), "1 duplicated"),
])
def test_joint_names_that_are_not_this_robot_are_refused(tree, names, match):
    with pytest.raises(ValueError, match=match):
        tree.order_for(names)


@pytest.mark.parametrize("q,pos,quat,match", [
    ([0.0] * 24, [0, 0, 0], [1, 0, 0, 0], "expected 25 joint angles"),
    ([0.0] * 24 + [float("nan")], [0, 0, 0], [1, 0, 0, 0], r"non-finite joint angle for \['\w+'\]"),
    ([0.0] * 25, [0, 0, float("inf")], [1, 0, 0, 0], "base pose must be a finite"),
    ([0.0] * 25, [0, 0, 0], [0, 0, 0, 0], "zero length"),
    ([0.0] * 25, [0, 0], [1, 0, 0, 0], "base pose must be a finite"),
])
def test_bad_states_are_refused_with_the_reason(tree, q, pos, quat, match):
    with pytest.raises(ValueError, match=match):
        tree.transforms(q, pos, quat)


ANCHORED = """
<mujoco>
  <worldbody>
    <body name="base" pos="0 0 1">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.1" mass="2"/>
      <body name="arm" pos="0.1 0.2 0.3" quat="0.9238795 0.3826834 0 0">
        <joint name="shoulder" type="hinge" axis="0 1 1" pos="0.05 -0.02 0.1" ref="0.3"/>
        <geom type="sphere" size="0.05" mass="1"/>
        <body name="fixed_hand" pos="0 0 -0.4" euler="0.1 0.2 0.3">
          <geom type="sphere" size="0.03" mass="0.5"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_hinges_anchored_off_the_body_origin_and_bodies_without_joints_match_mujoco():
    """Asimov's hinges all sit at their body origins; the general case (MuJoCo's jnt_pos, a welded body) is
    covered here so the module stays right for another model."""
    model = mujoco.MjModel.from_xml_string(ANCHORED)
    tree = KinematicTree(model)
    assert tree.joint_names == ("shoulder",) and tree.root == "base"
    for angle in (-1.0, 0.0, 0.3, 2.0):
        data = _mujoco_poses(model, np.array([angle]), tree.joint_names, [0.5, -0.2, 1.0], [0.8, 0.1, 0.2, 0.3])
        _assert_same_pose(compose_world_poses(tree.transforms([angle], [0.5, -0.2, 1.0], [0.8, 0.1, 0.2, 0.3])),
                          model, data)
