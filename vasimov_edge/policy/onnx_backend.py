"""Run an ONNX locomotion policy (the official 0818 checkpoint or anything with its contract) as a PolicyBackend.

The file is checked against ``policy_contract.onnx`` when it is loaded, not on the first control tick: one float32
input ``[1, 78]`` and one float32 output ``[1, 23]`` (a symbolic batch dimension is accepted, the feature dimension
must be fixed). Names are compared with the contract's ``obs``/``actions`` but, following the viewer's rule that the
first input is the observation whatever it is called, a different name is only reported unless ``strict_names``.
A model that does not fit raises :class:`OnnxContractError` saying what was expected and what was found.

Each :meth:`OnnxPolicyBackend.step` builds the observation with the shared :class:`ObservationBuilder`, runs one
inference, feeds the raw action back as the next "previous action" and returns
``target = default_pos + 0.25 * action`` in policy order.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from vasimov import joints
from vasimov.policy_contract import ACTION_DIM, ACTION_SCALE, DEFAULT_POS_POLICY, OBS_DIM
from vasimov_edge.policy.checkpoint import sha256_file
from vasimov_edge.policy.interface import PolicyInput, PolicyOutput
from vasimov_edge.policy.observation import ObservationBuilder

_log = logging.getLogger(__name__)

_ONNX = joints.facts()["policy_contract"]["onnx"]
EXPECTED_INPUT_NAME: str = str(_ONNX["input"]["name"])
EXPECTED_OUTPUT_NAME: str = str(_ONNX["output"]["name"])
_FLOAT = "tensor(float)"


class OnnxContractError(ValueError):
    """The ONNX file's inputs/outputs do not match the policy contract."""


class PolicyInferenceError(RuntimeError):
    """Inference produced something unusable (non-finite or wrongly shaped actions); the step is refused."""


def _describe(args: Sequence[Any]) -> str:
    return ", ".join(f"{a.name!r} {a.type} {list(a.shape)}" for a in args) or "none"


def _check_io(kind: str, args: Sequence[Any], want_name: str, want_dim: int, strict_names: bool) -> str:
    """Validate the single input or output against ``[1|batch, want_dim]`` float32; return its name."""
    want = f"one {kind} {want_name!r} {_FLOAT} [1, {want_dim}]"
    if len(args) != 1:
        raise OnnxContractError(f"expected {want}; found {len(args)} {kind}s: {_describe(args)}")
    a = args[0]
    shape = list(a.shape)
    batch_ok = len(shape) == 2 and (shape[0] == 1 or not isinstance(shape[0], int))
    if a.type != _FLOAT or not batch_ok or shape[1] != want_dim:
        raise OnnxContractError(f"expected {want} (batch may be symbolic); found {_describe(args)}")
    if a.name != want_name:
        if strict_names:
            raise OnnxContractError(f"expected {kind} name {want_name!r}; found {a.name!r}")
        _log.info("ONNX %s is named %r, not %r; using it by position as the contract allows", kind, a.name, want_name)
    return str(a.name)


class OnnxPolicyBackend:
    """PolicyBackend for a feed-forward ONNX policy with the 78 -> 23 contract (no recurrent state)."""

    def __init__(
        self,
        path: str | Path,
        *,
        providers: Sequence[str] = ("CPUExecutionProvider",),
        threads: int = 1,
        strict_names: bool = False,
        sha256: str | None = None,
    ) -> None:
        """Load and validate the model; ``sha256`` may be passed when the caller already hashed (and verified) it."""
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"ONNX policy {self.path} does not exist")
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        available = ort.get_available_providers()
        unknown = [p for p in providers if p not in available]
        if unknown:
            raise ValueError(f"ONNX Runtime providers {unknown} are not available here; available: {available}")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads  # one small MLP at 50 Hz: extra threads cost more than they save
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        try:
            self._session = ort.InferenceSession(str(self.path), sess_options=opts, providers=list(providers))
        except Exception as exc:  # onnxruntime raises its own exception types for unreadable graphs
            raise OnnxContractError(f"ONNX Runtime cannot load {self.path}: {exc}") from exc
        self.input_name = _check_io("input", self._session.get_inputs(), EXPECTED_INPUT_NAME, OBS_DIM, strict_names)
        self.output_name = _check_io(
            "output", self._session.get_outputs(), EXPECTED_OUTPUT_NAME, ACTION_DIM, strict_names
        )
        self.sha256: str = sha256 if sha256 is not None else sha256_file(self.path)
        self.providers: tuple[str, ...] = tuple(self._session.get_providers())
        self.name = f"onnx:{self.path.name}"
        self.last_inference_s: float | None = None  # wall time of the last session.run (latency budget checks)
        self._builder = ObservationBuilder()
        # One run on zeros proves the declared shapes are the real ones before the robot depends on them.
        self._infer(np.zeros(OBS_DIM, dtype=np.float32))

    @property
    def builder(self) -> ObservationBuilder:
        """The observation builder (layout and previous action) this backend feeds the network with."""
        return self._builder

    def reset(self) -> None:
        """Zero the previous action, as at the start of a training episode."""
        self._builder.reset()

    def _infer(self, obs: np.ndarray) -> np.ndarray:
        t0 = time.perf_counter()
        out = self._session.run([self.output_name], {self.input_name: obs.reshape(1, OBS_DIM)})[0]
        self.last_inference_s = time.perf_counter() - t0
        out = np.asarray(out)
        if out.shape != (1, ACTION_DIM):
            raise PolicyInferenceError(f"{self.name} returned shape {out.shape}; expected (1, {ACTION_DIM})")
        action = out.reshape(ACTION_DIM).astype(np.float32)
        bad = np.flatnonzero(~np.isfinite(action))
        if bad.size:
            raise PolicyInferenceError(f"{self.name} returned non-finite actions at policy indices {bad.tolist()}")
        return action

    def step(self, inp: PolicyInput) -> PolicyOutput:
        """One 50 Hz tick. While the firmware is not running the policy, reset and hold the default pose instead."""
        if not inp.active:
            self._builder.reset()
            return PolicyOutput(target=DEFAULT_POS_POLICY.copy(), observation=self._builder.build(inp))
        obs = self._builder.build(inp)
        action = self._infer(obs)
        self._builder.record_action(action)
        target = DEFAULT_POS_POLICY + ACTION_SCALE * action.astype(np.float64)
        return PolicyOutput(target=target, observation=obs, action=action)
