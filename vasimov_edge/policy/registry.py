"""Turn a policy spec string (a node parameter or CLI flag) into a PolicyBackend.

Specs: ``builtin`` (the model-based walker in ``vasimov_edge.policy.builtin``), ``builtin-v2`` (the LIPM/DCM walker
on placo in ``vasimov_edge.policy.walker``, selectable beside it), ``zero`` or its alias ``hold`` (hold
the default standing pose, the pre-locomotion "hold stance" controller), a local ``.onnx`` path, or a Hugging Face spec
(``hf://Menlo/asimov1-locomotion-0818@<revision>`` or ``owner/repo@revision``; see :mod:`.checkpoint`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vasimov.policy_contract import DEFAULT_POS_POLICY
from vasimov_edge.policy.checkpoint import OFFICIAL_SPEC, CheckpointError, is_local_spec, resolve_checkpoint
from vasimov_edge.policy.interface import PolicyBackend, PolicyInput, PolicyOutput
from vasimov_edge.policy.observation import ObservationBuilder

BUILTIN = "builtin"
WALKER_V2 = "builtin-v2"
ZERO = "zero"
HOLD_ALIASES = (ZERO, "hold")
SPEC_HELP = (
    f"'{BUILTIN}', '{ZERO}' (alias 'hold'), '{WALKER_V2}' (the LIPM/DCM walker on placo), "
    f"a local .onnx path, or a Hugging Face spec such as {OFFICIAL_SPEC} "
    "(hf://<owner>/<repo>[/<file>][@<revision>])"
)


class BackendSpecError(ValueError):
    """A policy spec that names no usable backend; the message lists the valid forms."""


class HoldPoseBackend:
    """Targets the default standing pose on every tick, whatever the sensors say.

    Used before locomotion starts (or when no policy is wanted) so the PD loop holds the stance the policy was trained
    around. It still builds the 78-D observation so dashboards show what a policy would see; there is no network, so
    ``action`` stays ``None``.
    """

    name = ZERO

    def __init__(self) -> None:
        self._builder = ObservationBuilder()

    def reset(self) -> None:
        """Nothing learned to forget; the builder's previous action is zero and stays zero."""
        self._builder.reset()

    def step(self, inp: PolicyInput) -> PolicyOutput:
        """Default pose in policy order, plus the observation for display."""
        return PolicyOutput(target=DEFAULT_POS_POLICY.copy(), observation=self._builder.build(inp))


def _builtin() -> PolicyBackend:
    try:
        from vasimov_edge.policy.builtin import BuiltinController
    except ImportError as exc:
        raise BackendSpecError(
            f"policy spec '{BUILTIN}' needs vasimov_edge.policy.builtin.BuiltinController, which cannot be imported "
            f"({exc}); use another spec: {SPEC_HELP}"
        ) from exc
    return BuiltinController()


def _walker_v2() -> PolicyBackend:
    try:
        from vasimov_edge.policy.walker import WalkerV2
    except ImportError as exc:
        raise BackendSpecError(
            f"policy spec '{WALKER_V2}' needs placo (requirements.txt), which cannot be imported ({exc}); "
            f"use another spec: {SPEC_HELP}"
        ) from exc
    return WalkerV2()


def check_spec(spec: str) -> None:
    """Refuse a spec that cannot name a backend, without building one (no onnxruntime, no download): an empty or
    unknown name, or a local .onnx file that is not there. Hugging Face specs are left to :func:`make_backend`."""
    s = spec.strip()
    if not s:
        raise BackendSpecError(f"empty policy spec; valid: {SPEC_HELP}")
    if s in (BUILTIN, WALKER_V2) or s in HOLD_ALIASES:
        return
    if is_local_spec(s):
        if not Path(s).expanduser().is_file():
            raise BackendSpecError(f"policy file {s!r} not found; valid: {SPEC_HELP}")
        return
    if not s.startswith("hf://") and "/" not in s:
        raise BackendSpecError(f"unknown policy spec {spec!r}; valid: {SPEC_HELP}")


def make_backend(spec: str, *, providers: Sequence[str] = ("CPUExecutionProvider",), threads: int = 1) -> PolicyBackend:
    """Build the backend named by ``spec``; ``providers``/``threads`` apply to ONNX backends only."""
    s = spec.strip()
    if not s:
        raise BackendSpecError(f"empty policy spec; valid: {SPEC_HELP}")
    if s == BUILTIN:
        return _builtin()
    if s == WALKER_V2:
        return _walker_v2()
    if s in HOLD_ALIASES:
        return HoldPoseBackend()
    from vasimov_edge.policy.onnx_backend import OnnxPolicyBackend  # onnxruntime only when a network is wanted

    try:
        ckpt = resolve_checkpoint(s)
    except CheckpointError as exc:
        if Path(s).suffix == "" and "/" not in s:
            raise BackendSpecError(f"unknown policy spec {spec!r}; valid: {SPEC_HELP}") from exc
        raise
    return OnnxPolicyBackend(ckpt.path, providers=providers, threads=threads, sha256=ckpt.sha256)
