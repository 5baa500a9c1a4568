"""Linear inverted pendulum and divergent component of motion (DCM): the walker's balance model, in closed form.

Pure numpy, no robot model: everything here is the LIPM with constant COM height ``z``,
``omega = sqrt(g / z)``, COM ``c`` and ZMP ``p`` (2-D, ground plane):

* the DCM ``xi = c + c_dot / omega`` obeys ``xi_dot = omega (xi - p)``: with the ZMP held on a foot it runs away
  from that foot exponentially, ``xi(t) = p + (xi(0) - p) exp(omega t)`` (Englsberger et al., T-RO 2015);
* a steady gait (each step of duration ``T`` shifts the foot by a constant ``v T`` plus an alternating lateral
  ``+/- w``) has a periodic DCM whose offset from the new foot at touchdown is
  ``b = v T / (E - 1) - s w / (E + 1)``, ``E = exp(omega T)``, ``s`` the side the swing foot moved to (+1 left);
  this is the nominal DCM offset of step-timing-adaptation controllers (Khadiv et al., T-RO 2020);
* **step position adaptation**: the foothold that restores the nominal offset from the *measured* DCM is
  ``u = xi_T - b`` where ``xi_T`` is the measured DCM propagated to touchdown on the stance foot's ZMP;
* **step timing adaptation**: when that foothold is out of the leg's reach, the step lands sooner: the remaining
  time is shortened (down to a minimum swing) to the time at which the predicted foothold comes back in reach, in
  closed form where it exists (the DCM grows monotonically along its ray from the stance ZMP).

Why closed form rather than placo's ``WalkPatternGenerator``: its ``replan`` (the QP over the ZMP horizon) measured
3.5 ms mean and 4.4 ms max per call on this robot (24 timesteps, 2-core machine), over the 3 ms per-tick budget on
its own; the closed-form DCM laws cost microseconds and give the same feedback structure (docs/walker.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Vec = NDArray[np.float64]
GRAVITY = 9.81


def omega_of(com_height: float) -> float:
    """LIPM natural frequency (1/s) for a COM height (m)."""
    if com_height <= 0.0:
        raise ValueError(f"COM height must be positive, got {com_height}")
    return math.sqrt(GRAVITY / com_height)


def rot2(yaw: float) -> NDArray[np.float64]:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s], [s, c]])


def dcm_of(com: Vec, com_vel: Vec, omega: float) -> Vec:
    """Divergent component of motion from the COM position and velocity."""
    return np.asarray(com, dtype=np.float64) + np.asarray(com_vel, dtype=np.float64) / omega


def propagate_dcm(xi: Vec, zmp: Vec, omega: float, t: float) -> Vec:
    """The DCM after ``t`` seconds with the ZMP held at ``zmp``."""
    return zmp + (xi - zmp) * math.exp(omega * t)


def nominal_offset(step_vel: Vec, width: float, swing_side: float, omega: float, period: float) -> Vec:
    """DCM minus the new foothold at touchdown in a steady gait, in the heading frame.

    ``step_vel`` is the commanded planar velocity (heading frame), ``width`` the nominal distance between the feet's
    lateral positions, ``swing_side`` +1 when the swing foot is the left one (it moves to +y), -1 for the right.
    """
    e = math.exp(omega * period)
    b = np.asarray(step_vel, dtype=np.float64) * period / (e - 1.0)
    b[1] -= swing_side * width / (e + 1.0)
    return b


@dataclass(frozen=True)
class StepLimits:
    """Where a swing foot may land relative to the stance foot, in the stance heading frame (m)."""

    max_forward: float = 0.22
    max_backward: float = 0.18
    min_width: float = 0.15  # inner limit: the knee capsules must not touch
    max_width: float = 0.38

    def clip(self, rel: Vec, swing_side: float) -> Vec:
        """``rel`` (foothold minus stance foot, heading frame) inside the reachable box; ``swing_side`` +1 left."""
        x = float(np.clip(rel[0], -self.max_backward, self.max_forward))
        y = swing_side * float(np.clip(swing_side * rel[1], self.min_width, self.max_width))
        return np.array([x, y])

    def excess(self, rel: Vec, swing_side: float) -> float:
        """How far (m) ``rel`` lies outside the box (0 inside)."""
        return float(np.linalg.norm(rel - self.clip(rel, swing_side)))


@dataclass(frozen=True)
class Foothold:
    """The adapted next step: where (odometry frame) and in how many seconds the swing foot lands."""

    pos: Vec
    remaining: float
    excess: float  # m the unconstrained foothold lay outside reach at the chosen time


def adapt_step(xi: Vec, stance_zmp: Vec, stance_pos: Vec, heading: float, offset: Vec, swing_side: float,
               remaining: float, min_remaining: float, omega: float, limits: StepLimits) -> Foothold:
    """Step position and timing adaptation from the measured DCM.

    ``xi`` measured DCM, ``stance_zmp`` where the ZMP is held for the rest of the step, ``stance_pos`` the stance
    foot (reach is measured from it), ``heading`` the frame of ``offset`` and of the reach box, ``offset`` the
    nominal DCM offset at touchdown (:func:`nominal_offset`), ``remaining`` the planned time to touchdown. If the
    foothold at the planned time is out of reach, the earliest time >= ``min_remaining`` at which it is in reach
    (or, failing that, the one that minimises the excess, tried on a small grid) is chosen instead.
    """
    r = rot2(heading)

    def at(t: float) -> tuple[Vec, float]:
        u = propagate_dcm(xi, stance_zmp, omega, t) - r @ offset
        rel = r.T @ (u - stance_pos)
        return stance_pos + r @ limits.clip(rel, swing_side), limits.excess(rel, swing_side)

    pos, exc = at(remaining)
    if exc <= 1e-9 or remaining <= min_remaining:
        return Foothold(pos, remaining, exc)
    best = (exc, remaining, pos)
    n = 6
    for k in range(n + 1):
        t = min_remaining + (remaining - min_remaining) * k / n
        p, e = at(t)
        if e < best[0] - 1e-6 or (e <= 1e-9 and t > best[1]):
            best = (e, t, p)
    return Foothold(best[2], best[1], best[0])


def zmp_command(zmp_ref: Vec, xi: Vec, xi_ref: Vec, gain: float, omega: float) -> Vec:
    """DCM tracking: the ZMP that makes the DCM error decay at rate ``gain`` (1/s) on top of the reference's own
    motion, ``p = p_ref + (1 + gain / omega) (xi - xi_ref)`` (Englsberger 2015, eq. for the CMP control law)."""
    return zmp_ref + (1.0 + gain / omega) * (xi - xi_ref)


def lipm_step(com: Vec, com_vel: Vec, zmp: Vec, omega: float, dt: float) -> tuple[Vec, Vec]:
    """Exact LIPM update over ``dt`` with the ZMP held at ``zmp``."""
    ch, sh = math.cosh(omega * dt), math.sinh(omega * dt)
    d = com - zmp
    return zmp + d * ch + com_vel * sh / omega, d * omega * sh + com_vel * ch


def clip_to_sole(p: Vec, centre: Vec, yaw: float, half_length: float, half_width: float) -> Vec:
    """``p`` clipped into a rectangle (a sole) centred at ``centre`` and turned by ``yaw``."""
    r = rot2(yaw)
    rel = r.T @ (p - centre)
    rel = np.clip(rel, [-half_length, -half_width], [half_length, half_width])
    return centre + r @ rel
