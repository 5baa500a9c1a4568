"""A stated, approximate model of Asimov 1's battery pack and its BMS: state of charge, voltage sag under load, and
the under-voltage protection.

Why: the SDK reads a ``battery`` block (voltage, current, state of charge, cell temperature, BMS protection flags)
and the firmware raises BMS_LOW_SOC (warning, below 20 %) and BMS_PROTECTION (critical) from it. Without a model
the block is absent ("battery not reported") and those alerts can never be rehearsed. **Every parameter is
ASSUMED** (PLACEHOLDER where marked): Menlo publishes no pack specification for Asimov 1; the fact sheet keeps
only vasimov's 48 V nominal placeholder. The numbers are those of a generic 13S lithium-ion pack of that nominal
voltage.

Physics (per tick, the load held over ``dt``)::

    OCV      = cells · ocv_cell(soc)                       piecewise-linear open-circuit curve per cell
    P        = idle_w + Σ max(τ·ω, 0) + Σ I_m² · R_w        electrical power the motors and the computer draw
    V        = (OCV + sqrt(OCV² − 4·P·R_int)) / 2           terminal voltage: V = OCV − I·R_int with I = P / V
    I        = P / V                                        pack current (reported negative: discharging)
    soc     -= I · dt / (capacity_ah · 3600) · 100

The motor currents ``I_m`` are the ones ``joint_current`` reports (``vasimov.motor_current``), ``R_w`` the thermal
model's winding resistance; regenerated power is not returned to the pack (``max(τω, 0)``: DECISION, most small
servo drives burn it in a brake resistor). The BMS sets CELL_UNDERVOLT and PACK_UNDERVOLT when the terminal voltage
stays below the cut-off for ``undervolt_delay_s`` (the delay BMS chips apply so a load spike does not trip them),
and keeps them (a real BMS opens its discharge MOSFETs until the pack is recharged). Pure: no clock; the caller
passes dt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from vasimov.joints import NUM_JOINTS

#: BMS protection bits (menlo-sdk ``BatteryProtection``, the firmware's ``bms_driver.h`` ``BMS_PROT_*``).
PROT_CELL_UNDERVOLT = 1 << 1
PROT_PACK_UNDERVOLT = 1 << 3

#: Open-circuit voltage of one cell (V) against state of charge (%): a generic NMC lithium-ion curve. ASSUMED.
OCV_SOC_PERCENT = (0.0, 5.0, 10.0, 20.0, 50.0, 80.0, 100.0)
OCV_CELL_V = (3.0, 3.3, 3.45, 3.55, 3.7, 3.95, 4.2)


@dataclass(frozen=True)
class BatteryParams:
    """Pack and BMS parameters; ALL ASSUMED (see the module docstring).

    cells: series cells (13S: 48.1 V nominal, the fact sheet's 48 V placeholder).
    capacity_ah: usable capacity (PLACEHOLDER: 15 Ah, ~720 Wh, a few hours of standing).
    internal_resistance_ohm: pack resistance behind the voltage sag (13 cells of ~8 mOhm plus wiring).
    idle_w: what the computer, sensors and motor drivers draw with no torque.
    winding_resistance_ohm: per-motor copper resistance (the thermal model's).
    cell_cutoff_v: BMS cell under-voltage threshold.
    undervolt_delay_s: how long the voltage must stay below the cut-off before the BMS trips.
    boot_soc_percent: charge at every (virtual) boot: a fresh pack.
    cell_temp_c: reported maximum cell temperature (PLACEHOLDER: no thermal model of the pack; ambient).
    """

    cells: int = 13
    capacity_ah: float = 15.0
    internal_resistance_ohm: float = 0.1
    idle_w: float = 60.0
    winding_resistance_ohm: float = 0.35
    cell_cutoff_v: float = 3.0
    undervolt_delay_s: float = 1.0
    boot_soc_percent: float = 100.0
    cell_temp_c: float = 25.0

    def __post_init__(self) -> None:
        if not (isinstance(self.cells, int) and self.cells >= 1):
            raise ValueError(f"BatteryParams.cells must be an int >= 1, got {self.cells!r}")
        for name in ("capacity_ah", "internal_resistance_ohm"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0.0):
                raise ValueError(f"BatteryParams.{name} must be finite and > 0, got {v!r}")
        for name in ("idle_w", "winding_resistance_ohm", "cell_cutoff_v", "undervolt_delay_s"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0.0):
                raise ValueError(f"BatteryParams.{name} must be finite and >= 0, got {v!r}")
        if not (math.isfinite(self.boot_soc_percent) and 0.0 <= self.boot_soc_percent <= 100.0):
            raise ValueError(f"BatteryParams.boot_soc_percent must lie in [0, 100], got {self.boot_soc_percent!r}")
        if not math.isfinite(self.cell_temp_c):
            raise ValueError(f"BatteryParams.cell_temp_c must be finite, got {self.cell_temp_c!r}")


@dataclass(frozen=True)
class BatteryReading:
    """What the BMS reports (``asimov.io.BatteryState``): current positive when charging."""

    voltage_v: float
    current_a: float
    soc_percent: float
    max_cell_temp_c: float
    protection_flags: int


def ocv_cell(soc_percent: float) -> float:
    """Open-circuit voltage of one cell at ``soc_percent`` (clamped to [0, 100])."""
    return float(np.interp(min(max(soc_percent, 0.0), 100.0), OCV_SOC_PERCENT, OCV_CELL_V))


def electrical_power(tau_motor: ArrayLike, omega_motor: ArrayLike, motor_current: ArrayLike,
                     params: BatteryParams) -> float:
    """Watts drawn from the pack: idle + positive mechanical power + copper loss of every motor (see the module)."""
    tau = np.asarray(tau_motor, dtype=np.float64)
    omega = np.asarray(omega_motor, dtype=np.float64)
    current = np.asarray(motor_current, dtype=np.float64)
    mech = float(np.sum(np.maximum(tau * omega, 0.0)))
    copper = float(np.sum(current * current)) * params.winding_resistance_ohm
    return params.idle_w + mech + copper


class BatteryModel:
    """The pack's state of charge and the BMS's latched protection, advanced by ``step``."""

    def __init__(self, params: BatteryParams | None = None) -> None:
        self.params = params or BatteryParams()
        self.reset()

    def reset(self) -> None:
        """A fresh pack at ``boot_soc_percent``, no protection tripped."""
        self._soc = self.params.boot_soc_percent
        self._flags = 0
        self._under_s = 0.0
        self._last = self._reading(self.params.idle_w)

    @property
    def soc_percent(self) -> float:
        return self._soc

    @property
    def reading(self) -> BatteryReading:
        """The latest reading (the boot reading at idle before any ``step``)."""
        return self._last

    def set_soc(self, soc_percent: float) -> None:
        """Scenario hook: the pack's charge is now ``soc_percent`` (clamped to [0, 100])."""
        if not math.isfinite(soc_percent):
            raise ValueError(f"soc_percent must be finite, got {soc_percent!r}")
        self._soc = min(max(float(soc_percent), 0.0), 100.0)

    def terminal_voltage(self, power_w: float) -> float:
        """Terminal voltage (V) delivering ``power_w`` at the current charge; collapses to OCV/2 (the most power
        a source with an internal resistance can deliver) when more is asked."""
        ocv = self.params.cells * ocv_cell(self._soc)
        disc = ocv * ocv - 4.0 * max(power_w, 0.0) * self.params.internal_resistance_ohm
        return 0.5 * (ocv + math.sqrt(disc)) if disc > 0.0 else 0.5 * ocv

    def step(self, tau_motor: ArrayLike, omega_motor: ArrayLike, motor_current: ArrayLike,
             dt: float) -> BatteryReading:
        """Advance by ``dt`` seconds with this load held; returns the reading. A non-finite load or a
        non-positive ``dt`` changes nothing (the previous reading is returned)."""
        tau = np.asarray(tau_motor, dtype=np.float64)
        if tau.shape != (NUM_JOINTS,):
            raise ValueError(f"tau_motor: expected {NUM_JOINTS} values, got shape {tau.shape}")
        power = electrical_power(tau, omega_motor, motor_current, self.params)
        if not (math.isfinite(dt) and dt > 0.0 and math.isfinite(power)):
            return self._last
        reading = self._reading(power)
        self._soc = max(0.0, self._soc + reading.current_a * dt / (self.params.capacity_ah * 3600.0) * 100.0)
        cutoff = self.params.cells * self.params.cell_cutoff_v
        self._under_s = self._under_s + dt if reading.voltage_v < cutoff else 0.0
        if self._under_s >= self.params.undervolt_delay_s - 1e-9:
            self._flags |= PROT_CELL_UNDERVOLT | PROT_PACK_UNDERVOLT
        self._last = reading = self._reading(power)
        return reading

    def _reading(self, power_w: float) -> BatteryReading:
        v = self.terminal_voltage(power_w)
        return BatteryReading(voltage_v=v, current_a=-power_w / v, soc_percent=self._soc,
                              max_cell_temp_c=self.params.cell_temp_c, protection_flags=self._flags)


__all__ = ["BatteryModel", "BatteryParams", "BatteryReading", "electrical_power", "ocv_cell"]
