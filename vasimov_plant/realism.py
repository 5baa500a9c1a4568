"""The seeded realism model of one plant: noisy sensors, a delayed and uneven actuator, a randomised body.

``PlantCore`` owns one when the run's realism setting (``vasimov.realism``) turns anything on, and calls it from four
places: at construction (``randomise_model``: masses, centres of mass, joint and foot friction, written into the
MuJoCo model), at every boot (``boot``: the IMU's turn-on bias, the actuator's command history), after every physics
step (``after_step``: that step's noise samples, bias random walk, attitude error and heading drift) and when the
sensors are read (``apply``: idempotent, so reading twice in a step gives the same values, and the multi-process graph
and the single-process reference loop, which read at different rates, see the same numbers). The actuator
(``actuate``, ``scale_torque``) sits between the latched command and the motor model.

Where each error belongs (decisions):

* gyro: white noise + bias (turn-on, redrawn each boot) + bias random walk, in the IMU frame;
* accelerometer: white noise + turn-on bias on the specific force (``SensorReading.accel``). Projected gravity is not
  the accelerometer on this robot or in this twin: it is derived downstream from the IMU *orientation*
  (``vasimov.frames.projected_gravity``), the output of the IMU's attitude filter, which corrects roll and pitch from
  the accelerometer and cannot observe heading. So the attitude error is modelled on the orientation: a small roll/pitch
  error (``tilt_noise``, a first-order Gauss-Markov process with ``tilt_tau``), which is what the accelerometer's noise
  and the walk's accelerations leave in a fused tilt, and a heading error that integrates the vertical component of the
  gyro's error (``yaw_drift``), which is a 6-axis IMU's yaw drift. Both are rotations about world axes applied before
  the true orientation, so projected gravity sees the tilt error and not the heading drift.
* encoders: calibration offset (per run) + white noise on position and on velocity, in joint space (the real
  encoders sit on the motors; the ankles' A/B linkage is not modelled here).

Every draw comes from its own stream of ``SeedSequence([seed, SALT, effect])``, so changing one effect's size never
moves another's draws, and the plant's own ``rng`` is untouched.
"""

from __future__ import annotations

import math
from typing import Any

import mujoco
import numpy as np
from numpy.typing import NDArray

from vasimov.frames import quat_multiply
from vasimov.joints import NUM_JOINTS, SIM_NAMES
from vasimov.model.mjcf import ROOT_BODY
from vasimov.realism import RealismParams

_SALT = 0x5EA1  # realism's streams, apart from the scenes' and the plant's own
WAIST_BODY = "waist_yaw_link"
# effect -> stream index (fixed: a new effect gets a new number, old ones keep theirs)
_STREAM = {"noise": 0, "boot": 1, "delay": 2, "strength": 3, "encoder_offset": 4, "mass": 5, "com": 6,
           "friction": 7, "waist_com": 8, "foot_friction": 9}
# per-step noise vector layout: gyro 3, accel 3, encoder position 25, encoder velocity 25, tilt 2, bias walk 3
_N_NOISE = 3 + 3 + NUM_JOINTS + NUM_JOINTS + 2 + 3


def _quat_axis_angle(axis: NDArray[np.float64], angle: float) -> NDArray[np.float64]:
    h = 0.5 * angle
    return np.array([math.cos(h), *(math.sin(h) * axis)])


class RealismModel:
    """One robot's realism draws and running sensor-error state (see the module docstring for the model)."""

    def __init__(self, params: RealismParams, seed: int, model: mujoco.MjModel, dof_adr: NDArray[np.intp]) -> None:
        self.params = params
        self.seed = int(seed)
        p = params
        self._life = 0
        self._stepped = False
        self.delay_steps = int(self._rng("delay").integers(p.delay_steps[0], p.delay_steps[1] + 1))
        self.strength = self._rng("strength").uniform(*p.motor_strength, NUM_JOINTS)
        self.encoder_offset = self._rng("encoder_offset").uniform(-1.0, 1.0, NUM_JOINTS) * p.encoder_offset
        self._hist = np.zeros((self.delay_steps + 1, 5, NUM_JOINTS))
        self._hist_k = 0
        self._noise_rng = self._rng("noise")
        self._sample = np.zeros(_N_NOISE)
        self.gyro_bias = np.zeros(3)
        self.accel_bias = np.zeros(3)
        self.tilt = np.zeros(2)  # rad about world x, y
        self.yaw_error = 0.0  # rad about world z
        self.drawn: dict[str, Any] = {"delay_steps": self.delay_steps,
                                      "motor_strength": dict(zip(SIM_NAMES, self.strength.tolist(), strict=True)),
                                      "encoder_offset": dict(zip(SIM_NAMES, self.encoder_offset.tolist(),
                                                                 strict=True))}
        self._dof_adr = dof_adr
        self._model = model

    def _rng(self, effect: str, *extra: int) -> np.random.Generator:
        return np.random.default_rng(np.random.SeedSequence([self.seed, _SALT, _STREAM[effect], *extra]))

    def _white(self, n: int) -> NDArray[np.float64]:
        """Unit white noise: std 1 (gaussian) or half-width 1 (uniform), per the profile's ``noise_shape``."""
        if self.params.noise_shape == "uniform":
            return self._noise_rng.uniform(-1.0, 1.0, n)
        return self._noise_rng.standard_normal(n)

    # -- the body: drawn once per run, written into the model -------------------------------------------------------
    def randomise_model(self, data: mujoco.MjData) -> None:
        """Scale masses (with their inertias), move centres of mass, scale joint and foot friction, in place; then
        recompute MuJoCo's derived constants. Every stream is drawn whatever the sizes, so draws nest across sizes."""
        m, p = self._model, self.params
        root = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, ROOT_BODY)
        robot = np.flatnonzero(m.body_rootid == root)
        mass = self._rng("mass").uniform(*p.mass_scale, robot.size)
        com = self._rng("com").uniform(-1.0, 1.0, (robot.size, 3)) * p.com_offset
        friction = self._rng("friction").uniform(*p.joint_friction, NUM_JOINTS)
        w = self._rng("waist_com")
        waist = np.array([w.uniform(*p.waist_com_x), w.uniform(*p.waist_com_y), w.uniform(*p.waist_com_z)])
        foot = float(self._rng("foot_friction").uniform(*p.foot_friction))
        m.body_mass[robot] *= mass
        m.body_inertia[robot] *= mass[:, None]
        m.body_ipos[robot] += com
        waist_id = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, WAIST_BODY)
        if waist_id >= 0:
            m.body_ipos[waist_id] += waist
        m.dof_frictionloss[self._dof_adr] *= friction
        feet = np.flatnonzero((m.body_rootid[m.geom_bodyid] == root) & (m.geom_friction[:, 0] > 0.0)
                              & np.isin(m.geom_bodyid, [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, n)
                                                        for n in ("left_ankle_roll_link", "right_ankle_roll_link")]))
        m.geom_friction[feet, 0] *= foot
        mujoco.mj_setConst(m, data)
        names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, int(b)) for b in robot]
        self.drawn.update({
            "mass_scale": dict(zip(names, mass.tolist(), strict=True)),
            "com_offset": {n: c.tolist() for n, c in zip(names, com, strict=True)},
            "waist_com_offset": waist.tolist(),
            "joint_friction": dict(zip(SIM_NAMES, friction.tolist(), strict=True)),
            "foot_friction": foot,
        })

    # -- boot ---------------------------------------------------------------------------------------------------------
    def boot(self, command: tuple[NDArray[np.float64], ...]) -> None:
        """A (virtual) power-on: a new gyro/accelerometer turn-on bias, the attitude filter restarted (no heading
        error), the actuator's history holding ``command``. Booting again before any step is the same boot, so a
        caller that resets twice at start (the node, the reference loop) draws the same life."""
        if self._stepped:
            self._life += 1
        self._stepped = False
        p = self.params
        rng = self._rng("boot", self._life)
        self.gyro_bias = rng.standard_normal(3) * p.gyro_bias
        self.accel_bias = rng.standard_normal(3) * p.accel_bias
        self._noise_rng = self._rng("noise", self._life)
        self._sample = self._white(_N_NOISE)
        self.tilt = self._sample[56:58] * p.tilt_noise  # the filter starts in its stationary spread
        self.yaw_error = 0.0
        for k in range(5):
            self._hist[:, k, :] = command[k]
        self._hist_k = 0

    # -- per physics step ---------------------------------------------------------------------------------------------
    def actuate(self, command: tuple[NDArray[np.float64], ...]) -> tuple[NDArray[np.float64], ...]:
        """The command the motors act on this step: the one latched ``delay_steps`` steps ago (training's
        ``DelayedPDActuator``: the whole target, gains included, is late; the PD acts on the present joint state)."""
        if self.delay_steps == 0:
            return command
        n = self.delay_steps + 1
        self._hist_k = (self._hist_k + 1) % n
        slot = self._hist[self._hist_k]
        for k in range(5):
            slot[k] = command[k]
        old = self._hist[(self._hist_k + 1) % n]  # written delay_steps steps ago
        return old[0], old[1], old[2], old[3], old[4]

    def scale_torque(self, tau: NDArray[np.float64]) -> None:
        """Each motor's strength, in place (MuJoCo's control range still clips at the rated effort)."""
        tau *= self.strength

    def after_step(self, dt: float, body_to_world: NDArray[np.float64]) -> None:
        """Advance the sensor errors by one step: new white-noise samples, the bias walk, the attitude error and
        the heading drift (the vertical part, through the IMU's true orientation, of this step's gyro error)."""
        self._stepped = True
        p = self.params
        s = self._white(_N_NOISE)
        self._sample = s
        self.gyro_bias += s[58:61] * (p.gyro_bias_walk * math.sqrt(dt))
        a = math.exp(-dt / p.tilt_tau) if p.tilt_tau > 0.0 else 0.0
        self.tilt = a * self.tilt + math.sqrt(1.0 - a * a) * p.tilt_noise * s[56:58]
        if p.yaw_drift:
            gyro_error = self.gyro_bias + s[0:3] * p.gyro_noise
            self.yaw_error += dt * float(body_to_world[2] @ gyro_error)

    def attitude_error(self) -> NDArray[np.float64]:
        """The estimate's error as a world-frame rotation (wxyz): heading drift after the roll/pitch error."""
        ex, ey = float(self.tilt[0]), float(self.tilt[1])
        angle = math.hypot(ex, ey)
        tilt = _quat_axis_angle(np.array([ex, ey, 0.0]) / angle, angle) if angle > 0.0 else np.array([1.0, 0, 0, 0])
        return quat_multiply(_quat_axis_angle(np.array([0.0, 0.0, 1.0]), self.yaw_error), tilt)

    def apply(self, q: NDArray[np.float64], qd: NDArray[np.float64], quat: NDArray[np.float64],
              gyro: NDArray[np.float64], accel: NDArray[np.float64]) -> tuple[NDArray[np.float64], ...]:
        """What the sensors report for the present (ideal) values: new arrays, the inputs are not changed."""
        p, s = self.params, self._sample
        q_out = q + self.encoder_offset + s[6:31] * p.encoder_noise
        qd_out = qd + s[31:56] * p.encoder_vel_noise
        gyro_out = gyro + self.gyro_bias + s[0:3] * p.gyro_noise
        accel_out = accel + self.accel_bias + s[3:6] * p.accel_noise
        quat_out = quat_multiply(self.attitude_error(), quat)
        quat_out /= np.linalg.norm(quat_out)
        return q_out, qd_out, quat_out, gyro_out, accel_out
