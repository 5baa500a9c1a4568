"""The built-in controller's compute time per 50 Hz tick (its own per-tick measurement, thread CPU as the policy
step reports it), standing: p50 / p99 / max over N ticks. A figure only; the unit test checks that it is measured,
this prints how long it is (it moved here from test_builtin_controller, where a loaded machine failed a fixed 2 ms).

Usage: .venv/bin/python bench/controller_compute.py [--ticks 500]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from vasimov import joints
from vasimov_edge.policy.builtin.controller import BuiltinController
from vasimov_edge.policy.interface import PolicyInput


def compute_times(ticks: int) -> np.ndarray:
    c = BuiltinController()
    out = []
    for k in range(ticks):
        c.step(PolicyInput(tick=k, sim_time=k * 0.02, gyro=np.zeros(3), projected_gravity=np.array([0.0, 0.0, -1.0]),
                           quat=np.array([1.0, 0.0, 0.0, 0.0]), command=np.zeros(3), q=joints.DEFAULT_POS.copy(),
                           qd=np.zeros(joints.NUM_JOINTS), active=True))
        out.append(c.telemetry.compute_s)
    return np.asarray(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ticks", type=int, default=500)
    ns = ap.parse_args()
    t = compute_times(ns.ticks) * 1e3
    print(f"built-in controller compute per 50 Hz tick ({ns.ticks} ticks, standing): "
          f"p50 {np.percentile(t, 50):.2f} ms, p99 {np.percentile(t, 99):.2f} ms, "
          f"max {t.max():.2f} ms (budget: the 20 ms control period)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
