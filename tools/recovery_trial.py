"""Measure the opt-in recovery chain in the single-process lockstep closed loop (vasimov_tools.closed_loop).

Boots the plant lying (``vasimov_plant.boot_pose``), the firmware with ``recovery`` on, sends STAND at t = 0 (as
``menlo stand -y``) and runs ``--seconds`` of simulated time. Prints, every 0.5 s, the chain's phase, the firmware
mode, the pelvis height and tilt (ground truth, for scoring only), then one JSON line: upright (the chain ended and
the firmware reports STAND), the time it took, the highest pelvis reached, counters.

    nice -n 15 .venv/bin/python tools/recovery_trial.py lying_front --seconds 20
    nice -n 15 .venv/bin/python tools/recovery_trial.py knockdown --seconds 4   # protective fall vs limp fall
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np

from vasimov.boot_states import parse_boot
from vasimov.commands import StandCommand
from vasimov.frames import projected_gravity
from vasimov_edge.firmware import FirmwareParams
from vasimov_plant.boot_pose import boot
from vasimov_tools.closed_loop import ClosedLoop
from vasimov_tools.walk_bench import default_backend_factory


def trial(boot_name: str, seconds: float, seed: int = 0, verbose: bool = True) -> dict[str, object]:
    state = parse_boot(boot_name)
    loop = ClosedLoop.create(default_backend_factory(), seed=seed, firmware_params=FirmwareParams(recovery=True))
    boot(loop.plant, state)
    loop.firmware.restart(boot=state)
    loop.step_tick()  # the firmware sees the lying tilt
    loop.submit(StandCommand())
    up_at = None
    max_h = 0.0
    phases: list[tuple[float, str]] = []
    n = round(seconds / loop.control_period)
    for _ in range(n):
        rec = loop.step_tick()
        t = loop.firmware_time
        tr = loop.plant.truth()
        gz = float(projected_gravity(tr.base_quat)[2])
        max_h = max(max_h, float(tr.base_pos[2]))
        ph = rec.firmware.recovery_phase
        if not phases or phases[-1][1] != ph:
            phases.append((round(t, 2), ph))
        if verbose and loop.tick % 25 == 0:
            tilt = math.degrees(math.acos(max(-1.0, min(1.0, -gz))))
            print(f"t={t:5.2f} phase={ph or '-':12s} mode={rec.firmware.mode.name:5s} z={tr.base_pos[2]:.3f} "
                  f"tilt={tilt:5.1f} g={projected_gravity(rec.sensors.imu_quat).round(2)}")
        if up_at is None and rec.firmware.counters["recoveries"] > 0:
            up_at = t
    fw = loop.last_fw
    assert fw is not None
    c = fw.counters
    return {"boot": boot_name, "seed": seed, "upright": up_at is not None, "getup_s": up_at,
            "max_pelvis_z": round(max_h, 3), "end_mode": fw.mode.name, "fault_latched": fw.fault_latched,
            "phases": phases, "retries": c["recovery_retries"], "failures": c["recovery_failures"]}


def knockdown(recovery: bool, seconds: float = 4.0, seed: int = 0, force: float = 700.0) -> dict[str, object]:
    """Balance, then push the pelvis forward (``force`` N for 0.3 s): the fall with the protective pose (recovery on)
    against the limp fall of the latch (off). Peak pelvis sink speed, joint torques and speeds from the push on."""
    from vasimov_tools.walk_bench import boot as bench_boot

    loop = ClosedLoop.create(default_backend_factory(), seed=seed, firmware_params=FirmwareParams(recovery=recovery))
    keepalive = bench_boot(loop, "balance", 1.0)
    loop.plant.apply_push("pelvis_link", (force, 0.0, 0.0), 0.3)
    sink, tau, qd, phases = 0.0, 0.0, 0.0, []
    for _ in range(round(seconds / loop.control_period)):
        fw = loop.last_fw
        if fw is not None and fw.policy_active:
            keepalive.send(0.0, 0.0, 0.0)
        rec = loop.step_tick()
        tr = loop.plant.truth()
        sink = max(sink, -float(tr.base_lin_vel[2]))
        tau = max(tau, float(np.max(np.abs(rec.sensors.tau))))
        qd = max(qd, float(np.max(np.abs(rec.sensors.qd))))
        if not phases or phases[-1][1] != rec.firmware.recovery_phase:
            phases.append((round(loop.firmware_time, 2), rec.firmware.recovery_phase))
    fw = loop.last_fw
    assert fw is not None
    return {"recovery": recovery, "force_n": force, "peak_pelvis_sink_m_s": round(sink, 3),
            "peak_joint_torque_nm": round(tau, 1), "peak_joint_speed_rad_s": round(qd, 2),
            "latched": fw.fault_latched, "phases": phases}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("boot", choices=("lying_back", "lying_front", "knockdown"),
                    help="lying start, or knockdown: a 700 N push while balancing, recovery off and on")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    if a.boot == "knockdown":
        for on in (False, True):
            print(json.dumps(knockdown(on, min(a.seconds, 6.0), a.seed)))
        return
    print(json.dumps(trial(a.boot, a.seconds, a.seed, not a.quiet)))


if __name__ == "__main__":
    main()
