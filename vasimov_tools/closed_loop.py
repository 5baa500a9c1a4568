"""The graph's closed loop in one process, with no messaging: plant core, firmware core and a policy backend.

It follows exactly the data flow of the lockstep graph (plant tick k -> policy with the firmware's answer to tick
k-1 -> firmware tick k -> motor command applied for the next `decimation` physics steps), so it serves three uses:
the physical speed limit for benchmarks, the harness of the walking bench, and a cross-check that the multi-process
graph computes the same trajectory as this reference.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from vasimov.commands import RobotCommand
from vasimov.control_rate import CONTROL_DECIMATION
from vasimov.frames import projected_gravity
from vasimov.realism import RealismParams
from vasimov.scenes import Scene
from vasimov_edge.firmware import Firmware, FirmwareInputs, FirmwareOutput, FirmwareParams
from vasimov_edge.policy.interface import PolicyBackend, PolicyInput, PolicyOutput
from vasimov_plant.physics import PlantCore, SensorReading


@dataclass
class TickRecord:
    tick: int
    sensors: SensorReading
    firmware: FirmwareOutput
    policy: PolicyOutput
    policy_seconds: float = 0.0  # wall clock of the backend's step
    policy_cpu_seconds: float = 0.0  # the calling thread's CPU time of it (what a loaded machine does not inflate)
    command: np.ndarray | None = None  # the velocity command the backend was given (the firmware's, tick before)
    active: bool = False  # whether the backend was driving (the firmware in MOVE/POLICY)


@dataclass
class ClosedLoop:
    backend: PolicyBackend
    plant: PlantCore = field(default_factory=PlantCore)
    firmware: Firmware = field(default_factory=Firmware)
    decimation: int = CONTROL_DECIMATION
    tick: int = 0
    last_fw: FirmwareOutput | None = None
    _pending: list[RobotCommand] = field(default_factory=list)
    _was_active: bool = False

    @classmethod
    def create(cls, backend: PolicyBackend, *, seed: int = 0, firmware_params: FirmwareParams | None = None,
               gantry_height: float | None = None, decimation: int = CONTROL_DECIMATION,
               scene: Scene | None = None, realism: RealismParams | None = None) -> ClosedLoop:
        kw = {} if gantry_height is None else {"gantry_height": gantry_height}
        plant = PlantCore(seed=seed, scene=scene, realism=realism, **kw)
        plant.reset()
        damp = np.zeros(plant.model.nu)
        plant.set_command(damp, damp, damp, np.full(plant.model.nu, 2.0), damp)
        return cls(backend=backend, plant=plant, firmware=Firmware(firmware_params), decimation=decimation)

    @property
    def control_period(self) -> float:
        return self.plant.dt * self.decimation

    @property
    def firmware_time(self) -> float:
        return self.tick * self.control_period

    def submit(self, cmd: RobotCommand) -> None:
        """Queue a command; like a command script entry, it reaches the firmware before the next tick."""
        self._pending.append(cmd)

    def step_tick(self) -> TickRecord:
        """One control tick: decide from the current sensors, then run `decimation` physics steps."""
        s = self.plant.sensors()
        t = self.firmware_time
        fw_prev = self.last_fw
        active = bool(fw_prev is not None and fw_prev.policy_active)
        if active and not self._was_active:
            self.backend.reset()
        self._was_active = active
        command = np.asarray(fw_prev.velocity_command, dtype=float) if fw_prev is not None else np.zeros(3)
        inp = PolicyInput(tick=self.tick, sim_time=self.plant.time, gyro=np.asarray(s.gyro, dtype=float),
                          projected_gravity=projected_gravity(s.imu_quat), quat=np.asarray(s.imu_quat, dtype=float),
                          command=command, q=np.asarray(s.q, dtype=float), qd=np.asarray(s.qd, dtype=float),
                          active=active)
        c0, t0 = time.thread_time(), time.perf_counter()
        pol = self.backend.step(inp)
        elapsed, cpu = time.perf_counter() - t0, time.thread_time() - c0
        for cmd in self._pending:
            self.firmware.submit(cmd, t)
        self._pending.clear()
        fw = self.firmware.tick(t, FirmwareInputs(
            q=s.q, qd=s.qd, projected_gravity=projected_gravity(s.imu_quat), tau=s.tau,
            policy_target=pol.target, policy_torque_ff=pol.torque_ff, policy_kp=pol.kp, policy_kd=pol.kd,
            gyro=s.gyro))
        self.plant.set_command(fw.position, fw.velocity, fw.kp, fw.kd, fw.torque_ff)
        self.plant.set_gantry(fw.gantry_engaged, fw.gantry_lowering)
        for _ in range(self.decimation):
            self.plant.step()
        self.last_fw = fw
        self.tick += 1
        return TickRecord(self.tick - 1, s, fw, pol, elapsed, cpu, command, active)
