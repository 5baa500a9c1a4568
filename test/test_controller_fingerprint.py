"""The built-in controller's exact output on fixed closed-loop runs: a hash of every tick's motor commands.

Why: the controller is a pile of small numerical decisions split over several modules (command shaping, estimation,
footsteps, gait, recovery, whole-body IK). A refactor that reorders one floating-point sum changes the gait a little
and still passes every physical criterion, so the physical tests cannot say "behaviour unchanged". These runs can: each
scenario runs the reference closed loop (plant + firmware core + controller, lockstep, deterministic) like the walking
bench, hashes every tick's targets, feed-forward torques, gains and telemetry (compute time aside) at full precision,
and adds the final base pose. The expected hashes were computed by the code before the split into modules.

A NumPy or MuJoCo upgrade may legitimately change the last bits of a result (a different summation order). Then the
hash test fails with final base poses that agree to many digits (the failure prints both); check that the change
comes from the library, not the code, and regenerate with ``.venv/bin/python test/test_controller_fingerprint.py``
(``--full`` also runs the long scenarios, ~10 s more, which are not part of the suite, against ``FULL_EXPECTED``).
"""

from __future__ import annotations

import hashlib
import platform
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import mujoco
import numpy as np
import pytest

from vasimov_edge.policy.builtin import BuiltinController, ControllerConfig
from vasimov_edge.policy.interface import PolicyInput, PolicyOutput
from vasimov_tools import walk_bench as wb
from vasimov_tools.closed_loop import ClosedLoop


class _Recorded(BuiltinController):
    """The controller, hashing what it answers each tick."""

    def __init__(self, config: ControllerConfig | None = None) -> None:
        self.digest = hashlib.sha256()
        super().__init__(config)

    def step(self, inp: PolicyInput) -> PolicyOutput:
        out = super().step(inp)
        h = self.digest
        h.update(b"A" if inp.active else b"I")
        for arr in (out.target, out.torque_ff, out.kp, out.kd):
            assert arr is not None
            h.update(np.ascontiguousarray(arr, dtype=np.float64).tobytes())
        tel = self.telemetry
        h.update(f"{tel.mode}|{tel.stance}|{tel.steps}".encode())
        for arr in (tel.com, tel.dcm, tel.dcm_error, tel.com_ref, tel.zmp_ref):
            h.update(np.ascontiguousarray(arr, dtype=np.float64).tobytes())
        return out


@dataclass(frozen=True)
class Print:
    """One run's fingerprint: the hash of every tick's answer and the final base pose (full precision)."""

    digest: str
    base_pos: tuple[float, float, float]
    base_yaw: float


def _run(s: wb.Scenario, **options: object) -> Print:
    """``s`` on the walking bench (stand, balance, settle, its commands and pushes) with config overrides."""
    s = replace(s, criteria=wb.Criteria(max_compute_p99=None))
    holder: list[_Recorded] = []
    plants: list[object] = []

    def factory(**o: object) -> _Recorded:
        holder.append(_Recorded(ControllerConfig(**{**o, **options})))  # type: ignore[arg-type]
        return holder[0]

    def on_tick(_t: float, _be: object, plant: object) -> None:
        if not plants:
            plants.append(plant)

    wb.run_scenario(s, factory, on_tick=on_tick, stop_on_fall=False)
    tr = plants[0].truth()  # type: ignore[attr-defined]
    return Print(holder[0].digest.hexdigest(), tuple(float(x) for x in tr.base_pos), float(tr.base_yaw))


def _scenario(name: str, duration: float | None, **options: object) -> Print:
    """A standard bench scenario, optionally cut to ``duration`` s."""
    s = wb.standard_scenarios()[name]
    return _run(s if duration is None else replace(s, duration=duration), **options)


def _push(force: tuple[float, float, float], duration: float) -> Print:
    """A 0.15 s pelvis push at 1 s while balancing (90 N front steps: the recovery code runs)."""
    return _run(wb.Scenario("push", duration, pushes=(wb.Push(1.0, force),)))


def _user_flow(balance_delay: float, walk_delay: float, vx: float, duration: float, rest: float) -> Print:
    """``menlo stand -y``; balance; walk ``vx`` for ``duration`` at the SDK's cadence; one zero; ``rest`` s."""
    be = _Recorded()
    loop = ClosedLoop.create(be)
    wb.stand_and_balance(loop, balance_delay)
    for _ in range(round(walk_delay / wb.CONTROL_DT)):
        loop.step_tick()
    keepalive = wb.VelocityKeepalive(loop)
    for _ in range(round(duration / wb.CONTROL_DT)):
        keepalive.send(vx, 0.0, 0.0)
        loop.step_tick()
    keepalive.send(0.0, 0.0, 0.0)
    for _ in range(round(rest / wb.CONTROL_DT)):
        loop.step_tick()
    tr = loop.plant.truth()
    return Print(be.digest.hexdigest(), tuple(float(x) for x in tr.base_pos), float(tr.base_yaw))


# short runs: part of the suite (~25 s of CPU in all)
RUNS = {
    "forward_0.3": lambda: _scenario("forward_0.3", 3.0),
    "backward_0.2": lambda: _scenario("backward_0.2", 2.5),
    "strafe_left_0.2": lambda: _scenario("strafe_left_0.2", 3.0),
    "turn_0.3": lambda: _scenario("turn_0.3", 3.0),
    "push_front_90N": lambda: _push((90.0, 0.0, 0.0), 3.5),
    "user_flow": lambda: _user_flow(0.5, 0.5, 0.3, 2.0, 1.5),
    # the branches off by default: arm and waist counter-swing, hip hike, stepping in place, no landing adaptation
    "options": lambda: _scenario("step_in_place_60s", 2.5, arm_swing=2.0, waist_swing=0.5, hip_hike=0.02,
                                 landing_adapt=0.0),
}

# long runs: checked by hand around refactors (python test/test_controller_fingerprint.py --full)
FULL_RUNS = {
    "full_forward_0.3": lambda: _scenario("forward_0.3", None),
    "full_strafe_right_0.2": lambda: _scenario("strafe_right_0.2", None),
    "full_turn_0.3": lambda: _scenario("turn_0.3", None),
    "full_random_20x3s_24s": lambda: _scenario("random_20x3s", 24.0),
    "full_push_side_100N": lambda: _scenario("push_side_100N", None),
    "full_user_flow": lambda: _user_flow(1.0, 2.0, 0.3, 3.0, 4.0),
}

def environment() -> str:
    """What the last bits of a floating-point result depend on besides the code: the numerical libraries and the
    CPU (NumPy and MuJoCo pick SIMD kernels at run time, and a different kernel may sum in a different order)."""
    model = "unknown cpu"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        model = next((line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                      if line.startswith("model name")), model)
        flags = next((line.split(":", 1)[1].split() for line in cpuinfo.read_text().splitlines()
                      if line.startswith("flags")), [])
        model += " " + ",".join(f for f in ("avx", "avx2", "fma", "avx512f") if f in flags)
    return f"mujoco {mujoco.__version__}, numpy {np.__version__}, {platform.machine()}, {model}"


#: the environment the expected fingerprints were computed in (elsewhere the test says so and skips: see module doc)
EXPECTED_ENVIRONMENT = "mujoco 4.0.0, numpy 2.5.5, x86_64, AMD EPYC avx,avx2,fma,avx512f"

# computed by the single-class controller (before the split into modules), NumPy/MuJoCo of this tree's .venv
EXPECTED: dict[str, Print] = {
    "forward_0.3": Print(
        "e0e38fa5c9e53989c9c5eca38f95e7c861748c6bff3c3e71537108294fc58f8e",
        (0.55502632770869, 0.0009677497900409445, 0.6219542865791465), -0.03905355476018305),
    "backward_0.2": Print(
        "6d7348bdf9e4d2b91fdea30c4a72ad490975734d110285686e750591dc869ec4",
        (-0.26303955455522565, -0.020484852506277674, 0.6128622989337287), 0.007668236800659667),
    "strafe_left_0.2": Print(
        "eb53a34a1de077258fdcb3d52b3d690627a9dbeb24e3ed7bba53e4f5532f27e6",
        (0.09546008422390766, 0.3796119155756816, 0.6249810384979781), 0.05524302235096),
    "turn_0.3": Print(
        "c90f21532b96bd768f7d3403a8ea0651ae59fa249539f042862bd0d8231409a8",
        (0.07201828238748319, 0.051149478808421606, 0.6212141862490781), 0.8184525015250556),
    "push_front_90N": Print(
        "a4707712783439f40b97959cdb75b1d5b6960f1ff04072d18caf0a27c642dbf9",
        (0.23258478940883645, 0.015066699329793081, 0.6145356529875989), 0.030057240082267764),
    "user_flow": Print(
        "8f0c228d0b39d400acc75303a0e47ee998067412540ecbc8fc10f930f590ea51",
        (0.41452252342332524, -0.0296406393354214, 0.6145291822306569), 0.007421779348193113),
    "options": Print(
        "0c3b971735da9c098bcb00f37a369d0f83622efcc2420976222c800fdaf5080d",
        (0.06658853891699808, -0.030828115284074455, 0.6256071432065102), -0.014288887530367143),
}


FULL_EXPECTED: dict[str, Print] = {
    "full_forward_0.3": Print(
        "b74efe9381d12380dbbc03c02e5f1e6e6ae5449699b3399074af113ee720eda8",
        (2.516786742103783, -0.026986618203853854, 0.6171633154606464), 0.004456128014045466),
    "full_strafe_right_0.2": Print(
        "8953eea608c0249cb6fdb5f7ef7887a4d7b1a299f04465927db99e66b0b10e06",
        (0.029663080510454506, -1.6757557895107489, 0.6184114232040704), 0.0055892204093284355),
    "full_turn_0.3": Print(
        "55036a36f515d14c91a93038084038f9547d5d08c3f9a33454a1342c2323a66c",
        (-0.03321000218415529, 0.05398617101702796, 0.6188182419037116), 2.982827542674915),
    "full_random_20x3s_24s": Print(
        "bcee0834bc67df4fd277fe81d7f589e50b1e8ad39a6f2ed71710bda3609bdb4b",
        (-0.4191367388245438, -0.004349416785468632, 0.6186118137327227), 0.1233069866524042),
    "full_push_side_100N": Print(
        "8c00396000a26f9dac73ee74b7f29e282a8400e597587e51367457c4ba19e8b5",
        (0.042984926223598896, 0.02843974925421743, 0.6149742289609913), -0.00521161674404027),
    "full_user_flow": Print(
        "8e2076dc75e6f79178a8f8250adf23a22a3caf011302fed46205ac8428f74513",
        (0.7547839519844802, 0.019981685094650876, 0.6144033364468685), -0.015933296293614146),
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_fingerprint_is_unchanged(name: str) -> None:
    if environment() != EXPECTED_ENVIRONMENT:
        pytest.skip(f"fingerprints were computed on {EXPECTED_ENVIRONMENT!r}, this is {environment()!r}: bit-exact "
                    "hashes are only comparable on the same libraries and CPU (regenerate: see the module doc)")
    got = RUNS[name]()
    want = EXPECTED[name]
    assert got.digest == want.digest, (
        f"{name}: the controller's per-tick output changed (final base {got.base_pos}, yaw {got.base_yaw!r}; "
        f"expected {want.base_pos}, {want.base_yaw!r})")
    assert got == want


def main(argv: list[str]) -> None:
    """Print each run's fingerprint in the form of ``EXPECTED``, and whether it matches the stored one."""
    print(f"environment: {environment()!r}")
    runs = {**RUNS, **(FULL_RUNS if "--full" in argv else {})}
    expected = {**EXPECTED, **FULL_EXPECTED}
    for name, run in runs.items():
        p = run()
        verdict = "unchanged" if expected.get(name) == p else "CHANGED"
        print(f'    "{name}": Print(  # {verdict}\n        "{p.digest}",\n        {p.base_pos!r}, {p.base_yaw!r}),',
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
