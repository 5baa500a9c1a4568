"""Knock-downs in every direction, the recovery chain's protective fall against the limp fall of the hardware latch.

Issue 21 asks for the safe fall's effect measured against an unprotected fall. This runs the single-process lockstep
closed loop (`vasimov_tools.closed_loop`, the firmware core users drive) through many knock-downs: balancing or
walking, then a pelvis push (``--force`` N for 0.3 s) toward the front, back, left or right, with the push time
spread over a gait cycle (``--trials`` per direction). Each one runs twice, recovery off (the robot's latch: DAMP,
limp) and on (the chain's protective pose). From the push on, sampled every physics step (ground truth, scoring
only):

* ``head_m_s``: the head's speed when the head or neck first touches the floor (0: it never does);
* ``torso_m_s``: the speed of the pelvis or torso when one of them first touches the floor (0: never);
* ``joint_rad_s``: the largest joint speed (the motors' rated speeds are 3.98-12.57 rad/s).

    .venv/bin/python -m vasimov_tools.fall_study --trials 5            # standing, 4 directions
    .venv/bin/python -m vasimov_tools.fall_study --trials 5 --walking 0.2
    .venv/bin/python -m vasimov_tools.fall_study --trials 5 --scene flat+wet   # the wet floor (mu 0.4)

Prints one JSON line per trial and a Markdown table of medians and maxima per direction.
"""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

import mujoco
import numpy as np

from vasimov.scenes import parse_scene
from vasimov_edge.firmware import FirmwareParams
from vasimov_tools.closed_loop import ClosedLoop
from vasimov_tools.push_limit import DIRECTIONS  # the push-direction names the bench uses
from vasimov_tools.walk_bench import boot as bench_boot
from vasimov_tools.walk_bench import default_backend_factory

TORSO = ("pelvis_link", "waist_yaw_link")
NECK_AND_HEAD = ("neck_yaw_link", "neck_pitch_link")


class FallMeter:
    """Wraps a plant's ``step`` to sample the fall at every physics step (ground truth): impact speeds at the first
    floor contact of the head and of the torso, the largest joint speed."""

    def __init__(self, plant: Any) -> None:
        self.plant = plant
        m = plant.model
        ids = {n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, n) for n in (*TORSO, *NECK_AND_HEAD)}
        self.torso = {ids[n] for n in TORSO}
        self.head_bodies = {ids[n] for n in NECK_AND_HEAD}
        self.robot_root = ids["pelvis_link"]
        self.on = False
        self.head_v: float | None = None
        self.torso_v: float | None = None
        self.joint_v = 0.0
        self._vel = np.zeros(6)
        inner = plant.step

        def step() -> None:
            inner()
            if self.on:
                self._sample()

        plant.step = step

    def _speed(self, body: int) -> float:
        mujoco.mj_objectVelocity(self.plant.model, self.plant.data, mujoco.mjtObj.mjOBJ_BODY, body, self._vel, 0)
        return float(np.linalg.norm(self._vel[3:]))

    def _sample(self) -> None:
        m, d = self.plant.model, self.plant.data
        for i in range(d.ncon):
            c = d.contact[i]
            b1, b2 = int(m.geom_bodyid[c.geom1]), int(m.geom_bodyid[c.geom2])
            for mine, other in ((b1, b2), (b2, b1)):
                if int(m.body_rootid[other]) == self.robot_root:
                    continue
                if self.head_v is None and mine in self.head_bodies:
                    self.head_v = self._speed(mine)
                if self.torso_v is None and mine in self.torso:
                    self.torso_v = self._speed(mine)
        self.joint_v = max(self.joint_v, float(np.max(np.abs(d.qvel[6:]))))


def knockdown(direction: str, recovery: bool, delay: float, force: float, walking: float,
              seconds: float, push_s: float = 0.3, scene: str = "flat") -> dict[str, Any]:
    """One knock-down: boot, balance (and walk at ``walking`` m/s), wait ``delay`` s, push, run ``seconds``. ``scene``
    is a scene name as ``vasimov scenes`` lists it, with a floor override (``flat+wet``: the wet floor)."""
    loop = ClosedLoop.create(default_backend_factory(), seed=0, firmware_params=FirmwareParams(recovery=recovery),
                             scene=parse_scene(scene, seed=0))
    keepalive = bench_boot(loop, "balance", 1.0)
    meter = FallMeter(loop.plant)
    lead = (2.0 if walking else 0.0) + delay
    for _ in range(round(lead / loop.control_period)):
        keepalive.send(walking, 0.0, 0.0)
        loop.step_tick()
    ux, uy, _ = DIRECTIONS[direction]
    loop.plant.apply_push("pelvis_link", (force * ux, force * uy, 0.0), push_s)
    meter.on = True
    phases: list[str] = []
    for _ in range(round(seconds / loop.control_period)):
        fw = loop.last_fw
        if fw is not None and fw.policy_active:
            keepalive.send(0.0, 0.0, 0.0)
        rec = loop.step_tick()
        ph = rec.firmware.recovery_phase
        if ph and (not phases or phases[-1] != ph):
            phases.append(ph)
    fw = loop.last_fw
    assert fw is not None
    return {"direction": direction, "recovery": recovery, "scene": scene, "delay_s": round(delay, 3),
            "walking": walking, "force_n": force, "head_m_s": round(meter.head_v or 0.0, 3),
            "torso_m_s": round(meter.torso_v or 0.0, 3), "joint_rad_s": round(meter.joint_v, 2),
            "fell": bool(fw.fault_latched or phases), "phases": phases}


def table(rows: list[dict[str, Any]]) -> str:
    keys = ("head_m_s", "torso_m_s", "joint_rad_s")
    out = ["| direction | chain | falls | head hits | " + " | ".join(f"{k} median / max" for k in keys) + " |",
           "|---|---|---|---|" + "---|" * len(keys)]
    for d in DIRECTIONS:
        for on in (False, True):
            sel = [r for r in rows if r["direction"] == d and r["recovery"] is on]
            if not sel:
                continue
            cells = [f"{statistics.median(r[k] for r in sel):.2f} / {max(r[k] for r in sel):.2f}" for k in keys]
            out.append(f"| {d} | {'on' if on else 'off (latch)'} | {sum(r['fell'] for r in sel)} of {len(sel)} | "
                       f"{sum(r['head_m_s'] > 0 for r in sel)} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=5, help="push times per direction, spread over 0.8 s")
    ap.add_argument("--force", type=float, default=700.0)
    ap.add_argument("--push-s", type=float, default=0.3, help="push duration")
    ap.add_argument("--walking", type=float, default=0.0, help="walk at this forward speed before the push")
    ap.add_argument("--seconds", type=float, default=3.0, help="simulated seconds after the push")
    ap.add_argument("--direction", action="append", choices=tuple(DIRECTIONS))
    ap.add_argument("--scene", default="flat", help="scene with optional floor override, e.g. flat+wet")
    a = ap.parse_args()
    rows = []
    for d in a.direction or tuple(DIRECTIONS):
        for k in range(a.trials):
            delay = 0.8 * k / max(1, a.trials)
            for on in (False, True):
                r = knockdown(d, on, delay, a.force, a.walking, a.seconds, a.push_s, a.scene)
                print(json.dumps(r), flush=True)
                rows.append(r)
    print(table(rows))


if __name__ == "__main__":
    main()
