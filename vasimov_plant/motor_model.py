"""Joint-space PD motor model: what a position-controlled actuator turns a command into.

The law is the training one (Isaac ``DelayedPDActuator``, see the sheet's ``pd_gains.policy_0818_training``)::

    tau = kp * (q_target - q) + kd * (qd_target - qd) + tau_ff,   clipped to +/- effort limit

with the URDF effort limits as the clip, exactly as training clips. Passive joint damping is *not* added on top
(the MJCF is built with ``damping=0``), so Kd is counted once.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vasimov.joints import EFFORT_LIMIT, VELOCITY_LIMIT


class MotorModel:
    """Vectorised PD + feed-forward with a per-joint torque clamp and an optional speed-torque envelope.

    The envelope ``tau_max(w) = effort * max(0, 1 - |w| / velocity_limit)`` is an **assumption** (vasimov's "L1"
    derating, not a measured motor curve; see ``torque_limits.velocity_dependent_derating_vasimov_L1``). It is
    symmetric, so it also limits braking torque, which real drives can exceed; it is off by default because
    training used a plain clip. Work buffers are allocated once so ``compute`` does not allocate per call.
    """

    def __init__(
        self,
        effort_limit: ArrayLike = EFFORT_LIMIT,
        velocity_limit: ArrayLike = VELOCITY_LIMIT,
        *,
        speed_torque_envelope: bool = False,
    ) -> None:
        effort = np.array(effort_limit, dtype=np.float64)
        vel = np.array(velocity_limit, dtype=np.float64)
        if effort.ndim != 1 or effort.shape != vel.shape:
            raise ValueError(f"effort_limit {effort.shape} and velocity_limit {vel.shape} must be equal 1-D shapes")
        if not (np.all(np.isfinite(effort)) and np.all(effort >= 0.0)):
            raise ValueError("effort limits must be finite and >= 0")
        if not (np.all(np.isfinite(vel)) and np.all(vel > 0.0)):
            raise ValueError("velocity limits must be finite and > 0")
        effort.setflags(write=False)
        vel.setflags(write=False)
        self._effort = effort
        self._inv_vel = 1.0 / vel
        self.speed_torque_envelope = speed_torque_envelope
        n = effort.shape[0]
        self._tau = np.zeros(n)
        self._tmp = np.zeros(n)
        self._limit = np.zeros(n)

    @property
    def num_joints(self) -> int:
        return int(self._effort.shape[0])

    @property
    def effort_limit(self) -> NDArray[np.float64]:
        return self._effort

    def torque_limit(self, qd: ArrayLike, out: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        """The symmetric clamp applied at joint speed ``qd`` (the effort limit when the envelope is off)."""
        lim = self._limit if out is None else out
        if not self.speed_torque_envelope:
            np.copyto(lim, self._effort)
            return lim
        np.abs(qd, out=lim)
        lim *= self._inv_vel
        np.subtract(1.0, lim, out=lim)
        np.maximum(lim, 0.0, out=lim)
        lim *= self._effort
        return lim

    def compute(
        self,
        q: ArrayLike,
        qd: ArrayLike,
        q_target: ArrayLike,
        qd_target: ArrayLike,
        kp: ArrayLike,
        kd: ArrayLike,
        tau_ff: ArrayLike,
        out: NDArray[np.float64] | None = None,
    ) -> NDArray[np.float64]:
        """Clamped joint torques. Writes into ``out`` (or an internal buffer that the next call overwrites).

        A non-finite input stays non-finite in the output on purpose: the plant turns it into a ``PhysicsError``
        instead of the clamp hiding it.
        """
        tau = self._tau if out is None else out
        tmp = self._tmp
        np.subtract(q_target, q, out=tau)
        tau *= kp
        np.subtract(qd_target, qd, out=tmp)
        tmp *= kd
        tau += tmp
        tau += tau_ff
        lim = self.torque_limit(qd)
        np.negative(lim, out=tmp)
        np.clip(tau, tmp, lim, out=tau)
        return tau


def default_motor_model(*, speed_torque_envelope: bool = False) -> MotorModel:
    """The Asimov 1 motor model from the joint table (25 joints, joint-index order)."""
    return MotorModel(EFFORT_LIMIT, VELOCITY_LIMIT, speed_torque_envelope=speed_torque_envelope)
