"""Walking bench: scenarios through the same firmware core the graph runs, in lockstep, deterministic, scored on
ground truth.

Each scenario starts the way a user starts the robot (``menlo stand -y && menlo balance -y``): the robot boots limp on
the virtual gantry, STAND is sent at once, the balance command (a zero velocity) the tick the firmware reports armed
(0.5 s into the 2 s STAND ramp, when the SDK's ``stand`` returns), which hands the joints to the locomotion backend
and takes the gantry hook off; the robot then balances for ``settle_time`` before the scenario's clock starts.
Commands are velocity packets re-sent every 0.1 s as the SDK's keepalive does, through the firmware (its clamps,
gains, target clamp, watchdogs and fall latch all apply; only the arbiter between command sources is left out) via
:class:`vasimov_tools.closed_loop.ClosedLoop` -- the single-process loop the lockstep graph is proven bit-identical
to. The backend sees only what the robot's policy sees; the plant's ground truth is read only to score the run.

Scores (all along/relative to the pose at the moment the scenario starts):

* ``fell``: first time the pelvis is below ``min_pelvis_height`` (above the ground under it: scenes have slopes and
  steps) or projected-gravity z is above ``max_gravity_z``
  (the firmware's own fall latch, at a 60 deg tilt, comes later and is what the SDK sees);
* ``along`` / ``lateral``: pelvis displacement along / across the start heading; ``drift``: horizontal norm;
* ``heading``: signed heading change (unwrapped);
* ``tracking_error`` / ``yaw_tracking_error``, ``step_half_time``, ``stop_time``: how the body follows the command
  (:mod:`vasimov_tools.tracking`: RMS over 1 s blocks in the heading frame; time to half of a commanded change; time
  to a stop after a zero command);
* ``sole_spin_max`` / ``sole_spin_p95``: how far (rad) a loaded stance sole turned in yaw over one single support
  (:mod:`vasimov_tools.sole_grip`): the first sign of the spins that end in a fall, visible in every minute of walking;
* compute time of the backend's ``step``, p50/p99, both wall-clock and the calling thread's CPU time. The
  compute criterion is judged on CPU time: on a shared machine the wall-clock tail measures preemption by other
  processes (tens of ms), not the controller; both are reported.

The scenarios are the scenario files of the ``standard``, ``goals`` and ``viewer`` suites (format and reader:
``docs/scenarios.md``, :mod:`vasimov_tools.scenarios`); ``vasimov bench run`` runs any of them in parallel processes.
``python -m vasimov_tools.walk_bench [names...]`` prints a table and one JSON line per scenario.

Why one file past 400 lines: the scenario model, the lockstep runner and its scoring rules, shared by `vasimov bench
walk|run`, the graph bench and the tests; one place for the rules that decide a pass.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from vasimov.commands import DampCommand, StandCommand, VelocityCommand
from vasimov.control_rate import CONTROL_DT
from vasimov.frames import projected_gravity
from vasimov.realism import RealismError, parse_realism
from vasimov.scenes import Scene, SceneError, custom_friction, parse_scene
from vasimov_edge.firmware import FirmwareParams
from vasimov_edge.policy.command_notice import walks_less
from vasimov_edge.policy.interface import PolicyBackend
from vasimov_plant.physics import PlantCore
from vasimov_tools import tracking
from vasimov_tools.closed_loop import ClosedLoop
from vasimov_tools.sole_grip import SoleSpinMeter

SETTLE_TIME = 1.0  # s of balancing (zero command) after the backend takes over, before the scenario's clock starts
KEEPALIVE_TICKS = 5  # the SDK re-sends a held velocity every 0.1 s (menlo.asimov KEEPALIVE_HZ = 10)
ARM_TIMEOUT = 5.0  # s of simulated time STAND may take to arm before the run is declared broken
PUSH_BODY = "pelvis_link"
FALL_MIN_PELVIS_HEIGHT = 0.45  # m: the bench's fall rule unless a scenario sets its own
FALL_MAX_GRAVITY_Z = -0.8  # projected-gravity z above this (tilt beyond 36.9 deg) is a fall
ENVELOPE = (0.4, 0.4, 0.8)  # |vx|, |vy| (m/s), |vyaw| (rad/s): the SDK's command limits

Command = tuple[float, float, float, float]  # (t, vx, vy, vyaw), held until the next entry


@dataclass(frozen=True)
class Push:
    """A force (N, world frame) on ``body`` from ``t`` (s after the backend takes over) for ``duration`` s."""

    t: float
    force: tuple[float, float, float]
    duration: float = 0.15
    body: str = PUSH_BODY


@dataclass(frozen=True)
class Criteria:
    """Pass conditions; ``None`` means not checked. Falling always fails."""

    min_along: float | None = None  # m, signed: negative for backward walking means "at least this far back"
    max_abs_lateral: float | None = None
    min_abs_lateral: float | None = None  # strafing: at least this far sideways, in the commanded direction
    lateral_sign: float = 0.0
    max_abs_heading: float | None = None
    min_heading: float | None = None  # rad, signed like the turn command
    max_drift: float | None = None
    max_compute_p99: float | None = 2e-3  # s of thread CPU time per tick
    max_tracking_error: float | None = None  # m/s, RMS over 1 s blocks of |measured - commanded| planar velocity
    max_step_half_time: float | None = None  # s: the slowest response to a change of command (vasimov_tools.tracking)
    max_stop_time: float | None = None  # s: the slowest stop after a zero command
    # the opt-in recovery chain (scenario ``recovery: true``; docs/recovery.md)
    upright_at_end: bool | None = None  # true: the robot must stand (upright, chain idle) at the end
    max_recovery_s: float | None = None  # s: the slowest recovery (fall or lying start -> upright)
    min_falls: int | None = None  # at least this many falls happened (a knock-down scenario that knocked down)


@dataclass(frozen=True)
class Scenario:
    name: str
    duration: float
    commands: tuple[Command, ...] = ((0.0, 0.0, 0.0, 0.0),)
    pushes: tuple[Push, ...] = ()
    criteria: Criteria = field(default_factory=Criteria)
    backend_options: tuple[tuple[str, object], ...] = ()  # keyword overrides for the backend factory
    # fall criterion overrides (None: run_scenario's defaults); Menlo's viewer bench uses 0.35 m and 78.5 deg
    min_pelvis_height: float | None = None
    max_gravity_z: float | None = None
    note: str = ""
    seed: int = 0  # the plant's seed (ClosedLoop.create)
    boot: str = "balance"  # balance: stand, balance when armed, settle; stand: stand only; limp: nothing sent
    settle_time: float | None = None  # s between boot and the scenario's clock (None: run_scenario's)
    modes: tuple[tuple[float, str], ...] = ()  # (t, "stand"|"damp"): sent once; no velocity until the next entry
    scene: str = "flat"  # vasimov.scenes syntax NAME[+FRICTION]; seeded layouts use ``seed``
    friction: float | None = None  # a floor friction coefficient overriding the scene's (None: the scene's own)
    realism: str = "none"  # vasimov.realism syntax PROFILE[,KEY=VALUE...]; drawn from ``seed``
    recovery: bool = False  # the firmware's opt-in recovery chain: a fall is not the end of the run

    def build_scene(self) -> Scene:
        """The scene this scenario runs in (a SceneError names what is wrong)."""
        scene = parse_scene(self.scene, seed=self.seed)
        return scene if self.friction is None else replace(scene, friction=custom_friction(self.friction))

    def command_at(self, t: float) -> np.ndarray:
        cmd = self.commands[0][1:]
        for entry in self.commands:
            if entry[0] <= t + 1e-9:
                cmd = entry[1:]
        return np.array(cmd, dtype=np.float64)

    def mode_at(self, t: float) -> str | None:
        """The mode command ("stand"/"damp") in force at ``t``, or None while a velocity entry is the latest."""
        latest_v = max((c[0] for c in self.commands if c[0] <= t + 1e-9), default=-math.inf)
        latest_m = max(((m[0], m[1]) for m in self.modes if m[0] <= t + 1e-9), default=None)
        return latest_m[1] if latest_m is not None and latest_m[0] > latest_v else None


@dataclass
class Result:
    name: str
    passed: bool
    fell_at: float | None
    along: float
    lateral: float
    drift: float
    heading: float
    min_pelvis_height: float
    max_gravity_z: float
    compute_p50_ms: float  # wall clock
    compute_p99_ms: float
    cpu_p50_ms: float  # thread CPU time (what the criterion checks)
    cpu_p99_ms: float
    failures: list[str]
    sim_seconds: float
    wall_seconds: float
    tracking_error: float = 0.0  # m/s: RMS over 1 s blocks of |mean measured - mean commanded| planar velocity
    yaw_tracking_error: float = 0.0  # rad/s: the same for the yaw rate
    # rad a loaded stance sole turned over one single support, largest and 95th percentile (vasimov_tools.sole_grip;
    # None: not measured, or no single support)
    sole_spin_max: float | None = None
    sole_spin_p95: float | None = None
    # s, vasimov_tools.tracking: the slowest time to half of a commanded change and the slowest stop after a zero
    # command (None: the scenario has no such change); with how many changes/stops were scored
    step_half_time: float | None = None
    step_count: int = 0
    stop_time: float | None = None
    stop_count: int = 0
    # pushes the robot stood through (not fallen by the next push's start or the scenario's end): the viewer bench's
    # push tiers ("reasonable" at 2 s, "beyond" at 8 s) survived, 0-2
    pushes_survived: int = 0
    # the recovery chain (scenario ``recovery: true``): falls (a lying boot counts as one, timed from the first
    # command), chains that ended upright, seconds each took (fall or first command -> upright), and whether the
    # robot stood at the end (upright, the chain idle; None without recovery)
    falls: int = 0
    recoveries: int = 0
    recovery_s: list[float] = field(default_factory=list)
    upright_at_end: bool | None = None
    # scenario times (s) of each fall (a lying boot: 0) and of each return upright: the report's time line
    fall_times: list[float] = field(default_factory=list)
    recovery_times: list[float] = field(default_factory=list)
    # share of the backend's driving ticks on which it walked a smaller command than it was given (its own envelope,
    # vasimov_edge.policy.command_notice; None: the backend does not report what it walks, e.g. an ONNX policy)
    command_limited_share: float | None = None


def random_commands(seed: int, n: int = 20, duration: float = 60.0) -> tuple[Command, ...]:
    """``n`` piecewise-constant commands, uniform within the SDK envelope, evenly spaced over ``duration``."""
    rng = np.random.default_rng(seed)
    dt = duration / n
    out = []
    for k in range(n):
        v = rng.uniform(-1.0, 1.0, size=3) * np.array(ENVELOPE)
        out.append((k * dt, float(v[0]), float(v[1]), float(v[2])))
    return tuple(out)


def axis_commands(seed: int, n: int = 20, duration: float = 120.0, idle: float = 0.2) -> tuple[Command, ...]:
    """``n`` piecewise-constant one-axis commands evenly spaced over ``duration``: each is zero with probability
    ``idle``, else one axis (drawn evenly) at 0.5-1.0 of its SDK limit, either sign. What an SDK program mostly sends
    (walk, strafe, turn, stop, one after another), and the changes between gaits it stresses are where the walker
    falls; ``random_commands`` mixes all three axes in every command instead."""
    rng = np.random.default_rng(seed)
    dt = duration / n
    out = []
    for k in range(n):
        v = [0.0, 0.0, 0.0]
        if rng.uniform() >= idle:
            axis = int(rng.integers(3))
            v[axis] = float(rng.choice([-1, 1]) * rng.uniform(0.5, 1.0) * ENVELOPE[axis])
        out.append((k * dt, v[0], v[1], v[2]))
    return tuple(out)


def standard_scenarios() -> dict[str, Scenario]:
    """The issue's acceptance scenarios (the ``standard`` suite) and the ``goals`` suite (``goal_*``, beyond the
    requirement): the scenario files in ``vasimov_tools/suites/`` (vasimov_tools.scenarios reads them)."""
    from vasimov_tools.scenarios import load_suite

    return {**load_suite("standard"), **load_suite("goals")}


VIEWER_SETS = ("locomotion", "distance", "push_standing", "push_walking", "push_sustained", "friction", "terrain")


def viewer_scenarios() -> dict[str, Scenario]:
    """Menlo's viewer bench (``benchmarks_in_viewer`` in the fact sheet), the runnable part of the ``viewer`` suite
    (vasimov_tools.viewer_suite generates its files): its command profiles, pushes and failure criterion (root below
    0.35 m or torso tilt above 78.5 deg), reported as goals. Its commands reach 0.6-1.0 m/s, beyond the SDK
    envelope and the built-in gait (which clips them); the friction files run with their floor friction; the terrain
    courses run in the scenes that model them (``viewer_*`` in ``vasimov scenes``). Push directions are taken in the
    world frame (the files' frame is not stated)."""
    from vasimov_tools.scenarios import load_suite

    return load_suite("viewer")


def default_backend_factory(**options: object) -> PolicyBackend:
    """The built-in controller, with a scenario's overrides applied to its config."""
    from vasimov_edge.policy.builtin import BuiltinController, ControllerConfig

    return BuiltinController(ControllerConfig(**options))  # type: ignore[arg-type]


class VelocityKeepalive:
    """Sends a velocity the way the SDK's ``set_velocity(hold=True)`` does: at once when it changes, then again
    every ``KEEPALIVE_TICKS`` control ticks (the firmware zeroes a velocity not refreshed within 2 s)."""

    def __init__(self, loop: ClosedLoop) -> None:
        self.loop = loop
        self._last: tuple[float, float, float] | None = None
        self._since = 0

    def send(self, vx: float, vy: float, vyaw: float) -> None:
        cmd = (float(vx), float(vy), float(vyaw))
        if cmd != self._last or self._since >= KEEPALIVE_TICKS:
            self.loop.submit(VelocityCommand(*cmd))
            self._last, self._since = cmd, 0
        self._since += 1


def stand_and_balance(loop: ClosedLoop, balance_delay: float = 0.0) -> int:
    """``menlo stand -y`` then, ``balance_delay`` s after it returns (armed), ``menlo balance -y``.

    Returns the tick on which the firmware entered MOVE. Raises ``RuntimeError`` if STAND does not arm within
    ``ARM_TIMEOUT`` or the balance command is refused (a broken firmware or backend, not a scenario result).
    """
    loop.submit(StandCommand())
    armed_at: int | None = None
    for _ in range(round((ARM_TIMEOUT + balance_delay) / CONTROL_DT) + 2):
        fw = loop.step_tick().firmware
        if armed_at is None and fw.armed:
            armed_at = loop.tick
        if armed_at is not None and loop.tick >= armed_at + round(balance_delay / CONTROL_DT):
            break
    if armed_at is None:
        raise RuntimeError(f"STAND did not arm within {ARM_TIMEOUT} s")
    loop.submit(VelocityCommand(0.0, 0.0, 0.0))
    fw = loop.step_tick().firmware
    if not fw.policy_active:
        raise RuntimeError(f"balance refused: firmware in {fw.mode.name}")
    return loop.tick - 1


def boot(loop: ClosedLoop, state: str, settle_time: float) -> VelocityKeepalive:
    """Bring the robot from power-on to the scenario's start: ``balance`` (stand, balance when armed, then
    ``settle_time`` of zero velocity), ``stand`` (stand, then ``settle_time`` once armed) or ``limp`` (nothing sent,
    ``settle_time`` on the gantry). Returns the keepalive the scenario goes on with (its cadence continues)."""
    keepalive = VelocityKeepalive(loop)
    if state in ("lying_back", "lying_front"):
        # on the floor, the firmware in DAMP; the scenario's clock starts at once with `menlo stand -y`
        from vasimov.boot_states import parse_boot
        from vasimov_plant.boot_pose import boot as boot_plant

        lying = parse_boot(state)
        boot_plant(loop.plant, lying)
        loop.firmware.restart(boot=lying)
        loop.step_tick()  # the firmware's first reading: lying (FALL_DETECTED), DAMP
        loop.submit(StandCommand())
        return keepalive
    if state == "balance":
        stand_and_balance(loop)
        for _ in range(round(settle_time / CONTROL_DT)):
            keepalive.send(0.0, 0.0, 0.0)
            loop.step_tick()
        return keepalive
    if state == "stand":
        loop.submit(StandCommand())
        for _ in range(round(ARM_TIMEOUT / CONTROL_DT) + 2):
            if loop.step_tick().firmware.armed:
                break
        else:
            raise RuntimeError(f"STAND did not arm within {ARM_TIMEOUT} s")
    elif state != "limp":
        raise ValueError(f"unknown boot state {state!r}")
    for _ in range(round(settle_time / CONTROL_DT)):
        loop.step_tick()
    return keepalive


TRACKING_BLOCK = tracking.WINDOW  # s: velocities are averaged over blocks this long (about two steps)


def _tracking_scores(measured: list[np.ndarray], commanded: list[np.ndarray]) -> dict[str, Any]:
    """The Result fields of vasimov_tools.tracking (the command before the scenario's clock is the settle's zero)."""
    if not measured:
        return {}
    m, c = np.array(measured), np.array(commanded)
    steps = tracking.step_half_times(m, c, CONTROL_DT, initial=np.zeros(3))
    stops = tracking.stop_times(m, c, CONTROL_DT, initial=np.zeros(3))
    return {"tracking_error": tracking.rms_block_error(m, c, CONTROL_DT, slice(0, 2)),
            "yaw_tracking_error": tracking.rms_block_error(m, c, CONTROL_DT, slice(2, 3)),
            "step_half_time": max(steps) if steps else None, "step_count": len(steps),
            "stop_time": max(stops) if stops else None, "stop_count": len(stops)}


def run_scenario(
    scenario: Scenario,
    backend_factory: Callable[..., PolicyBackend] = default_backend_factory,
    *,
    settle_time: float = SETTLE_TIME,
    min_pelvis_height: float = FALL_MIN_PELVIS_HEIGHT,
    max_gravity_z: float = FALL_MAX_GRAVITY_Z,
    stop_on_fall: bool = True,
    on_tick: Callable[[float, PolicyBackend, PlantCore], None] | None = None,
    trace: list[dict[str, float]] | None = None,
    trace_every: int = 5,
    scene: Scene | None = None,
) -> Result:
    """Run one scenario from boot (stand, balance, settle) to its end (or the fall) and score it, in ``scene``
    (``vasimov.scenes``; default the flat floor).

    ``trace``, when given, receives every ``trace_every``-th tick's sample (scenario time, position and heading
    relative to the start pose, commanded and measured body-frame velocity, tilt, pelvis height) for plots.
    """
    wall0 = time.perf_counter()
    backend = backend_factory(**dict(scenario.backend_options))
    loop = ClosedLoop.create(backend, seed=scenario.seed, scene=scenario.build_scene() if scene is None else scene,
                             realism=parse_realism(scenario.realism),
                             firmware_params=FirmwareParams(recovery=scenario.recovery))
    plant = loop.plant
    if abs(loop.control_period - CONTROL_DT) > 1e-9:
        raise ValueError(f"control period {loop.control_period} s is not the bench's {CONTROL_DT} s")
    keepalive = boot(loop, scenario.boot, settle_time if scenario.settle_time is None else scenario.settle_time)

    if scenario.min_pelvis_height is not None:
        min_pelvis_height = scenario.min_pelvis_height
    if scenario.max_gravity_z is not None:
        max_gravity_z = scenario.max_gravity_z
    start = plant.truth()
    p0 = start.base_pos.copy()
    yaw0 = start.base_yaw
    c0, s0 = math.cos(yaw0), math.sin(yaw0)
    yaw_prev, heading = yaw0, 0.0
    pushes = sorted(scenario.pushes, key=lambda p: p.t)
    next_push = 0
    modes = sorted(scenario.modes)
    next_mode = 0
    compute: list[float] = []
    driving = reported = limited = 0  # backend ticks, those it reported its walked command on, those it limited
    cpu: list[float] = []
    measured: list[np.ndarray] = []
    commanded: list[np.ndarray] = []
    fell_at: float | None = None
    min_h, max_gz = math.inf, -math.inf
    n_ticks = round(scenario.duration / CONTROL_DT)
    grip = SoleSpinMeter(plant)
    recov = _RecoveryMeter(scenario.boot.startswith("lying")) if scenario.recovery else None
    if recov is not None:
        stop_on_fall = False  # with recovery on, a fall is not the end of the scenario
    for k in range(n_ticks):
        t = k * CONTROL_DT
        while next_push < len(pushes) and pushes[next_push].t <= t + 1e-9:
            p = pushes[next_push]
            plant.apply_push(p.body, p.force, p.duration)
            next_push += 1
        while next_mode < len(modes) and modes[next_mode][0] <= t + 1e-9:
            loop.submit(StandCommand() if modes[next_mode][1] == "stand" else DampCommand())
            keepalive = VelocityKeepalive(loop)  # the next velocity is sent at once
            next_mode += 1
        mode = scenario.mode_at(t) if modes else None
        cmd = scenario.command_at(t)
        if mode is None and not (scenario.boot.startswith("lying") and recov is not None and recov.down):
            keepalive.send(*cmd)  # (lying: the velocity profile starts once the robot stands)
        rec = loop.step_tick()
        if recov is not None:
            recov.update(t + CONTROL_DT, rec.firmware)
        compute.append(rec.policy_seconds)
        cpu.append(rec.policy_cpu_seconds)
        if rec.active and rec.command is not None:
            driving += 1
            reported += rec.policy.command_used is not None
            limited += walks_less(rec.command, rec.policy.command_used)
        tr = plant.truth()
        grip.update(tr)
        gz = float(projected_gravity(tr.base_quat)[2])
        height = float(tr.base_pos[2]) - plant.ground_height(float(tr.base_pos[0]), float(tr.base_pos[1]))
        min_h = min(min_h, height)
        max_gz = max(max_gz, gz)
        heading += (tr.base_yaw - yaw_prev + math.pi) % (2.0 * math.pi) - math.pi
        yaw_prev = tr.base_yaw
        cy, sy = math.cos(tr.base_yaw), math.sin(tr.base_yaw)
        v = tr.base_lin_vel
        meas = np.array([cy * v[0] + sy * v[1], -sy * v[0] + cy * v[1], float(tr.base_ang_vel[2])])
        want = cmd if mode is None else np.zeros(3)
        measured.append(meas)
        commanded.append(want)
        if trace is not None and k % trace_every == 0:
            d = tr.base_pos - p0
            trace.append({
                "t": round(t, 6), "x": float(c0 * d[0] + s0 * d[1]), "y": float(-s0 * d[0] + c0 * d[1]),
                "heading": float(heading), "cmd_vx": float(want[0]), "cmd_vy": float(want[1]),
                "cmd_wz": float(want[2]), "vx": float(meas[0]), "vy": float(meas[1]), "wz": float(meas[2]),
                "tilt_deg": float(math.degrees(math.acos(max(-1.0, min(1.0, -gz))))), "z": float(tr.base_pos[2]),
            })
        if on_tick is not None:
            on_tick(t, backend, plant)
        if fell_at is None and (height < min_pelvis_height or gz > max_gravity_z):
            fell_at = t + CONTROL_DT
            if stop_on_fall:
                break
    end = plant.truth()
    d = end.base_pos - p0
    along = float(c0 * d[0] + s0 * d[1])
    lateral = float(-s0 * d[0] + c0 * d[1])
    comp = np.array(compute) if compute else np.zeros(1)
    cpu_t = np.array(cpu) if cpu else np.zeros(1)
    res = Result(
        name=scenario.name,
        passed=False,
        fell_at=fell_at,
        along=along,
        lateral=lateral,
        drift=float(math.hypot(d[0], d[1])),
        heading=float(heading),
        min_pelvis_height=min_h,
        max_gravity_z=max_gz,
        compute_p50_ms=float(np.percentile(comp, 50) * 1e3),
        compute_p99_ms=float(np.percentile(comp, 99) * 1e3),
        cpu_p50_ms=float(np.percentile(cpu_t, 50) * 1e3),
        cpu_p99_ms=float(np.percentile(cpu_t, 99) * 1e3),
        failures=[],
        sim_seconds=len(compute) * CONTROL_DT,
        wall_seconds=time.perf_counter() - wall0,
        **_tracking_scores(measured, commanded),
    )
    res.sole_spin_max, res.sole_spin_p95 = grip.summary()
    res.pushes_survived = pushes_survived([p.t for p in scenario.pushes], fell_at)
    res.command_limited_share = limited / driving if reported and driving else None
    if recov is not None:
        last = loop.last_fw
        gz_end = float(projected_gravity(end.base_quat)[2])
        res.falls, res.recoveries, res.recovery_s = recov.falls, recov.recoveries, list(recov.times)
        res.fall_times, res.recovery_times = list(recov.fall_at), list(recov.upright_at)
        res.upright_at_end = bool(last is not None and last.recovery_phase == "" and not last.fault_latched
                                  and gz_end < FALL_MAX_GRAVITY_Z)
    res.failures = check(scenario.criteria, res)
    res.passed = not res.failures
    return res


def pushes_survived(push_times: Sequence[float], fell_at: float | None) -> int:
    """How many pushes (start times, any order) the robot stood through: each push up to the next one's start, the
    last to the end of the run. A fall during or after push k (before push k+1 starts) leaves k pushes survived."""
    times = sorted(push_times)
    if fell_at is None:
        return len(times)
    return sum(1 for k in range(len(times)) if k + 1 < len(times) and fell_at > times[k + 1])


class _RecoveryMeter:
    """Counts the recovery chain's falls and recoveries from the firmware's counters, and times each one."""

    def __init__(self, lying: bool) -> None:
        self.falls = 1 if lying else 0
        self.recoveries = 0
        self.times: list[float] = []
        self.fall_at: list[float] = [0.0] if lying else []
        self.upright_at: list[float] = []
        self._since: float | None = 0.0 if lying else None
        self._seen_falls = 0

    @property
    def down(self) -> bool:
        return self._since is not None

    def update(self, t: float, fw: Any) -> None:
        c = fw.counters
        if c["recovery_falls"] > self._seen_falls:
            self.falls += c["recovery_falls"] - self._seen_falls
            self._seen_falls = c["recovery_falls"]
            self.fall_at.append(round(t, 3))
            self._since = t if self._since is None else self._since
        if c["recoveries"] > self.recoveries:
            self.recoveries = c["recoveries"]
            self.upright_at.append(round(t, 3))
            if self._since is not None:
                self.times.append(round(t - self._since, 3))
            self._since = None


def check(c: Criteria, r: Result) -> list[str]:
    """Names of the criteria a result misses (empty: passed). With recovery (``r.upright_at_end`` not None) a fall
    that got up is no failure; one still down at the end is."""
    f: list[str] = []
    if r.upright_at_end is not None:
        if r.falls > r.recoveries:
            f.append(f"{r.falls - r.recoveries} of {r.falls} falls not recovered")
    elif r.fell_at is not None:
        f.append(f"fell at {r.fell_at:.2f}s")
    if c.upright_at_end and not r.upright_at_end:
        f.append("not upright at the end")
    if c.max_recovery_s is not None and r.recovery_s and max(r.recovery_s) > c.max_recovery_s:
        f.append(f"recovery {max(r.recovery_s):.2f} > {c.max_recovery_s:.2f} s")
    if c.min_falls is not None and r.falls < c.min_falls:
        f.append(f"falls {r.falls} < {c.min_falls}")
    if c.min_along is not None:
        if c.min_along >= 0.0 and r.along < c.min_along:
            f.append(f"along {r.along:.2f} < {c.min_along:.2f} m")
        if c.min_along < 0.0 and r.along > c.min_along:
            f.append(f"along {r.along:.2f} > {c.min_along:.2f} m")
    if c.max_abs_lateral is not None and abs(r.lateral) > c.max_abs_lateral:
        f.append(f"|lateral| {abs(r.lateral):.2f} > {c.max_abs_lateral:.2f} m")
    if c.min_abs_lateral is not None and c.lateral_sign * r.lateral < c.min_abs_lateral:
        f.append(f"lateral {r.lateral:.2f} m, need {c.lateral_sign * c.min_abs_lateral:+.2f}")
    if c.max_abs_heading is not None and abs(r.heading) > c.max_abs_heading:
        f.append(f"|heading| {abs(r.heading):.2f} > {c.max_abs_heading:.2f} rad")
    if c.min_heading is not None and r.heading < c.min_heading:
        f.append(f"heading {r.heading:.2f} < {c.min_heading:.2f} rad")
    if c.max_drift is not None and r.drift > c.max_drift:
        f.append(f"drift {r.drift:.3f} > {c.max_drift:.3f} m")
    if c.max_tracking_error is not None and r.tracking_error > c.max_tracking_error:
        why = ""
        if r.command_limited_share:  # say when the walker's own envelope, not its tracking, is the cause
            why = f" (the walker walked a smaller command on {100.0 * r.command_limited_share:.0f} % of its ticks)"
        f.append(f"tracking error {r.tracking_error:.3f} > {c.max_tracking_error:.3f} m/s{why}")
    if c.max_step_half_time is not None and r.step_half_time is not None and r.step_half_time > c.max_step_half_time:
        f.append(f"step response (half) {r.step_half_time:.2f} > {c.max_step_half_time:.2f} s")
    if c.max_stop_time is not None and r.stop_time is not None and r.stop_time > c.max_stop_time:
        f.append(f"stop time {r.stop_time:.2f} > {c.max_stop_time:.2f} s")
    if c.max_compute_p99 is not None and r.cpu_p99_ms > c.max_compute_p99 * 1e3:
        f.append(f"compute (CPU) p99 {r.cpu_p99_ms:.2f} > {c.max_compute_p99 * 1e3:.2f} ms")
    return f


def format_table(results: Sequence[Result]) -> str:
    w = max([22, *(len(r.name) for r in results)])
    head = (f"{'scenario':<{w}} {'ok':<4} {'fell':>6} {'along':>7} {'lat':>7} {'drift':>6} {'head':>6} "
            f"{'minz':>5} {'spin':>5} {'cpu50':>6} {'cpu99':>6} {'wall99':>7}  notes")
    lines = [head, "-" * len(head)]
    for r in results:
        fell = f"{r.fell_at:.2f}" if r.fell_at is not None else "-"
        spin = f"{r.sole_spin_max:.3f}" if r.sole_spin_max is not None else "-"
        lines.append(
            f"{r.name:<{w}} {'yes' if r.passed else 'NO':<4} {fell:>6} {r.along:7.2f} {r.lateral:7.2f} {r.drift:6.2f} "
            f"{r.heading:6.2f} {r.min_pelvis_height:5.2f} {spin:>5} {r.cpu_p50_ms:6.2f} {r.cpu_p99_ms:6.2f} "
            f"{r.compute_p99_ms:7.2f}  "
            f"{'; '.join(r.failures)}"
        )
    return "\n".join(lines)


def scene_override(text: str, scene: Scene) -> Scene | None:
    """The scene ``--scene`` imposes on every scenario, or None (no ``--scene``: each file's own scene and friction,
    so the viewer's terrain and friction files run where `vasimov bench run` runs them)."""
    return scene if text.strip() else None


def main(argv: Sequence[str] | None = None) -> int:
    standard = standard_scenarios()
    viewer = viewer_scenarios()
    scenarios = {**standard, **viewer}
    ap = argparse.ArgumentParser(prog="vasimov bench walk", description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help=f"scenarios to run (default: the --set): {', '.join(scenarios)}")
    ap.add_argument("--set", dest="which", choices=("standard", "viewer", "all"), default="standard",
                    help="scenarios run when none are named: the issue's (standard, default), Menlo's viewer bench "
                         "as goals (viewer), or both")
    ap.add_argument("--policy", default="builtin",
                    help="backend to score: builtin (default), hold, a local .onnx file or hf://REPO@REVISION; "
                         "the same scenarios then compare the official checkpoint with the built-in controller")
    ap.add_argument("--graph", action="store_true",
                    help="drive the scenarios through the full node graph with the real menlo-sdk over UDP (one "
                         "fresh `vasimov up` per scenario, lockstep unless --realtime); vasimov_tools.walk_bench_graph")
    ap.add_argument("--realtime", action="store_true", help="with --graph: run the graph in real time")
    ap.add_argument("--scene", default="", help="scene to walk every scenario in (vasimov scenes), NAME[+FRICTION]; "
                    "default: each scenario's own")
    ap.add_argument("--seed", type=int, default=0, help="seed of the scene's layout (obstacles, rough)")
    ap.add_argument("--realism", default="", help="sensor and actuator realism (vasimov.realism): none (default), "
                    "typical, training, PROFILE,KEY=VALUE...; drawn from each scenario's seed")
    args = ap.parse_args(argv)
    try:
        scene = parse_scene(args.scene, seed=args.seed)
        if args.realism:
            parse_realism(args.realism)
    except (SceneError, RealismError) as exc:
        ap.error(str(exc))
    if args.graph and args.realism:
        ap.error("--realism runs in the single-process bench only (run the graph with vasimov up --realism)")
    if args.graph and not scene.is_default:
        ap.error("--scene runs in the single-process bench only (run the graph with vasimov up --scene)")
    if args.realtime and not args.graph:
        ap.error("--realtime needs --graph (the single-process bench is lockstep only)")
    factory = default_backend_factory
    names = args.names or list({"standard": standard, "viewer": viewer, "all": scenarios}[args.which])
    unknown = [n for n in names if n not in scenarios]
    if unknown:
        ap.error(f"unknown scenario(s) {unknown}; valid: {', '.join(scenarios)}")
    if args.graph:
        from vasimov_tools import walk_bench_graph

        return walk_bench_graph.run([scenarios[n] for n in names], realtime=args.realtime,
                                    policy=None if args.policy == "builtin" else args.policy)
    if args.policy != "builtin":
        from vasimov_edge.policy.registry import make_backend

        backend = make_backend(args.policy)  # resolve (and verify) once, fail before any scenario runs

        def factory(**_options: object) -> PolicyBackend:  # scenario options tune the built-in controller only
            backend.reset()
            return backend
    results = []
    for n in names:
        scenario = replace(scenarios[n], realism=args.realism) if args.realism else scenarios[n]
        r = run_scenario(scenario, factory, scene=scene_override(args.scene, scene))
        results.append(r)
        print(json.dumps(asdict(r)), flush=True)
    print(format_table(results))
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
