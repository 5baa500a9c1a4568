"""The control rate, derived once: the physics step, the physics steps per control tick, and the period they make;
and the damping gain every "hold nothing, just damp" command uses.

Everything that ticks (the plant, the firmware twin, the policy backends, the reference closed loop, the benches)
takes these as defaults and passes them down, so 50 Hz is written nowhere else. The numbers are the fact sheet's:
the model's timestep (``simulation_options.mjcf_option.timestep``) and the training decimation
(``simulation_options.conflicts.training_physics.decimation``: the policy was trained at 200 Hz physics / 4 =
50 Hz control, which is also the firmware's policy rate).
"""

from __future__ import annotations

from vasimov.joints import facts

_SIM = facts()["simulation_options"]

#: Physics time step (s): the model's timestep.
PHYSICS_DT: float = float(_SIM["mjcf_option"]["timestep"])
#: Physics steps per control tick.
CONTROL_DECIMATION: int = int(_SIM["conflicts"]["training_physics"]["decimation"])
#: Control period (s): 0.02, the firmware's 50 Hz tick.
CONTROL_DT: float = PHYSICS_DT * CONTROL_DECIMATION

if abs(float(_SIM["conflicts"]["training_physics"]["sim_dt"]) - PHYSICS_DT) > 1e-12:
    raise ValueError("the fact sheet's model timestep and the policy's training sim_dt differ")

#: DAMP-mode kd on every joint (kp 0): the firmware's DAMP and the plant's stale-command watchdog (fact sheet
#: ``pd_gains.damp_mode``, vasimov's ASSUMED value).
DAMP_KD: float = float(facts()["pd_gains"]["damp_mode"]["kd_vasimov"])
