"""Sensor and actuator realism: the parameters, the named profiles and the one parser of a realism setting.

The twin's sensors are ideal and its robot is the fact sheet's to the last gram unless a run asks for realism. A
setting is one string, ``PROFILE[,KEY=VALUE...]`` (plant parameter and launch argument ``realism``, ``vasimov up
--realism``, recorded in a bag's provenance), e.g. ``typical``, ``training,delay_steps=2``, or ``none,gyro_noise=0.01``
for one effect alone. Profiles:

* ``none`` (the default): every effect off. The plant runs exactly the code and numbers it ran before realism
  existed, so every deterministic result (the lockstep graph against the reference loop, the controller
  fingerprints) is unchanged bit for bit.
* ``typical``: what one Asimov 1 plausibly is: a 6-axis LSM6DSOX-class IMU after a boot-time gyro calibration, 14-bit
  encoders with small calibration offsets, 5 ms from command to torque, build tolerances on masses, centres of mass,
  joint friction and motor strength. Datasheet numbers where there are any, labelled assumptions otherwise
  (FIDELITY.md, "Sensor and actuator realism").
* ``training``: the ranges the 0818 walking policy was trained under (the fact sheet's
  ``observations`` noise, ``actuator_delay_physics_steps``, ``pd_gain_scale`` and ``training_env_extras
  .randomization``): what the learned policy is known to tolerate.

Every draw comes from the run's seed (``vasimov_plant.realism``), so a seed reproduces a run. This module is pure:
names, numbers, validation; no NumPy random state, no MuJoCo.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

DEFAULT_REALISM = "none"
NOISE_SHAPES = ("gaussian", "uniform")
MAX_DELAY_STEPS = 5  # physics steps (25 ms): the training range's top; more is a link problem, not an actuator's


class RealismError(ValueError):
    """A malformed realism setting: unknown profile or key, bad value. A configuration error (exit code 2)."""


Range = tuple[float, float]


@dataclass(frozen=True)
class RealismParams:
    """Every realism effect. The defaults are all off (zero noise, unit scales, no delay).

    White-noise sizes are per sample (one physics step, 5 ms): the standard deviation for ``noise_shape`` gaussian,
    the half-width for uniform (Isaac Lab's ``Unoise`` convention, which the training profile quotes). Ranges
    ``(lo, hi)`` are drawn uniformly, once per run (the robot you got); the IMU's turn-on bias is drawn again at
    every boot (virtual restart), as a real gyro's is.
    """

    noise_shape: str = "gaussian"
    # IMU (pelvis frame)
    gyro_noise: float = 0.0  # rad/s white noise on the angular rate
    gyro_bias: float = 0.0  # rad/s std of the turn-on bias per axis (drawn per boot)
    gyro_bias_walk: float = 0.0  # rad/s/sqrt(s): random walk of the bias (bias instability / temperature drift)
    accel_noise: float = 0.0  # m/s^2 white noise on the specific force
    accel_bias: float = 0.0  # m/s^2 std of the turn-on bias per axis (drawn per boot)
    tilt_noise: float = 0.0  # rad std of the attitude estimate's roll/pitch error (what projected gravity sees)
    tilt_tau: float = 0.0  # s correlation time of that error (0 = white, a fresh draw every sample)
    yaw_drift: bool = False  # the orientation's heading integrates the vertical gyro error (a 6-axis IMU's drift)
    # joint encoders (joint space)
    encoder_noise: float = 0.0  # rad white noise on the position
    encoder_vel_noise: float = 0.0  # rad/s white noise on the velocity
    encoder_offset: float = 0.0  # rad: each joint's calibration offset drawn uniformly in +-this (per run)
    # actuators and body (per run)
    delay_steps: tuple[int, int] = (0, 0)  # physics steps from command to torque, drawn in [lo, hi] (same for all)
    motor_strength: Range = (1.0, 1.0)  # scale of each motor's torque (its effort limit stays the rated one)
    joint_friction: Range = (1.0, 1.0)  # scale of each joint's friction loss
    mass_scale: Range = (1.0, 1.0)  # scale of each link's mass (and inertia, so its shape stays)
    com_offset: float = 0.0  # m: each link's centre of mass moved by uniform +-this per axis
    waist_com_x: Range = (0.0, 0.0)  # m: extra shift of the torso (waist_yaw_link) centre of mass, training's term
    waist_com_y: Range = (0.0, 0.0)
    waist_com_z: Range = (0.0, 0.0)
    foot_friction: Range = (1.0, 1.0)  # scale of the feet's sliding friction (a scene's +wet/+ice still governs)

    def __post_init__(self) -> None:
        if self.noise_shape not in NOISE_SHAPES:
            raise RealismError(f"noise_shape must be one of {', '.join(NOISE_SHAPES)}, got {self.noise_shape!r}")
        if not isinstance(self.yaw_drift, bool):
            raise RealismError(f"yaw_drift must be true or false, got {self.yaw_drift!r}")
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in ("noise_shape", "yaw_drift"):
                continue
            if f.name == "delay_steps":
                lo, hi = v
                if not (isinstance(lo, int) and isinstance(hi, int) and 0 <= lo <= hi <= MAX_DELAY_STEPS):
                    raise RealismError(f"delay_steps must be whole steps 0 <= lo <= hi <= {MAX_DELAY_STEPS}, got {v}")
            elif isinstance(v, tuple):
                _check_range(f.name, v)
            else:
                _check_size(f.name, v)

    @property
    def sensors_on(self) -> bool:
        """Any effect on what the sensors report."""
        return any(getattr(self, k) > 0.0 for k in _SENSOR_SIZES) or (self.yaw_drift and self._gyro_on)

    @property
    def _gyro_on(self) -> bool:
        return self.gyro_noise > 0.0 or self.gyro_bias > 0.0 or self.gyro_bias_walk > 0.0

    @property
    def actuation_on(self) -> bool:
        """Any effect on what a command turns into (delay, strength)."""
        return self.delay_steps != (0, 0) or self.motor_strength != (1.0, 1.0)

    @property
    def model_on(self) -> bool:
        """Any change to the MuJoCo model (masses, centres of mass, friction)."""
        return (self.joint_friction != (1.0, 1.0) or self.mass_scale != (1.0, 1.0) or self.com_offset > 0.0
                or self.foot_friction != (1.0, 1.0)
                or any(r != (0.0, 0.0) for r in (self.waist_com_x, self.waist_com_y, self.waist_com_z)))

    @property
    def enabled(self) -> bool:
        return self.sensors_on or self.actuation_on or self.model_on


_SENSOR_SIZES = ("gyro_noise", "gyro_bias", "gyro_bias_walk", "accel_noise", "accel_bias", "tilt_noise",
                 "encoder_noise", "encoder_vel_noise", "encoder_offset")
# the largest value each size may take: beyond it a setting is a typo, not a sensor (rad, rad/s, m/s^2, s, m)
_SIZE_MAX = {"gyro_noise": 1.0, "gyro_bias": 0.5, "gyro_bias_walk": 0.1, "accel_noise": 5.0, "accel_bias": 2.0,
             "tilt_noise": 0.2, "tilt_tau": 60.0, "encoder_noise": 0.1, "encoder_vel_noise": 2.0,
             "encoder_offset": 0.1, "com_offset": 0.05}
_RANGE_LIMITS = {"motor_strength": (0.1, 2.0), "joint_friction": (0.0, 5.0), "mass_scale": (0.5, 2.0),
                 "foot_friction": (0.1, 3.0), "waist_com_x": (-0.1, 0.1), "waist_com_y": (-0.1, 0.1),
                 "waist_com_z": (-0.1, 0.1)}


def _check_size(name: str, v: Any) -> None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0.0:
        raise RealismError(f"{name} must be a finite number >= 0, got {v!r}")
    if v > _SIZE_MAX[name]:
        raise RealismError(f"{name} = {v} is above its bound {_SIZE_MAX[name]}")


def _check_range(name: str, v: tuple) -> None:
    lo_lim, hi_lim = _RANGE_LIMITS[name]
    if len(v) != 2 or not all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in v):
        raise RealismError(f"{name} must be two finite numbers LO:HI, got {v!r}")
    lo, hi = v
    if not lo_lim <= lo <= hi <= hi_lim:
        raise RealismError(f"{name} must satisfy {lo_lim} <= lo <= hi <= {hi_lim}, got {lo}:{hi}")


# -- profiles ---------------------------------------------------------------------------------------------------------
# LSM6DSOX datasheet (ST DS12814): gyro rate noise density 3.8 mdps/sqrt(Hz), accel noise density 70 ug/sqrt(Hz),
# zero-rate level +-1 dps, zero-g offset +-20 mg. Per-sample white noise = density * sqrt(bandwidth); the twin's
# samples are 200 Hz, so a 100 Hz band: gyro 0.038 dps = 6.6e-4 rad/s, accel 0.7 mg = 6.9e-3 m/s^2.
PROFILES: dict[str, RealismParams] = {
    "none": RealismParams(),
    "typical": RealismParams(
        gyro_noise=6.6e-4, gyro_bias=1.7e-3, gyro_bias_walk=1e-4,
        accel_noise=6.9e-3, accel_bias=0.05,
        tilt_noise=0.005, tilt_tau=1.0, yaw_drift=True,
        encoder_noise=1.1e-4, encoder_vel_noise=0.03, encoder_offset=0.003,
        delay_steps=(1, 1), motor_strength=(0.95, 1.05), joint_friction=(0.8, 1.2),
        mass_scale=(0.95, 1.05), com_offset=0.005),
    "training": RealismParams(
        noise_shape="uniform", gyro_noise=0.01, tilt_noise=0.02, encoder_noise=0.01, encoder_vel_noise=0.5,
        encoder_offset=0.02, delay_steps=(0, 5), motor_strength=(0.8, 1.2),
        waist_com_x=(0.0, 0.05), waist_com_z=(0.03, 0.07), foot_friction=(0.8, 1.2)),
}
PROFILE_DESCRIPTIONS = {
    "none": "ideal sensors, the fact sheet's robot (the default; bit-identical to a run without realism)",
    "typical": "a 6-axis LSM6DSOX-class IMU (noise, boot bias, drift, yaw drift), 14-bit encoders with offsets, "
               "5 ms actuation delay, +-5% masses and motor strength, +-20% joint friction",
    "training": "the 0818 policy's training randomisation: uniform observation noise, encoder offsets, 0-5 step "
                "actuation delay, 0.8-1.2 gains and foot friction, shifted torso centre of mass",
}


def _parse_value(name: str, text: str, default: Any) -> Any:
    t = text.strip()
    try:
        if isinstance(default, bool):
            if t.lower() not in ("true", "false", "1", "0", "on", "off"):
                raise ValueError
            return t.lower() in ("true", "1", "on")
        if isinstance(default, str):
            return t
        if isinstance(default, tuple):
            parts = t.split(":") if ":" in t else [t, t]
            if len(parts) != 2:
                raise ValueError
            conv = int if name == "delay_steps" else float
            return (conv(parts[0]), conv(parts[1]))
        return float(t)
    except ValueError:
        form = "LO:HI or one value" if isinstance(default, tuple) else "true/false" if isinstance(default, bool) \
            else "a number"
        raise RealismError(f"realism {name}={text!r}: expected {form}") from None


def parse_realism(text: str) -> RealismParams:
    """``PROFILE[,KEY=VALUE...]`` -> parameters (empty text = ``none``). Ranges are ``LO:HI`` (one value = fixed).

    Raises ``RealismError`` naming the bad part and what is valid.
    """
    if not isinstance(text, str):
        raise RealismError(f"realism must be a string, got {type(text).__name__}")
    parts = [p.strip() for p in text.split(",")] if text.strip() else [DEFAULT_REALISM]
    head, overrides = parts[0], parts[1:]
    if "=" in head:  # only overrides: on top of none
        head, overrides = DEFAULT_REALISM, parts
    params = PROFILES.get(head)
    if params is None:
        raise RealismError(f"unknown realism profile {head!r}; valid: {', '.join(PROFILES)} "
                           "(then ,KEY=VALUE overrides)")
    names = {f.name: f for f in fields(RealismParams)}
    changes: dict[str, Any] = {}
    for item in overrides:
        if not item:
            raise RealismError(f"realism {text!r}: empty entry between commas")
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in names:
            raise RealismError(f"realism {text!r}: {item!r} is not KEY=VALUE with a known key; keys: "
                               f"{', '.join(names)}")
        changes[key] = _parse_value(key, value, getattr(params, key))
    return replace(params, **changes) if changes else params


def describe(params: RealismParams, text: str = "") -> dict[str, Any]:
    """JSON-able: the setting as written, whether anything is on, and every parameter (provenance, logs)."""
    return {"setting": text or DEFAULT_REALISM, "enabled": params.enabled,
            "params": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(params).items()}}


def format_profiles() -> str:
    """The profiles and keys, for ``--help`` texts and errors."""
    lines = [f"  {n:<9} {PROFILE_DESCRIPTIONS[n]}" for n in PROFILES]
    lines.append("  overrides: PROFILE,KEY=VALUE,... with keys " + ", ".join(f.name for f in fields(RealismParams)))
    return "\n".join(lines)
