"""The opt-in recovery chain (twin-only): safe fall, get up from the back or the front, resume.

The real Asimov 1 has no get-up: a fall latches DAMP with FALL_DETECTED until a power cycle, and that stays the
twin's default (``FirmwareParams.recovery`` off). With recovery on, the firmware core hands the joints to this pure
state machine while the robot is down. It reads only what the firmware reads (joint positions, the IMU's projected
gravity and angular rate) and answers motor targets (position, kp, kd) that go through the normal motor path: PD in
the plant with the real torque limits. It never touches the simulator's state and never uses the gantry.

Phases (``Phase``; the value is what ``FirmwareState.recovery_phase`` carries):

* ``FALLING``: a fall was detected (tilt past ``fall_gravity_z``, or an angular rate past ``fall_rate`` while
  tilted past ``fall_tilt_rate_gravity_z``). The protective pose for the fall's direction at the trip (forward:
  kneel; otherwise crouch; arms forward in both) is tracked until the body comes to rest, the legs compliant and the
  arms stiff enough to catch the body (``protect_arm_kp_scale``).
* ``SETTLING``: at rest (angular rate below ``rest_rate`` for ``rest_s``); the gravity direction says how it lies:
  on the back (gravity along -x of the IMU), the front (+x) or a side (|y| dominant).
* ``ROLLING``: on a side; a roll pose turns the body onto its back, then ``SETTLING`` again.
* ``GETUP_BACK`` / ``GETUP_FRONT``: the key poses of ``vasimov_edge.getup_poses``, each reached by a quintic
  interpolation from the pose the previous one ended in (measured), then held. A key pose whose leg joints still
  miss their targets by more than ``stall_rad`` at the end of its hold is a stall: the chain goes back to
  ``SETTLING`` (a retry), at most ``max_retries`` times. From the back the sequence rolls the body onto its front
  (the knee range, 0..86 deg, rules out sitting up over the feet); it then settles and runs the front sequence.
* ``STANDING_UP``: the stand pose with the STAND gains until the body is upright (projected-gravity z below
  ``upright_gravity_z``) and still for ``upright_hold_s``; then the chain is ``done``. Not upright by the end of its
  window: a retry.
* ``FAILED``: out of retries; the firmware then latches the fall as the hardware does.

Pure: no rclpy, no sockets, no clock; every call carries the firmware time ``t``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from vasimov.joints import DEFAULT_POS, JOINTS, RANGE_HI, RANGE_LO, STAND_KD, STAND_KP
from vasimov_edge.getup_poses import KeyPose, lying_sequence, protective_pose

LEG_JOINTS = np.arange(12)  # hips, knees, ankles of both legs (vasimov.joints order)
ARM_JOINTS = np.array([j.index for j in JOINTS if j.group in ("left_arm", "right_arm")])


class Phase(StrEnum):
    """The chain's phase; ``IDLE`` (empty) when no chain runs."""

    IDLE = ""
    FALLING = "FALLING"
    SETTLING = "SETTLING"
    ROLLING = "ROLLING"
    GETUP_BACK = "GETUP_BACK"
    GETUP_FRONT = "GETUP_FRONT"
    STANDING_UP = "STANDING_UP"
    FAILED = "FAILED"


class Lying(StrEnum):
    BACK = "back"
    FRONT = "front"
    SIDE = "side"
    UPRIGHT = "upright"


@dataclass(frozen=True)
class RecoveryParams:
    """The chain's thresholds. Tilt thresholds are projected-gravity z (IMU frame, -1 upright).

    fall_gravity_z: the firmware's own fall trip (tilt > 60 deg), ``FirmwareParams.fall_gravity_z``.
    fall_rate, fall_tilt_rate_gravity_z: an earlier trip: angular rate above ``fall_rate`` rad/s while tilted past
        ``fall_tilt_rate_gravity_z`` (30 deg) -- a robot toppling, caught before the 60 deg trip so the protective
        pose has time to act. DECISION (no source: the robot has no safe fall); 2 rad/s is well above what the
        balancing gait reaches (the bench's pushes stay under ~1 rad/s when recovered).
    rest_rate, rest_s: "at rest" for SETTLING: angular rate below this for this long.
    lying_axis: |gravity component| along x (back/front) or y (side) that classifies the lying direction.
    stall_rad: a key pose's leg-joint tracking error at the end of its hold that counts as a stall.
    max_retries: stalls/failed stand-ups before the chain gives up (FAILED).
    upright_gravity_z, upright_hold_s, stand_window_s: STANDING_UP's exit: upright (the SDK's arming tilt) and still
        for ``upright_hold_s``, within ``stand_window_s`` of its start.
    stand_move_s: the quintic blend from the last key pose to the stand pose.
    protect_move_s: the quintic blend into the protective pose (a step doubled the peak joint speed of a fall).
    protect_kp_scale: the protective pose's stiffness as a fraction of the STAND gains (compliant landing).
    protect_arm_kp_scale: the arms' stiffness in the protective pose, as a fraction of their STAND gains: the hands
        meet the floor first and must slow the body (elbow torque limit 12 N m). Measured (vasimov_tools/fall_study.py,
        front knock-downs of 250 N for 0.15 s, 3 push times): at 0.3 the head hit the floor at 4.2 m/s on average;
        at 2.0, with the kneeling pose, it did not touch it. 2.0 is the chain's cap (at most twice STAND).
    """

    fall_gravity_z: float = -0.5
    fall_rate: float = 2.0
    fall_tilt_rate_gravity_z: float = -0.866
    rest_rate: float = 0.3
    rest_s: float = 0.5
    lying_axis: float = 0.6
    stall_rad: float = 0.35
    max_retries: int = 3
    upright_gravity_z: float = -0.87
    upright_hold_s: float = 0.5
    stand_window_s: float = 4.0
    stand_move_s: float = 1.5
    protect_kp_scale: float = 0.3
    protect_arm_kp_scale: float = 2.0
    protect_move_s: float = 0.25


def classify(g: np.ndarray, p: RecoveryParams) -> Lying:
    """How the body lies from the IMU's projected gravity: face up (gravity along -x), face down (+x), a side."""
    if g[2] < p.fall_gravity_z:
        return Lying.UPRIGHT
    if g[0] <= -p.lying_axis:
        return Lying.BACK
    if g[0] >= p.lying_axis:
        return Lying.FRONT
    return Lying.SIDE


def fall_direction(g: np.ndarray | None) -> str:
    """Which protective pose a fall gets, from the IMU's projected gravity at the trip: "front" when the body
    tips forward more than sideways (gravity along +x of the IMU dominates), else "other"; no reading: "other"."""
    if g is None:
        return "other"
    return "front" if g[0] > 0.0 and g[0] >= abs(g[1]) else "other"


def quintic(s: float) -> float:
    """Minimum-jerk blend 0..1 (zero velocity and acceleration at both ends)."""
    s = min(max(s, 0.0), 1.0)
    return s * s * s * (10.0 - 15.0 * s + 6.0 * s * s)


@dataclass(frozen=True)
class RecoveryTargets:
    position: np.ndarray
    kp: np.ndarray
    kd: np.ndarray


class RecoveryChain:
    """The recovery state machine; see the module docstring. ``start_fall``/``start_getup`` begin a chain,
    ``step`` advances it once per control tick and returns the motor targets."""

    def __init__(self, params: RecoveryParams | None = None) -> None:
        self.params = params or RecoveryParams()
        self._protect_kp = STAND_KP * self.params.protect_kp_scale
        self._protect_kp[ARM_JOINTS] = STAND_KP[ARM_JOINTS] * self.params.protect_arm_kp_scale
        self.reset()

    def reset(self) -> None:
        self.phase = Phase.IDLE
        self.done = False
        self.retries = 0
        self.stalls = 0
        self._t0 = 0.0
        self._rest_since: float | None = None
        self._upright_since: float | None = None
        self._seq: tuple[KeyPose, ...] = ()
        self._k = 0
        self._from: np.ndarray = DEFAULT_POS.copy()
        self._prev_g: np.ndarray | None = None
        self._prev_t: float | None = None
        self._fall_direction = "other"

    @property
    def active(self) -> bool:
        return self.phase not in (Phase.IDLE, Phase.FAILED)

    # -- entry points -------------------------------------------------------------------------------------------
    def start_fall(self, t: float, q: np.ndarray, g: np.ndarray | None = None) -> None:
        """A fall was detected while the joints were driven: the protective pose for the direction the projected
        gravity ``g`` shows (``fall_direction``) until at rest."""
        self.reset()
        self._fall_direction = fall_direction(g)
        self._enter(Phase.FALLING, t, q)

    def _protect_gains(self) -> tuple[np.ndarray, np.ndarray]:
        """The protective pose's gains: legs (and the rest) compliant, arms stiff (fixed by the params)."""
        return self._protect_kp.copy(), STAND_KD.copy()

    def start_getup(self, t: float, q: np.ndarray) -> None:
        """Lying (limp) and asked to stand: settle, then get up."""
        self.reset()
        self._enter(Phase.SETTLING, t, q)

    def falling(self, g: np.ndarray, gyro: np.ndarray | None) -> bool:
        """Whether this tick's IMU reading is a fall (the chain's trip; the firmware checks it while driving)."""
        p = self.params
        if g[2] > p.fall_gravity_z:
            return True
        rate = _rate(gyro)
        return rate is not None and rate > p.fall_rate and g[2] > p.fall_tilt_rate_gravity_z

    # -- the tick -----------------------------------------------------------------------------------------------
    def step(self, t: float, q: np.ndarray, g: np.ndarray, gyro: np.ndarray | None) -> RecoveryTargets | None:
        """Advance one control tick; the targets to track, or None when no chain runs."""
        p = self.params
        rate = _rate(gyro)
        if rate is None:  # no gyro: the rate gravity turns at (blind to yaw, enough to tell "at rest")
            rate = 0.0
            if self._prev_g is not None and self._prev_t is not None and t > self._prev_t:
                rate = float(np.linalg.norm(g - self._prev_g)) / (t - self._prev_t)
        self._prev_g, self._prev_t = g.copy(), t
        if not self.active:
            return None
        still = rate < p.rest_rate
        if still:
            self._rest_since = t if self._rest_since is None else self._rest_since
        else:
            self._rest_since = None
        at_rest = self._rest_since is not None and t - self._rest_since >= p.rest_s - 1e-9

        if self.phase is Phase.FALLING:
            if not at_rest:
                s = quintic((t - self._t0) / p.protect_move_s if p.protect_move_s > 0 else 1.0)
                pos = self._from + (protective_pose(self._fall_direction) - self._from) * s
                return RecoveryTargets(pos, *self._protect_gains())
            self._enter(Phase.SETTLING, t, q)  # SETTLING waits for its own rest window, in the relaxed pose
            self._rest_since = None
            at_rest = False
        if self.phase is Phase.SETTLING:
            if at_rest:
                self._choose(t, q, g)
            if self.phase is Phase.SETTLING:
                # lie still and compliant where it is (no stiffness pushing into the floor)
                return RecoveryTargets(q.copy(), STAND_KP * p.protect_kp_scale, STAND_KD.copy())
        if self.phase in (Phase.ROLLING, Phase.GETUP_BACK, Phase.GETUP_FRONT):
            return self._track_sequence(t, q, g)
        if self.phase is Phase.STANDING_UP:
            return self._standing_up(t, q, g, still)
        return None

    # -- internals ----------------------------------------------------------------------------------------------
    def _enter(self, phase: Phase, t: float, q: np.ndarray) -> None:
        self.phase = phase
        self._t0 = t
        self._k = 0
        self._from = np.asarray(q, dtype=float).copy()
        self._upright_since = None

    def _choose(self, t: float, q: np.ndarray, g: np.ndarray) -> None:
        lying = classify(g, self.params)
        if lying is Lying.UPRIGHT:
            self._enter(Phase.STANDING_UP, t, q)
            return
        phase = {Lying.BACK: Phase.GETUP_BACK, Lying.FRONT: Phase.GETUP_FRONT, Lying.SIDE: Phase.ROLLING}[lying]
        self._seq = lying_sequence(lying.value, float(g[1]))
        self._enter(phase, t, q)

    def _retry(self, t: float, q: np.ndarray) -> None:
        self.retries += 1
        if self.retries > self.params.max_retries:
            self.phase = Phase.FAILED
            return
        self._enter(Phase.SETTLING, t, q)
        self._rest_since = None

    def _track_sequence(self, t: float, q: np.ndarray, g: np.ndarray) -> RecoveryTargets | None:
        p = self.params
        key = self._seq[self._k]
        tau = t - self._t0
        target = key.position
        pos = self._from + (target - self._from) * quintic(tau / key.move_s if key.move_s > 0 else 1.0)
        kp, kd = key.gains()
        if tau >= key.move_s + key.hold_s - 1e-9:
            err = float(np.max(np.abs(q[LEG_JOINTS] - target[LEG_JOINTS])))
            if err > p.stall_rad:
                self.stalls += 1
                self._retry(t, q)
                return RecoveryTargets(q.copy(), STAND_KP * p.protect_kp_scale, STAND_KD.copy())
            self._k += 1
            self._t0, self._from = t, target.copy()
            if self._k >= len(self._seq):
                if self.phase in (Phase.ROLLING, Phase.GETUP_BACK):
                    # a roll (from a side onto the back, from the back onto the front): settle and look again
                    self._enter(Phase.SETTLING, t, q)
                    self._rest_since = None
                else:
                    self._enter(Phase.STANDING_UP, t, target)
        return RecoveryTargets(np.clip(pos, RANGE_LO, RANGE_HI), kp, kd)

    def _standing_up(self, t: float, q: np.ndarray, g: np.ndarray, still: bool) -> RecoveryTargets | None:
        p = self.params
        tau = t - self._t0
        pos = self._from + (DEFAULT_POS - self._from) * quintic(tau / p.stand_move_s)
        if g[2] < p.upright_gravity_z and still:
            self._upright_since = t if self._upright_since is None else self._upright_since
            if tau >= p.stand_move_s and t - self._upright_since >= p.upright_hold_s - 1e-9:
                self.phase = Phase.IDLE
                self.done = True
                return None
        else:
            self._upright_since = None
        if tau > p.stand_window_s:
            self._retry(t, q)
        return RecoveryTargets(pos, STAND_KP.copy(), STAND_KD.copy())


def _rate(gyro: np.ndarray | None) -> float | None:
    if gyro is None:
        return None
    r = float(np.linalg.norm(gyro))
    return r if math.isfinite(r) else None


__all__ = [
    "ARM_JOINTS",
    "LEG_JOINTS",
    "Lying",
    "Phase",
    "RecoveryChain",
    "RecoveryParams",
    "RecoveryTargets",
    "classify",
    "fall_direction",
    "quintic",
]
