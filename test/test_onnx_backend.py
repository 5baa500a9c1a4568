"""OnnxPolicyBackend end to end with synthetic ONNX files, its load-time contract checks, and the spec registry.

A linear model routes chosen observation entries to actions, so reading the actions back through ONNX Runtime shows
that each entry carries the quantity its name says; a bias-only model shows the targets land on the named joints.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from vasimov import joints
from vasimov_edge.policy.checkpoint import CheckpointError
from vasimov_edge.policy.interface import PolicyBackend, PolicyInput
from vasimov_edge.policy.onnx_backend import OnnxContractError, OnnxPolicyBackend, PolicyInferenceError
from vasimov_edge.policy.registry import BackendSpecError, HoldPoseBackend, make_backend
from vasimov_edge.policy.synthetic import make_linear_policy, make_mlp_policy

CONTRACT = joints.facts()["policy_contract"]
OBS = CONTRACT["onnx"]["input"]["shape"][-1]
ACT = CONTRACT["action"]["dim"]
SCALE = CONTRACT["action"]["scale"]
ACTION_NAMES: list[str] = CONTRACT["action"]["order"]
TERMS = [(r["term"], r["slice"], float(r["scale"])) for r in CONTRACT["observation"]]
AXES = {"base_ang_vel": ("gyro", "xyz"), "projected_gravity": ("projected_gravity", "xyz"), "command": ("command", "")}


def sample_input(*, active: bool = True) -> PolicyInput:
    n = joints.NUM_JOINTS
    k = np.arange(n, dtype=np.float64)
    sign = np.where(k % 3 == 0, -1.0, 1.0)
    return PolicyInput(
        tick=1,
        sim_time=0.02,
        gyro=np.array([-0.4, 0.9, 0.2]),
        projected_gravity=np.array([0.08, 0.03, -0.996]),
        quat=np.array([1.0, 0.0, 0.0, 0.0]),
        command=np.array([0.5, 0.1, -0.3]),
        q=joints.DEFAULT_POS + sign * 0.013 * (k + 1),
        qd=-sign * 0.45 * (k + 2),
        active=active,
    )


def expected_obs(inp: PolicyInput, prev_action: np.ndarray) -> np.ndarray:
    """The contract's observation recomputed from the sheet's term names and slot joint names."""
    out = np.zeros(OBS)
    for term, (start, stop), scale in TERMS:
        if term in AXES:
            out[start:stop] = scale * np.asarray(getattr(inp, AXES[term][0]))
            continue
        names = ACTION_NAMES if term == "actions" else CONTRACT["slots"][term.split("_")[-1]]["joints"]
        for k, name in enumerate(names):
            j = joints.joint_index(name)
            if term.startswith("joint_pos_"):
                out[start + k] = scale * (inp.q[j] - joints.DEFAULT_POS[j])
            elif term.startswith("joint_vel_"):
                out[start + k] = scale * inp.qd[j]
            else:
                out[start + k] = scale * prev_action[ACTION_NAMES.index(name)]
    return out


def default_by_name(name: str) -> float:
    return float(joints.DEFAULT_POS[joints.joint_index(name)])


@pytest.mark.parametrize("first_entry", range(0, OBS, ACT))
def test_linear_routing_reads_back_every_entry(tmp_path: Path, first_entry: int) -> None:
    """Action i = obs[first_entry + i] + b_i; two steps so the previous-action entries are non-zero too."""
    w = np.zeros((ACT, OBS), dtype=np.float32)
    routed = [(i, first_entry + i) for i in range(ACT) if first_entry + i < OBS]
    for i, j in routed:
        w[i, j] = 1.0
    b = np.linspace(0.1, 0.5, ACT).astype(np.float32)
    backend = OnnxPolicyBackend(make_linear_policy(tmp_path / "lin.onnx", w, b))
    inp = sample_input()
    first = backend.step(inp)
    second = backend.step(inp)
    assert first.action is not None and second.action is not None and second.observation is not None
    want = expected_obs(inp, first.action)
    np.testing.assert_allclose(second.observation, want, rtol=1e-6, atol=1e-7)
    for i, j in routed:
        assert second.action[i] == pytest.approx(want[j] + b[i], rel=1e-5, abs=1e-6), f"entry {j}"


def test_targets_land_on_named_joints(tmp_path: Path) -> None:
    value = {name: 0.05 * (k + 1) * (-1) ** k for k, name in enumerate(sorted(ACTION_NAMES))}
    b = np.array([value[n] for n in ACTION_NAMES], dtype=np.float32)
    backend = OnnxPolicyBackend(make_linear_policy(tmp_path / "bias.onnx", np.zeros((ACT, OBS)), b))
    out = backend.step(sample_input())
    q_target = np.full(joints.NUM_JOINTS, np.nan)
    q_target[joints.POLICY_TO_JOINT] = out.target
    for name, v in value.items():
        assert q_target[joints.joint_index(name)] == pytest.approx(default_by_name(name) + SCALE * v, rel=1e-6)
    for j in joints.NON_POLICY_JOINTS:
        assert np.isnan(q_target[j])  # the neck is never a policy target


def test_previous_action_feedback_over_two_steps_and_reset(tmp_path: Path) -> None:
    """Action = previous action + b, so the raw output doubles on the second step and restarts after reset."""
    act = next(slice(*r["slice"]) for r in CONTRACT["observation"] if r["term"] == "actions")
    w = np.zeros((ACT, OBS), dtype=np.float32)
    w[np.arange(ACT), np.arange(act.start, act.stop)] = 1.0
    b = np.linspace(-0.3, 0.6, ACT).astype(np.float32)
    backend: PolicyBackend = OnnxPolicyBackend(make_linear_policy(tmp_path / "fb.onnx", w, b))
    inp = sample_input()
    s1 = backend.step(inp)
    s2 = backend.step(inp)
    assert s1.observation is not None and s2.observation is not None
    np.testing.assert_array_equal(s1.observation[act], 0.0)
    np.testing.assert_allclose(s1.action, b, rtol=1e-6)
    np.testing.assert_allclose(s2.observation[act], b, rtol=1e-6)  # raw action, not 0.25 * action
    np.testing.assert_allclose(s2.action, 2 * b, rtol=1e-6)
    expected_target = np.array([default_by_name(n) for n in ACTION_NAMES]) + SCALE * 2 * b
    np.testing.assert_allclose(s2.target, expected_target, rtol=1e-6, atol=1e-7)
    backend.reset()
    s3 = backend.step(inp)
    assert s3.observation is not None
    np.testing.assert_array_equal(s3.observation[act], 0.0)
    np.testing.assert_allclose(s3.action, b, rtol=1e-6)


def test_inactive_input_resets_and_holds_default(tmp_path: Path) -> None:
    w = np.zeros((ACT, OBS), dtype=np.float32)
    backend = OnnxPolicyBackend(make_linear_policy(tmp_path / "b.onnx", w, np.ones(ACT)))
    backend.step(sample_input())
    assert np.all(backend.builder.previous_action == 1.0)
    out = backend.step(sample_input(active=False))
    assert out.action is None and out.observation is not None
    np.testing.assert_allclose(out.target, [default_by_name(n) for n in ACTION_NAMES])
    assert np.all(backend.builder.previous_action == 0.0)


def test_sha256_and_metadata(tmp_path: Path) -> None:
    path = make_linear_policy(tmp_path / "m.onnx", np.zeros((ACT, OBS)), np.zeros(ACT))
    backend = OnnxPolicyBackend(path)
    assert backend.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert (backend.input_name, backend.output_name) == ("obs", "actions")
    assert backend.providers == ("CPUExecutionProvider",)
    assert backend.name == "onnx:m.onnx"


def two_input_model(path: Path) -> Path:
    extra = helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [1, OBS])
    graph = helper.make_graph(
        [
            helper.make_node("Add", ["obs", "hidden"], ["s"]),
            helper.make_node("Gemm", ["s", "W"], ["actions"], transB=1),
        ],
        "two_inputs",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, [1, OBS]), extra],
        [helper.make_tensor_value_info("actions", TensorProto.FLOAT, [1, ACT])],
        [numpy_helper.from_array(np.zeros((ACT, OBS), np.float32), "W")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save_model(model, str(path))
    return path


def double_input_model(path: Path) -> Path:
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["obs", "W"], ["d"], transB=1), helper.make_node("Cast", ["d"], ["actions"], to=1)],
        "double_in",
        [helper.make_tensor_value_info("obs", TensorProto.DOUBLE, [1, OBS])],
        [helper.make_tensor_value_info("actions", TensorProto.FLOAT, [1, ACT])],
        [numpy_helper.from_array(np.zeros((ACT, OBS), np.float64), "W")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save_model(model, str(path))
    return path


@pytest.mark.parametrize(
    ("make", "found"),
    [
        (
            lambda p: make_linear_policy(p, np.zeros((ACT, OBS - 1)), np.zeros(ACT)),
            r"found 'obs' tensor\(float\) \[1, 77\]",
        ),
        (lambda p: make_linear_policy(p, np.zeros((ACT - 1, OBS)), np.zeros(ACT - 1)), r"\[1, 22\]"),
        (two_input_model, r"found 2 inputs: 'obs' .*, 'hidden'"),
        (double_input_model, r"tensor\(double\)"),
    ],
    ids=["input_77", "output_22", "two_inputs", "double_input"],
)
def test_load_rejects_models_off_contract(tmp_path: Path, make, found: str) -> None:
    path = make(tmp_path / "bad.onnx")
    with pytest.raises(OnnxContractError, match=r"expected one (input|output) .*\[1, (78|23)\]") as err:
        OnnxPolicyBackend(path)
    assert re.search(found, str(err.value)), str(err.value)


def test_other_names_accepted_unless_strict(tmp_path: Path) -> None:
    path = make_linear_policy(
        tmp_path / "n.onnx", np.zeros((ACT, OBS)), np.zeros(ACT), input_name="policy", output_name="action"
    )
    backend = OnnxPolicyBackend(path)
    assert backend.input_name == "policy" and backend.output_name == "action"
    assert backend.step(sample_input()).target.shape == (ACT,)
    with pytest.raises(OnnxContractError, match="expected input name 'obs'; found 'policy'"):
        OnnxPolicyBackend(path, strict_names=True)


def test_dynamic_batch_accepted(tmp_path: Path) -> None:
    path = make_linear_policy(tmp_path / "d.onnx", np.zeros((ACT, OBS)), np.zeros(ACT), dynamic_batch=True)
    assert OnnxPolicyBackend(path).step(sample_input()).target.shape == (ACT,)


def test_unknown_provider_is_named(tmp_path: Path) -> None:
    path = make_linear_policy(tmp_path / "p.onnx", np.zeros((ACT, OBS)), np.zeros(ACT))
    with pytest.raises(ValueError, match=r"NoSuchExecutionProvider.*available"):
        OnnxPolicyBackend(path, providers=("NoSuchExecutionProvider",))


def test_non_finite_action_is_a_typed_error(tmp_path: Path) -> None:
    w = np.zeros((ACT, OBS), dtype=np.float32)
    cmd_vx = next(r["slice"][0] for r in CONTRACT["observation"] if r["term"] == "command")
    w[3, cmd_vx] = 3e38  # finite weights; overflows to inf once vx is large
    backend = OnnxPolicyBackend(make_linear_policy(tmp_path / "o.onnx", w, np.zeros(ACT)))
    with pytest.raises(PolicyInferenceError, match=r"non-finite actions at policy indices \[3\]"):
        backend.step(replace(sample_input(), command=np.array([10.0, 0.0, 0.0])))
    assert np.all(backend.builder.previous_action == 0.0)  # the bad action was not fed back


def test_registry_local_zero_and_unknown(tmp_path: Path) -> None:
    path = make_linear_policy(tmp_path / "r.onnx", np.zeros((ACT, OBS)), np.zeros(ACT))
    onnx_backend = make_backend(str(path))
    assert isinstance(onnx_backend, OnnxPolicyBackend)
    hold = make_backend("zero")
    assert isinstance(hold, HoldPoseBackend) and isinstance(make_backend("hold"), HoldPoseBackend)
    out = hold.step(sample_input())
    np.testing.assert_allclose(out.target, [default_by_name(n) for n in ACTION_NAMES])
    assert out.action is None and out.observation is not None and out.observation.shape == (OBS,)
    with pytest.raises(BackendSpecError, match="valid: 'builtin', 'zero'"):
        make_backend("walk-please")
    with pytest.raises(CheckpointError, match="does not exist"):
        make_backend(str(tmp_path / "missing.onnx"))


def builtin_importable() -> bool:
    try:
        from vasimov_edge.policy.builtin import BuiltinController  # noqa: F401
    except ImportError:
        return False
    return True


def test_registry_builtin() -> None:
    """Another module provides the built-in controller; without it the spec fails with a clear message."""
    if builtin_importable():
        backend = make_backend("builtin")
        assert callable(backend.step) and callable(backend.reset)
    else:
        with pytest.raises(BackendSpecError, match=re.escape("vasimov_edge.policy.builtin.BuiltinController")):
            make_backend("builtin")


def test_mlp_matches_official_architecture(tmp_path: Path) -> None:
    model = onnx.load(str(make_mlp_policy(tmp_path / "arch.onnx", seed=0)))
    assert [n.op_type for n in model.graph.node] == ["Gemm", "Elu"] * 3 + ["Gemm"]  # "7 nodes" in the sheet
    dims = [tuple(numpy_helper.to_array(t).shape) for t in model.graph.initializer if t.name.startswith("W")]
    assert dims == [(512, 78), (256, 512), (128, 256), (23, 128)]
    a = OnnxPolicyBackend(tmp_path / "arch.onnx").step(sample_input())
    b = OnnxPolicyBackend(make_mlp_policy(tmp_path / "again.onnx", seed=0)).step(sample_input())
    np.testing.assert_array_equal(a.action, b.action)  # seeded: same weights, same output


def test_mlp_backend_timing(tmp_path: Path) -> None:
    """Inference time of the official architecture with random weights (printed, not asserted)."""
    backend = OnnxPolicyBackend(make_mlp_policy(tmp_path / "mlp.onnx", seed=3), threads=1)
    inp = sample_input()
    for _ in range(50):
        backend.step(inp)
    n = 2000
    infer = np.empty(n)
    t0 = time.perf_counter()
    for k in range(n):
        out = backend.step(inp)
        infer[k] = backend.last_inference_s or 0.0
    per_step = (time.perf_counter() - t0) / n
    assert out.action is not None and np.all(np.isfinite(out.target))
    print(
        f"\nMLP 78-512-256-128-23 (1 thread): step {per_step * 1e6:.1f} us mean; session.run median "
        f"{np.median(infer) * 1e6:.1f} us, p99 {np.percentile(infer, 99) * 1e6:.1f} us"
    )
