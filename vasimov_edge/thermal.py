"""A first-order thermal model of Asimov 1's 25 motors, driven by the torque each motor carries.

Why a model at all: the real firmware raises MOTOR_TEMP_HIGH (60 °C, warning) and latches MOTOR_OVERTEMP (80 °C,
critical) from its motors' temperature sensors, and the SDK shows ``joint_temp``. The twin has no sensor, so without
a model those alerts could never fire and the temperatures would be a constant placeholder. The model is honest
about what it is: **every parameter below is ASSUMED**. Menlo publishes neither winding resistances, torque
constants nor thermal resistances for Asimov 1's ENCOS motors; only the continuous ("rated") torque of each motor
type is known (fact sheet ``torque_limits.motor_datasheet``). The parameters were chosen so that

* a motor at its rated continuous torque settles below the 80 °C trip (that is what "rated continuous" means),
* standing and walking (torques well under rated) stay well under the 60 °C warning, and
* a joint stalled at its URDF torque limit for minutes heats up: knees, hip roll and hip yaw pass the 80 °C trip,
  hip pitch, arms, waist and neck settle between 60 and 80 °C (warning), and an ankle, whose load two motors share,
  stays just under 60 °C unless pitch and roll are both saturated.

Physics (per motor, motor order = firmware order, ankle slots are motors A and B)::

    I      = tau_motor / k_t                    k_t = rated_torque / rated_current_a      (output-side N·m/A)
    P      = I² · R                             R   = winding_resistance_ohm              (copper loss, W)
    T_ss   = ambient + R_th · P                 R_th = thermal_resistance_k_per_w
    dT/dt  = (T_ss − T) / time_constant_s

so the steady-state rise at rated torque is ``R_th · R · rated_current_a²`` (1.0 · 0.35 · 11² = 42.4 K -> 67.4 °C).

The torque constant ``k_t`` is the ONE assumed constant behind both the heating and the ``joint_current`` the SDK
bridge reports; it lives in ``vasimov.motor_current`` (below both) and this model only reads it.
It is integrated exactly for a piecewise-constant torque (``T += (T_ss − T)(1 − e^(−dt/τ))``), so it is stable for
any step. Pure: no clock; the caller passes dt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from vasimov.joints import NUM_JOINTS
from vasimov.motor_current import (
    RATED_CURRENT_A,
    UNKNOWN_MOTOR_RATED_TORQUE_NM,
    motor_current,
    motor_rated_torque,
    torque_constant,
)


@dataclass(frozen=True)
class ThermalParams:
    """Thermal model parameters. ALL ASSUMED (no published values for Asimov 1); see the module docstring.

    ambient_c: air temperature and the temperature every motor boots at (the fact sheet's 25 °C placeholder).
    time_constant_s: winding-to-ambient first-order time constant. Small robot actuators measure tens of seconds
        (winding) to tens of minutes (housing); 300 s gives a stalled knee ~2 min to the 80 °C trip.
    thermal_resistance_k_per_w: steady-state rise per watt of copper loss, winding to ambient.
    winding_resistance_ohm: per-motor winding resistance, the same for every motor type.
    rated_current_a: current at each motor type's rated torque (fixes the torque constant k_t = rated / this).
    unknown_motor_rated_torque_nm: rated torque for a motor the datasheet table does not list (the neck), taken
        equal to the smallest listed motor (EC-A4310, 12 N·m), whose URDF effort (12 N·m) the neck shares.
    """

    ambient_c: float = 25.0
    time_constant_s: float = 300.0
    thermal_resistance_k_per_w: float = 1.0
    winding_resistance_ohm: float = 0.35
    rated_current_a: float = RATED_CURRENT_A
    unknown_motor_rated_torque_nm: float = UNKNOWN_MOTOR_RATED_TORQUE_NM

    def __post_init__(self) -> None:
        for name in (
            "time_constant_s",
            "thermal_resistance_k_per_w",
            "winding_resistance_ohm",
            "rated_current_a",
            "unknown_motor_rated_torque_nm",
        ):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0.0):
                raise ValueError(f"ThermalParams.{name} must be finite and > 0, got {v!r}")
        if not math.isfinite(self.ambient_c):
            raise ValueError(f"ThermalParams.ambient_c must be finite, got {self.ambient_c!r}")

    @property
    def rise_at_rated_c(self) -> float:
        """Steady-state temperature rise of any motor held at its rated torque (K)."""
        return self.thermal_resistance_k_per_w * self.winding_resistance_ohm * self.rated_current_a**2


class ThermalModel:
    """Temperatures of the 25 motors (°C, firmware order), advanced by ``step(tau_motor, dt)``."""

    def __init__(self, params: ThermalParams | None = None) -> None:
        self.params = params or ThermalParams()
        self.rated_torque = motor_rated_torque(self.params.unknown_motor_rated_torque_nm)
        self.rated_torque.setflags(write=False)
        # N·m/A, output side: the one assumed k_t, the same the SDK bridge reports joint_current with
        self.torque_constant = torque_constant(self.params.rated_current_a, self.params.unknown_motor_rated_torque_nm)
        self._temp = np.full(NUM_JOINTS, self.params.ambient_c)
        # Heat put in by ``inject_heat`` (K above what the torques alone give), decaying with the same time
        # constant: the model is linear in T, so the injected part evolves on its own and can be taken out again.
        self._injected = np.zeros(NUM_JOINTS)

    @property
    def temperature(self) -> np.ndarray:
        """Current motor temperatures (°C), a copy."""
        return self._temp.copy()

    def reset(self, temperature_c: float | None = None) -> None:
        """Every motor back to ``temperature_c`` (default: ambient), e.g. a cold start."""
        self._temp[:] = self.params.ambient_c if temperature_c is None else float(temperature_c)
        self._injected[:] = 0.0

    def inject_heat(self, motor: int, temperature_c: float) -> None:
        """Scenario hook: motor ``motor`` (firmware index) is at ``temperature_c`` now, as after a heat soak the
        torques did not cause; from here the model cools it (or heats it further) on its own."""
        if not math.isfinite(temperature_c):
            raise ValueError(f"temperature_c must be finite, got {temperature_c!r}")
        self._injected[motor] += float(temperature_c) - self._temp[motor]
        self._temp[motor] = float(temperature_c)

    def clear_injected(self) -> None:
        """Take out what ``inject_heat`` put in (what of it has not decayed yet): the temperatures the torques alone
        would have given. The twin's virtual restart ends an injected scenario this way."""
        self._temp -= self._injected
        self._injected[:] = 0.0

    def current(self, tau_motor: ArrayLike) -> np.ndarray:
        """Each motor's current (A, signed) for the given motor-frame torques (``motor_current`` with this k_t)."""
        return motor_current(tau_motor, self.torque_constant)

    def loss_w(self, tau_motor: ArrayLike) -> np.ndarray:
        """Copper loss (W) per motor."""
        return self.current(tau_motor) ** 2 * self.params.winding_resistance_ohm

    def steady_state(self, tau_motor: ArrayLike) -> np.ndarray:
        """Temperature (°C) each motor settles at if the torque is held for ever."""
        return self.params.ambient_c + self.params.thermal_resistance_k_per_w * self.loss_w(tau_motor)

    def step(self, tau_motor: ArrayLike, dt: float) -> np.ndarray:
        """Advance by ``dt`` seconds with ``tau_motor`` (25, N·m, motor frame) held; returns the new temperatures.

        A non-positive or non-finite ``dt`` leaves the temperatures unchanged (no time passed we can account for).
        """
        tau = np.asarray(tau_motor, dtype=np.float64)
        if tau.shape != (NUM_JOINTS,):
            raise ValueError(f"tau_motor: expected {NUM_JOINTS} values, got shape {tau.shape}")
        if math.isfinite(dt) and dt > 0.0 and np.all(np.isfinite(tau)):
            alpha = 1.0 - math.exp(-dt / self.params.time_constant_s)
            self._temp += (self.steady_state(tau) - self._temp) * alpha
            self._injected *= 1.0 - alpha
        return self._temp.copy()


__all__ = ["ThermalModel", "ThermalParams"]
