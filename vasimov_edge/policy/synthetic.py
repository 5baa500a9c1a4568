"""Small ONNX policies built with the ``onnx`` helper API, so tests and benchmarks need neither torch nor the network.

* :func:`make_linear_policy` (``actions = W @ obs + b``) lets a contract test route any observation entry to any
  action and read it back through the real ONNX runtime path, proving each entry carries the right quantity.
* :func:`make_mlp_policy` has the official checkpoint's architecture (``policy_contract.onnx.graph``) with small random
  weights: same FLOPs and node types, so its inference time stands in for the real model's. Its actions mean nothing.

Both use the official I/O names (``obs`` -> ``actions``) unless told otherwise, so they load through the same
validation as the real checkpoint.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# ONNX Runtime 1.32 runs opset 17 with every op used here; a fixed opset keeps the files loadable by older runtimes.
OPSET = 17
IR_VERSION = 8
INPUT_NAME = "obs"
OUTPUT_NAME = "actions"
MLP_HIDDEN = (512, 256, 128)  # actor_hidden_dims in the 0818 agent.yaml


def _batch_dim(dynamic_batch: bool) -> int | str:
    return "batch" if dynamic_batch else 1


def _save(graph: onnx.GraphProto, path: str | Path) -> Path:
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="vasimov_edge.policy.synthetic"
    )
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(model, str(out))
    return out


def make_linear_policy(
    path: str | Path,
    weight: np.ndarray,
    bias: np.ndarray,
    *,
    input_name: str = INPUT_NAME,
    output_name: str = OUTPUT_NAME,
    dynamic_batch: bool = False,
) -> Path:
    """Write ``actions = obs @ weight.T + bias`` as one Gemm node; shapes follow ``weight`` (out x in).

    Any shape is accepted on purpose: a 23x77 or 22x78 weight makes the malformed models the loader must reject.
    """
    w = np.asarray(weight, dtype=np.float32)
    b = np.asarray(bias, dtype=np.float32).reshape(-1)
    if w.ndim != 2 or b.shape != (w.shape[0],):
        raise ValueError(f"weight must be (out, in) and bias (out,); got {w.shape} and {b.shape}")
    n_out, n_in = w.shape
    batch = _batch_dim(dynamic_batch)
    graph = helper.make_graph(
        nodes=[helper.make_node("Gemm", [input_name, "W", "b"], [output_name], transB=1)],
        name="linear_policy",
        inputs=[helper.make_tensor_value_info(input_name, TensorProto.FLOAT, [batch, n_in])],
        outputs=[helper.make_tensor_value_info(output_name, TensorProto.FLOAT, [batch, n_out])],
        initializer=[numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b")],
    )
    return _save(graph, path)


def make_mlp_policy(
    path: str | Path,
    seed: int,
    *,
    obs_dim: int = 78,
    action_dim: int = 23,
    hidden: tuple[int, ...] = MLP_HIDDEN,
    weight_std: float = 0.5,
) -> Path:
    """Write the official actor shape (Gemm/ELU x3, then Gemm to the actions) with seeded random weights.

    Weights are N(0, weight_std / sqrt(fan_in)) and biases zero, so activations stay O(1) and outputs finite.
    """
    rng = np.random.default_rng(seed)
    sizes = (obs_dim, *hidden, action_dim)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    prev = INPUT_NAME
    for layer, (n_in, n_out) in enumerate(pairwise(sizes)):
        w = (rng.standard_normal((n_out, n_in)) * (weight_std / np.sqrt(n_in))).astype(np.float32)
        b = np.zeros(n_out, dtype=np.float32)
        inits += [numpy_helper.from_array(w, f"W{layer}"), numpy_helper.from_array(b, f"b{layer}")]
        last = layer == len(sizes) - 2
        gemm_out = OUTPUT_NAME if last else f"h{layer}"
        nodes.append(helper.make_node("Gemm", [prev, f"W{layer}", f"b{layer}"], [gemm_out], transB=1))
        if not last:
            nodes.append(helper.make_node("Elu", [gemm_out], [f"a{layer}"], alpha=1.0))
            prev = f"a{layer}"
    graph = helper.make_graph(
        nodes=nodes,
        name="mlp_policy",
        inputs=[helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, [1, obs_dim])],
        outputs=[helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, [1, action_dim])],
        initializer=inits,
    )
    return _save(graph, path)
