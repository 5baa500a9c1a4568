"""The layout of `vasimov_msgs/PlantSamples`: one control period's per-step plant samples in one message.

Why: the SDK bridge needs every physics step (one RobotState frame each) but not one message hop per step; a hop
costs far more than its bytes (a Fast DDS write per reader in the plant, an executor wake-up and a Python message
in the reader). So the plant packs a period's samples step-major into flat float64 arrays, with the ground truth of
the period's last sample, and the bridge unpacks them here into `PlantSample`s that read like `PlantState`. The one
place the layout is written; the plant (`vasimov_plant.telemetry`) and the SDK bridge use only these functions.

Arrays go through `array.array` built from the numpy bytes, the generated message's fast path (its setter would
otherwise walk every element), and come back as numpy views over the message's buffers (no copy).
"""

from __future__ import annotations

import array
from dataclasses import dataclass
from typing import Any

import numpy as np

from vasimov import joints

N = joints.NUM_JOINTS
#: per-sample widths of the array fields (also what `unpack` checks every length against)
WIDTHS: dict[str, int] = {"time": 1, "position": N, "velocity": N, "effort": N, "imu_orientation": 4,
                          "imu_angular_velocity": 3, "imu_linear_acceleration": 3}


@dataclass(frozen=True, slots=True)
class PlantSample:
    """One physics step's readings, as the SDK bridge reads them (PlantState's names and units)."""

    epoch: int
    boot_state: int
    step: int
    time: float
    command_tick: int
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray
    imu_orientation: np.ndarray
    imu_angular_velocity: np.ndarray
    imu_linear_acceleration: np.ndarray


@dataclass(frozen=True, slots=True)
class Truth:
    """Ground truth at one sample, world frame."""

    time: float
    base_pos: np.ndarray
    base_quat: np.ndarray  # w x y z
    base_lin_vel: np.ndarray
    base_ang_vel: np.ndarray


def _d(values: Any) -> array.array:
    return array.array("d", np.ascontiguousarray(values, dtype=np.float64).tobytes())


def fill(msg: Any, epoch: int, boot_state: int, first_step: int, time: np.ndarray, command_tick: np.ndarray,
         position: np.ndarray, velocity: np.ndarray, effort: np.ndarray, imu_orientation: np.ndarray,
         imu_angular_velocity: np.ndarray, imu_linear_acceleration: np.ndarray, truth: Truth | None) -> Any:
    """Write one period's samples (first axis: the sample) into a PlantSamples message and return it."""
    msg.epoch = int(epoch)
    msg.boot_state = int(boot_state)
    msg.first_step = int(first_step)
    msg.time = _d(time)
    msg.command_tick = array.array("q", np.ascontiguousarray(command_tick, dtype=np.int64).tobytes())
    msg.position = _d(position)
    msg.velocity = _d(velocity)
    msg.effort = _d(effort)
    msg.imu_orientation = _d(imu_orientation)
    msg.imu_angular_velocity = _d(imu_angular_velocity)
    msg.imu_linear_acceleration = _d(imu_linear_acceleration)
    msg.has_truth = truth is not None
    if truth is not None:
        msg.base_pos = np.asarray(truth.base_pos, dtype=np.float64)
        msg.base_quat = np.asarray(truth.base_quat, dtype=np.float64)
        msg.base_lin_vel = np.asarray(truth.base_lin_vel, dtype=np.float64)
        msg.base_ang_vel = np.asarray(truth.base_ang_vel, dtype=np.float64)
    return msg


def _view(values: Any) -> np.ndarray:
    return np.frombuffer(values, dtype=np.float64) if len(values) else np.zeros(0)


def unpack(msg: Any) -> tuple[list[PlantSample], Truth | None]:
    """The samples of one PlantSamples message, in step order, and its ground truth (None without). ValueError for a
    message whose arrays do not hold the same number of samples (anyone on the graph may publish there)."""
    n = len(msg.time)
    arrays = {name: _view(getattr(msg, name)) for name in WIDTHS}
    ticks = np.frombuffer(msg.command_tick, dtype=np.int64) if len(msg.command_tick) else np.zeros(0, np.int64)
    bad = [f"{name} {len(a)} (expected {n * WIDTHS[name]})" for name, a in arrays.items() if len(a) != n * WIDTHS[name]]
    if len(ticks) != n:
        bad.append(f"command_tick {len(ticks)} (expected {n})")
    if bad:
        raise ValueError(f"PlantSamples with {n} samples has inconsistent arrays: {', '.join(bad)}")
    rows = {name: a.reshape(n, WIDTHS[name]) for name, a in arrays.items() if WIDTHS[name] > 1}
    times = arrays["time"]
    epoch, boot_state, first = int(msg.epoch), int(msg.boot_state), int(msg.first_step)
    samples = [PlantSample(epoch, boot_state, first + i, float(times[i]), int(ticks[i]), rows["position"][i],
                           rows["velocity"][i], rows["effort"][i], rows["imu_orientation"][i],
                           rows["imu_angular_velocity"][i], rows["imu_linear_acceleration"][i]) for i in range(n)]
    truth = None
    if msg.has_truth and n:
        truth = Truth(float(times[-1]), np.asarray(msg.base_pos), np.asarray(msg.base_quat),
                      np.asarray(msg.base_lin_vel), np.asarray(msg.base_ang_vel))
    return samples, truth
