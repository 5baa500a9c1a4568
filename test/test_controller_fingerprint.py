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

# computed by the single-class controller (before the split into modules), NumPy/MuJoCo of this tree's .venv;
# regenerated on purpose when dcm_step_error_share (0 -> 0.5) changed the gait
EXPECTED: dict[str, Print] = {
    "forward_0.3": Print(
        "936be508f721fc11701c9c80ba547dfa4f66ab72db7fbc25202b013f110c862b",
        (0.5629529165338067, 0.002765613288458627, 0.6221035468393498), -0.039130224262541854),
    "backward_0.2": Print(
        "1cf0597b64c8928d205b5b00aebe3ef2ef7cfe853e552bf34f9efb50e1a78ad8",
        (-0.2599453608296082, -0.01942542250520857, 0.6127322927341405), 0.009115318866452653),
    "strafe_left_0.2": Print(
        "02773ca0fa186e23e02d895e0648c469a6a94aab1326ba420c18308a565fbb4d",
        (0.08534248928523969, 0.37700400371638504, 0.620688929364936), 0.005407867403374409),
    "turn_0.3": Print(
        "bb155aae613f78a50f8b45332f1b50bf04ae5e24d71d08221c738368dde36b7c",
        (0.07773088904047788, 0.05039374787039199, 0.6211105546678335), 0.8195886054671607),
    "push_front_90N": Print(
        "3c21deb9e2ff989aebf70e337adf895709a2c32cffb6579c6314e56a13e5c369",
        (0.23114587864418143, 0.012083526143328477, 0.6145411313751181), 0.028751164039682066),
    "user_flow": Print(
        "6f385ecc04f36a4bbe0059be2e008e6df4bcec7703eb4a67bfa745012c9d1374",
        (0.41792836040261583, -0.027165782617070918, 0.6144752433736832), 0.006208076993323372),
    "options": Print(
        "1775e174f23f3d1afc3f48a1f4bb97b503f4ddb9179cf7db49adda4770ea4216",
        (0.07203096238841873, -0.028188480885964658, 0.6255844164594607), -0.013590892451985746),
}


FULL_EXPECTED: dict[str, Print] = {
    "full_forward_0.3": Print(
        "2bd447de5f908b847736198f9945eb72a4a43333872938b1425151cc75d36e09",
        (2.5701312955671436, -0.026920626122331613, 0.6166602350202532), 0.007380883985079165),
    "full_strafe_right_0.2": Print(
        "10d4f691b04d084f65dfce5fcccaa81a488dff3988df3a1d4f860407d0547233",
        (0.04545102969211097, -1.6887636804154675, 0.6189858734972696), -0.023785438562173793),
    "full_turn_0.3": Print(
        "8eca346ae5ba09c4ce43aa36225a99031bd73465341cbee9d54dcc0ebbcde923",
        (-0.03111470008691577, 0.06518104563239709, 0.6171846774578069), 2.9534743342578644),
    "full_random_20x3s_24s": Print(
        "f1cf6a52fc47ead828990130fa58f3bccf105a95be859f8f43e4023e6fb9252c",
        (-0.34108072471262274, 0.022586707716565627, 0.6182735600899113), 0.08764892287822779),
    "full_push_side_100N": Print(
        "8c00396000a26f9dac73ee74b7f29e282a8400e597587e51367457c4ba19e8b5",
        (0.042984926223598896, 0.02843974925421743, 0.6149742289609913), -0.00521161674404027),
    "full_user_flow": Print(
        "119f26cddaf3c09362347cd77c3bfb5ee914b48a5fa5fc45ae5c8ce307dad7a4",
        (0.7703502646378677, 0.019131953791597527, 0.6144085139032899), -0.016224197405985102),
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
