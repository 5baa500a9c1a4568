"""ZMP preview control on the cart-table (linear inverted pendulum) model.

Why preview control: a position-controlled humanoid follows whatever COM path its joints are told to follow, so
the path itself must be one whose zero-moment point stays inside the support foot. Kajita's preview controller
produces such a path from the future ZMP references (the footstep plan) at the cost of a dot product per tick. The
gains are computed once from the discrete Riccati equation (plain numpy: no scipy on the target).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

GRAVITY = 9.81

Vec = NDArray[np.float64]


@dataclass(frozen=True)
class PreviewGains:
    """State feedback ``k`` (3,) and preview weights ``f`` (N,) for ``u = -k x + f @ zmp_ref[1:N+1]``."""

    a: Vec
    b: Vec
    c: Vec
    k: Vec
    f: Vec
    dt: float
    com_height: float


def cart_table(dt: float, com_height: float) -> tuple[Vec, Vec, Vec]:
    """Discrete cart-table model with jerk input; output is the ZMP ``c - h/g * c_ddot``."""
    a = np.array([[1.0, dt, dt * dt / 2.0], [0.0, 1.0, dt], [0.0, 0.0, 1.0]])
    b = np.array([dt**3 / 6.0, dt * dt / 2.0, dt])
    c = np.array([1.0, 0.0, -com_height / GRAVITY])
    return a, b, c


def preview_gains(
    dt: float, com_height: float, horizon: int, q_zmp: float = 1.0, r_jerk: float = 1e-6, iters: int = 5000
) -> PreviewGains:
    """Riccati iteration for ``min sum q (zmp - ref)^2 + r jerk^2`` and the matching preview weights."""
    if dt <= 0.0 or com_height <= 0.0 or horizon < 1:
        raise ValueError(f"need dt > 0, com_height > 0, horizon >= 1 (got {dt}, {com_height}, {horizon})")
    a, b, c = cart_table(dt, com_height)
    cq = q_zmp * np.outer(c, c)
    p = cq.copy()
    for _ in range(iters):
        s = r_jerk + float(b @ p @ b)
        pb = a.T @ p @ b
        p_next = a.T @ p @ a + cq - np.outer(pb, pb) / s
        if np.max(np.abs(p_next - p)) < 1e-12 * max(1.0, float(np.max(np.abs(p)))):
            p = p_next
            break
        p = p_next
    s = r_jerk + float(b @ p @ b)
    k = (b @ p @ a) / s
    ac = a - np.outer(b, k)
    f = np.empty(horizon)
    v = c * q_zmp  # (Ac^T)^j C^T Q
    for j in range(horizon):
        f[j] = float(b @ v) / s
        v = ac.T @ v
    return PreviewGains(a=a, b=b, c=c, k=k, f=f, dt=dt, com_height=com_height)


class PreviewController:
    """Both horizontal axes of the cart-table, stepped once per control tick."""

    def __init__(self, gains: PreviewGains) -> None:
        self.g = gains
        self.state = np.zeros((3, 2))  # rows: position, velocity, acceleration; columns: x, y

    @property
    def horizon(self) -> int:
        return int(self.g.f.shape[0])

    def reset(self, pos: Vec, vel: Vec | None = None) -> None:
        self.state[:] = 0.0
        self.state[0] = pos
        if vel is not None:
            self.state[1] = vel

    def zmp(self) -> Vec:
        return self.g.c @ self.state

    def step(self, zmp_future: Vec) -> Vec:
        """Advance one tick; ``zmp_future`` is (N, 2): references for ticks k+1 .. k+N. Returns the new state."""
        u = -self.g.k @ self.state + self.g.f @ zmp_future
        self.state = self.g.a @ self.state + np.outer(self.g.b, u)
        return self.state
