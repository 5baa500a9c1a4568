"""Random search of get-up key poses on the single-process closed loop (the documented search behind
``vasimov_edge.getup_poses``; docs/recovery.md). Each candidate runs the real chain (firmware core, motor path, real
torque limits) from a lying boot; it is scored on ground truth (for ranking only): ``front`` -- standing up, else its
highest, most upright moment (pelvis height - 0.25 x tilt); ``back`` -- how far the roll turned the body face down.

    nice -n 15 .venv/bin/python tools/getup_search.py front --trials 40 --seed 1
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np

import vasimov_edge.recovery as recovery
from vasimov.boot_states import parse_boot
from vasimov.commands import StandCommand
from vasimov.frames import projected_gravity
from vasimov_edge.firmware import FirmwareParams
from vasimov_edge.getup_poses import FRONT, KeyPose, pose
from vasimov_plant.boot_pose import boot
from vasimov_tools.closed_loop import ClosedLoop
from vasimov_tools.walk_bench import default_backend_factory

FRONT_SPACE = {  # name: (lo, hi)
    "h2": (-1.57, -0.5), "k2": (0.0, 1.5), "a2": (-0.35, 0.35), "s2": (-2.6, -1.0), "e2": (0.0, 1.0),
    "h3": (-1.57, -0.2), "k3": (0.0, 1.5), "a3": (-0.35, 0.35), "s3": (-1.6, 0.8), "e3": (0.0, 1.0),
    "m2": (0.3, 1.2), "m3": (0.2, 1.2), "kp": (1.0, 2.0),
}
BACK_SPACE = {
    "w1": (-1.57, 1.57), "s1": (-3.1, 0.0), "r1": (-1.5, 0.0), "hr1": (-0.78, 0.78), "hp1": (-1.5, 0.5),
    "k1": (0.0, 1.5), "w2": (-1.57, 1.57), "s2": (-3.1, 0.0), "r2": (-1.5, 0.0), "hr2": (-0.78, 0.78),
    "hp2": (-1.5, 0.5), "k2": (0.0, 1.5), "m1": (0.3, 1.2), "m2": (0.2, 1.2), "kp": (1.0, 2.0),
}


# the statically stable crouch these ranges allow (knee 1.0, ankle -0.35, hip -1.57: the torso leans ~50 deg and the
# body's COM stays over the feet), appended by --crouch
CROUCH = KeyPose("crouch", pose(hip_pitch=-1.57, knee=1.0, ankle_pitch=-0.35, shoulder_pitch=-0.8, elbow=0.3),
                 move_s=0.6, kp_scale=1.6)


def front_seq(x: dict[str, float], crouch: bool = False) -> tuple[KeyPose, ...]:
    return (*_front(x), CROUCH) if crouch else _front(x)


def _front(x: dict[str, float]) -> tuple[KeyPose, ...]:
    return (
        FRONT[0],
        KeyPose("pike", pose(hip_pitch=x["h2"], knee=x["k2"], ankle_pitch=x["a2"], shoulder_pitch=x["s2"],
                             shoulder_roll=-0.25, elbow=x["e2"]), move_s=x["m2"], kp_scale=x["kp"]),
        KeyPose("throw", pose(hip_pitch=x["h3"], knee=x["k3"], ankle_pitch=x["a3"], shoulder_pitch=x["s3"],
                              shoulder_roll=-0.2, elbow=x["e3"]), move_s=x["m3"], kp_scale=x["kp"]),
    )


def back_seq(x: dict[str, float]) -> tuple[KeyPose, ...]:
    # asymmetric: the left arm reaches across, the right leg pushes (right given in left-side convention)
    return (
        KeyPose("reach", pose(waist_yaw=x["w1"], shoulder_pitch=x["s1"], shoulder_roll=x["r1"], hip_roll=0.0,
                              hip_pitch=x["hp1"], knee=x["k1"], right={"hip_roll": x["hr1"], "shoulder_pitch": -0.2,
                                                                      "shoulder_roll": -0.2}),
                move_s=x["m1"], kp_scale=x["kp"]),
        KeyPose("roll", pose(waist_yaw=x["w2"], shoulder_pitch=x["s2"], shoulder_roll=x["r2"], hip_pitch=x["hp2"],
                             knee=x["k2"], right={"hip_roll": x["hr2"], "shoulder_pitch": -0.2,
                                                  "shoulder_roll": -0.2}),
                move_s=x["m2"], kp_scale=x["kp"]),
    )


def evaluate(direction: str, seq: tuple[KeyPose, ...], seconds: float, seed: int = 0) -> dict[str, float]:
    orig = recovery.lying_sequence
    recovery.lying_sequence = lambda d, gy=0.0: seq if d == direction else orig(d, gy)
    try:
        state = parse_boot(f"lying_{direction}")
        loop = ClosedLoop.create(default_backend_factory(), seed=seed, firmware_params=FirmwareParams(recovery=True))
        boot(loop.plant, state)
        loop.firmware.restart(boot=state)
        loop.step_tick()
        loop.submit(StandCommand())
        n = round(seconds / loop.control_period)
        tail = round(1.0 / loop.control_period)
        tilts, heights, gxs = [], [], []
        best_pose = -math.inf
        up_at = None
        for k in range(n):
            rec = loop.step_tick()
            tr = loop.plant.truth()
            g = projected_gravity(tr.base_quat)
            tilts.append(math.degrees(math.acos(max(-1.0, min(1.0, -float(g[2]))))))
            heights.append(float(tr.base_pos[2]))
            gxs.append(float(g[0]))
            best_pose = max(best_pose, heights[-1] - 0.25 * math.radians(tilts[-1]))
            if up_at is None and rec.firmware.counters["recoveries"]:
                up_at = (k + 1) * loop.control_period
            if direction == "back" and rec.firmware.recovery_phase == "GETUP_FRONT":
                break
    finally:
        recovery.lying_sequence = orig
    return {"up_at": up_at, "tilt_end": float(np.max(tilts[-tail:])), "z_end": float(np.min(heights[-tail:])),
            "z_max": float(np.max(heights)), "gx_max": float(np.max(gxs)), "front_reached": gxs[-1] > 0.6,
            "best_pose": float(best_pose), "tilt_max": float(np.max(tilts))}


def score(direction: str, r: dict[str, float]) -> float:
    if direction == "front":
        # standing up wins; else the highest, most upright moment (pelvis z - 0.25 x tilt in rad; standing ~0.6)
        # a somersault (tilt past 140 deg: upside down) is no get-up, however high it throws the pelvis
        return (100.0 if r["up_at"] else 0.0) + r["best_pose"] - (1.0 if r["tilt_max"] > 140.0 else 0.0)
    return r["gx_max"] + (5.0 if r["front_reached"] else 0.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("direction", choices=("front", "back"))
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=9.0)
    ap.add_argument("--around", help="JSON parameters to refine (Gaussian steps of --sigma instead of uniform draws)")
    ap.add_argument("--sigma", type=float, default=0.15)
    ap.add_argument("--crouch", action="store_true", help="front: end the sequence in the stable crouch")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    space = FRONT_SPACE if a.direction == "front" else BACK_SPACE
    make = (lambda x: front_seq(x, a.crouch)) if a.direction == "front" else back_seq
    center = json.loads(a.around) if a.around else None
    best: tuple[float, dict[str, float], dict[str, float]] | None = None
    for i in range(a.trials):
        if center is None:
            x = {k: float(rng.uniform(lo, hi)) for k, (lo, hi) in space.items()}
        else:
            x = {k: float(np.clip(center[k] + rng.normal(0.0, a.sigma * (hi - lo)), lo, hi))
                 for k, (lo, hi) in space.items()}
        r = evaluate(a.direction, make(x), a.seconds)
        s = score(a.direction, r)
        if best is None or s > best[0]:
            best = (s, x, r)
            print(json.dumps({"trial": i, "score": round(s, 3), "result": r,
                              "x": {k: round(v, 3) for k, v in x.items()}}), flush=True)
    print("best", json.dumps(best[2] if best else None))


if __name__ == "__main__":
    main()
