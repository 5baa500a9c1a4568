"""The firmware core against its sources: transitions, drops, watchdogs, arming (checked against the SDK's own mirror),
the gantry, the fault latch, trajectory gains, the policy path and the thermal alerts. Simulated time only."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from asimov_protocol._alert_catalog import ALERT_CATALOG_DATA
from asimov_protocol.v1 import asimov_common_pb2
from hypothesis import given, settings
from hypothesis import strategies as st
from menlo.asimov import _preflight as sdk_preflight
from menlo.asimov._state import Mode as SdkMode
from menlo.asimov._state import State as SdkState
from menlo.asimov.robot import Robot as SdkRobot

from vasimov.alerts import ALERT_FALL_DETECTED, ALERT_MOTOR_OVERTEMP, ALERT_MOTOR_TEMP_HIGH, alert_severity
from vasimov.commands import (
    CommandSource,
    DampCommand,
    Rejection,
    StandCommand,
    TrajectoryCommand,
    VelocityCommand,
)
from vasimov.joints import (
    ANKLE_PAIRS,
    DEFAULT_POS,
    NON_POLICY_JOINTS,
    NUM_JOINTS,
    NUM_POLICY_JOINTS,
    POLICY_KD,
    POLICY_KP,
    POLICY_TO_JOINT,
    STAND_KD,
    STAND_KP,
    joint_index,
)
from vasimov.motor_space import joint_to_state_torque
from vasimov_bridge.sdk_wire import StateFrame, decode_state, encode_state
from vasimov_edge.firmware import (
    COUNTERS,
    Firmware,
    FirmwareInputs,
    FirmwareOutput,
    FirmwareParams,
    Mode,
    MoveSubmode,
)
from vasimov_edge.thermal import ThermalModel, ThermalParams

CATALOG_SEVERITY = {e["alert_id"]: e["severity_value"] for e in ALERT_CATALOG_DATA}

DT = 0.02  # 50 Hz control tick
UPRIGHT = (0.0, 0.0, -1.0)
LEANING = (0.0, 0.6, -0.8)  # tilted ~37 deg: not armable (z >= -0.87) but not a fall (z < -0.5)
FALLEN = (0.0, 0.95, -0.31)  # z > -0.5


class Rig:
    """A firmware with a 50 Hz tick clock and a settable sensor reading."""

    def __init__(self, params: FirmwareParams | None = None, dt: float = DT, **kw: object) -> None:
        self.fw = Firmware(params or FirmwareParams(**kw))  # type: ignore[arg-type]
        self.dt = dt
        self.k = 0
        self.gravity: tuple[float, float, float] = UPRIGHT
        self.q = DEFAULT_POS.copy()
        self.tau = np.zeros(NUM_JOINTS)
        self.policy: dict[str, object] = {}
        self.out: FirmwareOutput | None = None

    @property
    def t(self) -> float:
        return self.k * self.dt

    def inputs(self) -> FirmwareInputs:
        return FirmwareInputs(
            q=self.q, qd=np.zeros(NUM_JOINTS), projected_gravity=self.gravity, tau=self.tau, **self.policy
        )

    def tick(self, n: int = 1) -> FirmwareOutput:
        for _ in range(n):
            self.out = self.fw.tick(self.t, self.inputs())
            self.k += 1
        assert self.out is not None
        return self.out

    def run_until(self, t: float) -> FirmwareOutput:
        """Tick up to and including the tick at time ``t``."""
        return self.tick(round(t / self.dt) - self.k + 1)

    def submit(self, cmd: object) -> Rejection | None:
        """A command arriving just before the next tick (at that tick's time)."""
        return self.fw.submit(cmd, self.t)  # type: ignore[arg-type]

    def stand_armed(self) -> FirmwareOutput:
        self.tick()
        assert self.submit(StandCommand()) is None
        out = self.tick(round(0.5 / self.dt) + 1)
        assert out.mode is Mode.STAND and out.armed
        return out

    def release_gantry(self) -> FirmwareOutput:
        """Stand, arm and let the walking policy take over (which takes the hook off), then settle for 1 s."""
        if self.out is None or self.fw.mode is not Mode.STAND:
            self.stand_armed()
        assert self.submit(VelocityCommand(0.0, 0.0, 0.0)) is None
        out = self.run_until(self.t + 1.0)
        assert not out.gantry_engaged
        return out


def vel(vx: float = 0.0, vy: float = 0.0, vyaw: float = 0.0) -> VelocityCommand:
    return VelocityCommand(vx, vy, vyaw)


def traj(positions=None, kp=None, kd=None) -> TrajectoryCommand:
    pos = tuple(DEFAULT_POS) if positions is None else tuple(positions)
    return TrajectoryCommand(pos, None if kp is None else tuple(kp), None if kd is None else tuple(kd))


def alert_ids(out: FirmwareOutput) -> set[int]:
    return {a.id for a in out.alerts}


# ── enums and boot ──────────────────────────────────────────────────────────────────────────────────────────────
def test_mode_values_are_the_wire_values() -> None:
    cm = asimov_common_pb2.ControlMode
    assert Mode.DAMP == cm.Value("CONTROL_MODE_DAMP") == SdkMode.DAMP
    assert Mode.STAND == cm.Value("CONTROL_MODE_STAND") == SdkMode.STAND
    assert Mode.MOVE == cm.Value("CONTROL_MODE_MOVE") == SdkMode.MOVE
    assert Mode.FAULT_DAMP == cm.Value("CONTROL_MODE_FAULT_DAMP") == SdkMode.FAULT_DAMP
    assert MoveSubmode.NONE == "" and MoveSubmode.POLICY == "POLICY" and MoveSubmode.TRAJECTORY == "TRAJECTORY"


def test_params_follow_the_sdk_constants() -> None:
    p = FirmwareParams()
    assert p.arm_gravity_z == sdk_preflight.ARM_GRAVITY_Z
    assert p.arm_hold_s == sdk_preflight.ARM_HOLD_S
    assert p.arm_max_gap_s == sdk_preflight.ARM_MAX_GAP_S
    from menlo.asimov._command import Limits

    lim = Limits()
    assert p.velocity_caps == (lim.vx, lim.vy, lim.vyaw)


def test_boot_state() -> None:
    out = Rig().tick()
    assert out.mode is Mode.DAMP and out.move_submode is MoveSubmode.NONE
    assert out.gantry_engaged and not out.armed and not out.fault_latched
    assert out.error_flags == 0 and out.alerts == ()
    np.testing.assert_array_equal(out.kp, np.zeros(NUM_JOINTS))
    np.testing.assert_array_equal(out.kd, np.full(NUM_JOINTS, 2.0))
    np.testing.assert_array_equal(out.velocity_command, np.zeros(3))
    assert set(COUNTERS) <= set(out.counters) and not any(out.counters.values())
    assert out.motor_temperature is not None
    np.testing.assert_allclose(out.motor_temperature, 25.0)
    assert out.timestamp_us == 0 and not out.policy_active


@pytest.mark.parametrize(
    "bad",
    [
        {"stand_ramp_s": -1.0},
        {"trajectory_timeout_s": math.nan},
        {"velocity_caps": (0.4, 0.4)},
        {"arm_gravity_z": -2.0},
        {"overtemp_clear_c": 90.0},
    ],
)
def test_bad_params_are_refused_at_construction(bad: dict) -> None:
    with pytest.raises(ValueError):
        FirmwareParams(**bad)


# ── DAMP and STAND ──────────────────────────────────────────────────────────────────────────────────────────────
def test_damp_gains_and_damp_from_every_mode() -> None:
    rig = Rig(damp_kd=3.5)
    rig.stand_armed()
    assert rig.submit(vel(0.1)) is None
    assert rig.tick().mode is Mode.MOVE
    assert rig.submit(DampCommand()) is None
    out = rig.tick()
    assert out.mode is Mode.DAMP and not out.armed and not out.policy_active
    np.testing.assert_array_equal(out.kp, 0.0)
    np.testing.assert_array_equal(out.kd, 3.5)
    np.testing.assert_array_equal(out.torque_ff, 0.0)
    np.testing.assert_array_equal(out.velocity_command, 0.0)


def test_stand_ramps_linearly_from_the_measured_pose() -> None:
    rig = Rig()
    rig.q = np.zeros(NUM_JOINTS)  # hanging limp on the gantry
    rig.tick(5)
    t0 = rig.t
    assert rig.submit(StandCommand()) is None
    out = rig.tick()
    assert out.mode is Mode.STAND and not out.stand_ramp_done
    np.testing.assert_array_equal(out.kp, STAND_KP)
    np.testing.assert_array_equal(out.kd, STAND_KD)
    np.testing.assert_allclose(out.position, np.zeros(NUM_JOINTS))  # s = 0 at the command's tick
    out = rig.run_until(t0 + 1.0)
    np.testing.assert_allclose(out.position, 0.5 * DEFAULT_POS, atol=1e-9)
    out = rig.run_until(t0 + 1.5)
    np.testing.assert_allclose(out.position, 0.75 * DEFAULT_POS, atol=1e-9)
    out = rig.run_until(t0 + 2.0)
    assert out.stand_ramp_done
    np.testing.assert_allclose(out.position, DEFAULT_POS, atol=1e-12)
    rig.q = DEFAULT_POS + 0.1  # the hold does not follow the measurement
    out = rig.tick(10)
    np.testing.assert_allclose(out.position, DEFAULT_POS, atol=1e-12)


def test_stand_before_any_reading_ramps_from_the_first_one() -> None:
    rig = Rig()
    rig.q = np.full(NUM_JOINTS, 0.01)
    assert rig.fw.submit(StandCommand(), 0.0) is None
    out = rig.tick()
    np.testing.assert_allclose(out.position, rig.q)


def test_stand_while_standing_changes_nothing() -> None:
    rig = Rig()
    rig.stand_armed()
    before = rig.out
    assert rig.submit(StandCommand()) is None
    out = rig.tick()
    assert out.armed and out.mode is Mode.STAND
    np.testing.assert_allclose(out.position, before.position)
    assert out.counters["stand_while_standing"] == 1


def test_move_to_stand_ramps_from_current_pose_and_keeps_armed() -> None:
    rig = Rig()
    rig.stand_armed()
    target = DEFAULT_POS.copy()
    target[joint_index("left_elbow_joint")] = 1.2
    assert rig.submit(traj(target)) is None
    rig.tick(10)
    rig.q = target.copy()  # the plant followed
    rig.tick()
    t0 = rig.t
    assert rig.submit(StandCommand()) is None
    out = rig.tick()
    assert out.mode is Mode.STAND and out.armed
    np.testing.assert_allclose(out.position, target)
    out = rig.run_until(t0 + 1.0)
    np.testing.assert_allclose(out.position, 0.5 * (target + DEFAULT_POS), atol=1e-9)
    # still armed: a velocity goes straight back to MOVE
    assert rig.submit(vel()) is None
    assert rig.tick().mode is Mode.MOVE


# ── gantry ──────────────────────────────────────────────────────────────────────────────────────────────────────
def test_gantry_lowers_from_stand_and_stays_through_stand_and_damp() -> None:
    rig = Rig()
    out = rig.tick(3)
    assert out.gantry_engaged and not out.gantry_lowering  # boot: the limp robot hangs on the hook
    rig.submit(StandCommand())
    out = rig.tick()
    assert out.gantry_engaged and out.gantry_lowering
    out = rig.run_until(rig.t + 10.0)  # a robot left in STAND stays on the hook: nothing lets go on a timer
    assert out.mode is Mode.STAND and out.stand_ramp_done and out.gantry_engaged and out.gantry_lowering
    rig.submit(DampCommand())
    out = rig.tick()
    assert out.gantry_engaged and not out.gantry_lowering  # a DAMPed robot hangs where it is
    rig.submit(StandCommand())
    assert rig.tick().gantry_lowering
    assert out.counters["gantry_releases"] == 0


def test_gantry_comes_off_on_the_tick_the_walking_policy_takes_over() -> None:
    rig = Rig()
    rig.stand_armed()  # armed 0.5 s into the 2 s ramp, as the SDK's `stand` returns
    assert rig.fw.gantry_engaged
    assert rig.submit(vel()) is None  # `balance` mid-ramp
    out = rig.tick()
    assert out.mode is Mode.MOVE and out.policy_active
    assert not out.gantry_engaged and not out.gantry_lowering and out.counters["gantry_releases"] == 1
    rig.submit(StandCommand())  # MOVE -> STAND: the hook stays off
    rig.submit(DampCommand())
    assert not rig.tick(5).gantry_engaged  # it does not come back by itself (only restart() puts it back)
    rig.fw.restart()
    rig.k = 0
    assert rig.tick().gantry_engaged


def test_joint_control_keeps_the_gantry() -> None:
    """The vendor's move_joints example needs the robot "hanging from its gantry hook": trajectories keep it."""
    rig = Rig()
    rig.stand_armed()
    assert rig.submit(traj()) is None
    out = rig.tick(100)
    assert out.mode is Mode.MOVE and out.move_submode is MoveSubmode.TRAJECTORY and out.gantry_engaged
    assert rig.submit(vel()) is None  # a velocity hands the joints to the policy: now it comes off
    assert not rig.tick().gantry_engaged


def test_no_fall_detection_while_on_the_gantry() -> None:
    rig = Rig()
    rig.gravity = FALLEN
    out = rig.tick(200)
    assert out.mode is Mode.DAMP and not out.fault_latched and out.alerts == ()


# ── arming ──────────────────────────────────────────────────────────────────────────────────────────────────────
def test_in_real_time_a_slow_twin_arms_when_the_sdk_clock_says_so() -> None:
    """Running at half real time, 0.5 s of wall clock (the SDK's hold) is 0.25 s of firmware time: the wall clock
    completes the hold, so the `balance` the SDK sends the moment `Robot.armed` turns true is accepted."""
    fw = Firmware()
    inp = FirmwareInputs(q=DEFAULT_POS, qd=np.zeros(NUM_JOINTS), projected_gravity=UPRIGHT, tau=np.zeros(NUM_JOINTS))
    fw.tick(0.0, inp, wall=100.0)
    assert fw.submit(StandCommand(), 0.02, wall=100.04) is None
    t, wall = 0.02, 100.04
    while wall < 100.04 + 0.5 - 1e-9:
        assert not fw.tick(t, inp, wall=wall).armed
        t, wall = t + DT, wall + 2 * DT
    assert fw.submit(vel(), t, wall=wall) is None  # firmware time 0.27 s into the hold, wall 0.5 s
    assert fw.tick(t, inp, wall=wall).mode is Mode.MOVE
    lock = Firmware()  # without a wall clock (lockstep) only firmware time counts
    lock.tick(0.0, inp)
    lock.submit(StandCommand(), 0.02)
    assert lock.submit(vel(), 0.3).reason == "GATE"  # type: ignore[union-attr]


def test_arms_exactly_after_half_a_second_upright() -> None:
    rig = Rig()
    rig.tick(5)
    t0 = rig.t
    rig.submit(StandCommand())
    out = rig.run_until(t0 + 0.5 - DT)
    assert not out.armed
    assert rig.fw.submit(vel(), t0 + 0.499).reason == "GATE"  # type: ignore[union-attr]
    out = rig.tick()
    assert out.armed and out.mode is Mode.STAND and out.t == pytest.approx(t0 + 0.5)
    assert out.counters["velocity_unarmed_stand"] == 1


@pytest.mark.parametrize(("vel_at", "accepted"), [(0.609, False), (0.61, True), (0.615, True)])
def test_a_hold_completes_at_a_commands_arrival_between_ticks(vel_at: float, accepted: bool) -> None:
    """STAND at t=0.11 (between ticks): the SDK, timing from a STAND sample at 0.11 at the earliest, may call the
    robot armed at 0.61, before the 0.62 tick; the firmware must accept a MOVE request from then on."""
    rig = Rig()
    rig.run_until(0.1)
    assert rig.fw.submit(StandCommand(), 0.11) is None
    out = rig.run_until(0.6)
    assert not out.armed
    res = rig.fw.submit(vel(), vel_at)
    assert (res is None) == accepted
    assert rig.tick().mode is (Mode.MOVE if accepted else Mode.STAND)


@pytest.mark.parametrize(
    ("gravity_schedule", "armed_at"),
    [
        # (from_t, gravity) pieces after a STAND at t=0.1; expected arming time (None = not by t=3)
        ([(0.0, UPRIGHT)], 0.6),
        ([(0.0, LEANING), (1.0, UPRIGHT)], 1.5),
        ([(0.0, UPRIGHT), (0.4, LEANING), (0.5, UPRIGHT)], 1.0),
        ([(0.0, (0.0, 0.49, -0.87))], None),  # exactly -0.87 is not "below"
        ([(0.0, (0.0, 0.48, -0.871))], 0.6),
        ([(0.0, LEANING)], None),
    ],
)
def test_arming_table(gravity_schedule, armed_at) -> None:
    rig = Rig()
    rig.gravity = gravity_schedule[0][1]
    rig.tick(5)  # ticks at t = 0 .. 0.08; the STAND arrives at t = 0.1
    rig.submit(StandCommand())
    armed_time = None
    while rig.t <= 3.0 + 1e-9:
        for start, g in gravity_schedule:
            if rig.t >= start - 1e-9:
                rig.gravity = g
        t = rig.t
        if rig.tick().armed and armed_time is None:
            armed_time = t
    if armed_at is None:
        assert armed_time is None
    else:
        assert armed_time == pytest.approx(armed_at)


def test_every_mode_change_disarms_except_move_to_stand() -> None:
    rig = Rig()
    rig.stand_armed()
    rig.submit(vel())
    assert rig.tick().armed  # MOVE
    rig.submit(StandCommand())
    assert rig.tick().armed  # MOVE -> STAND keeps it
    rig.submit(DampCommand())
    assert not rig.tick().armed
    rig.submit(StandCommand())
    out = rig.tick()
    assert out.mode is Mode.STAND and not out.armed  # DAMP -> STAND must hold again


def test_a_tick_gap_restarts_the_hold() -> None:
    rig = Rig()
    rig.tick()
    rig.submit(StandCommand())
    rig.tick(10)  # 0.2 s of hold
    rig.k += round(0.3 / DT)  # the firmware saw nothing for 0.3 s (> 0.25)
    out = rig.tick(round(0.5 / DT))  # the hold restarts at the tick after the gap
    assert not out.armed
    assert rig.tick().armed


def _sdk_state(out: FirmwareOutput, gravity, received_at: float) -> SdkState:
    return SdkState(
        mode=SdkMode(int(out.mode)),
        joints=(),
        gravity=tuple(gravity),
        gyro=None,
        quat=None,
        error_flags=out.error_flags,
        alerts=(),
        sequence=0,
        fw_timestamp_us=out.timestamp_us,
        protocol_version=1,
        received_at=received_at,
    )


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("latency", [0.0, 1 / 256])
def test_the_sdk_mirror_never_calls_the_firmware_armed_early(seed: int, latency: float) -> None:
    """Drive the firmware with random commands and tilts; feed every tick's state to menlo-sdk's own
    ``Robot._track_arming``. Whenever the SDK believes the robot is armed in STAND, the firmware must be too; on a
    state stream published every tick they arm on the same tick. (A 64 Hz tick keeps every time an exact binary
    fraction, so the SDK's exact ``>= 0.5`` compare sees no rounding.)"""
    rng = np.random.default_rng(seed)
    rig = Rig(dt=1 / 64)
    sdk = SdkRobot(object())  # no transport is opened; only the arming mirror is used
    prev: SdkState | None = None
    first_sdk_arm: list[float] = []
    first_fw_arm: list[float] = []
    prev_fw_armed = prev_sdk_armed = False
    for _ in range(1500):
        r = rng.random()
        if r < 0.01:
            rig.submit(StandCommand())
        elif r < 0.013:
            rig.submit(DampCommand())
        elif r < 0.02:
            rig.submit(vel(0.1))
        if rng.random() < 0.02:
            rig.gravity = LEANING if rig.gravity == UPRIGHT else UPRIGHT
        t = rig.t
        out = rig.tick()
        if out.fault_latched:
            break
        state = _sdk_state(out, rig.gravity, t + latency)
        sdk._track_arming(prev, state, False)
        if out.mode is Mode.STAND:
            if sdk._armed:
                assert out.armed, f"SDK armed before the firmware at t={t:.2f}"
            if out.armed and not prev_fw_armed:
                first_fw_arm.append(t)
            if sdk._armed and not prev_sdk_armed:
                first_sdk_arm.append(t)
        prev, prev_fw_armed, prev_sdk_armed = state, out.armed, sdk._armed
    assert first_sdk_arm == first_fw_arm
    assert first_fw_arm, "the random walk should arm at least once"


# ── velocity ────────────────────────────────────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize(
    ("setup", "cmd", "reason", "mode_after", "counter"),
    [
        ("damp", vel(0.2), "FW_DAMPED", Mode.DAMP, "velocity_in_damp"),
        ("stand_unarmed", vel(0.2), "GATE", Mode.STAND, "velocity_unarmed_stand"),
        ("stand_armed", vel(0.2), None, Mode.MOVE, "accepted_velocity"),
        ("move", vel(0.2, -0.1, 0.3), None, Mode.MOVE, "accepted_velocity"),
        ("stand_armed", vel(math.nan), "NON_FINITE", Mode.STAND, "velocity_non_finite"),
        ("move", vel(0.0, math.inf), "NON_FINITE", Mode.MOVE, "velocity_non_finite"),
        ("latched", vel(0.2), "FAULT_DAMPED", Mode.DAMP, "velocity_fault_latched"),  # latched: reported as DAMP
        ("stand_armed", VelocityCommand("fast", 0, 0), "PARSE", Mode.STAND, "command_unparsable"),  # type: ignore[arg-type]
    ],
)
def test_velocity_table(setup: str, cmd, reason, mode_after: Mode, counter: str) -> None:
    rig = _in_state(setup)
    before = rig.out
    res = rig.submit(cmd)
    out = rig.tick()
    if reason is None:
        assert res is None
    else:
        assert isinstance(res, Rejection) and res.reason == reason
        assert res.extra["counter"] == counter
        assert out.counters["rejections_total"] == before.counters["rejections_total"] + 1
        assert out.armed == before.armed  # state unchanged
    assert out.mode is mode_after
    assert out.counters[counter] == before.counters[counter] + 1


def _in_state(name: str) -> Rig:
    rig = Rig()
    rig.tick()
    if name == "damp":
        return rig
    rig.submit(StandCommand())
    rig.tick()
    if name == "stand_unarmed":
        return rig
    rig.tick(30)
    assert rig.out.armed
    if name == "stand_armed":
        return rig
    if name == "move":
        rig.submit(vel())
        rig.tick()
        return rig
    if name == "trajectory":
        rig.submit(traj())
        rig.tick()
        return rig
    if name == "latched":
        rig.submit(vel())  # the walking policy takes over: the gantry hook comes off
        rig.run_until(rig.t + 1.0)
        rig.gravity = FALLEN
        out = rig.tick()
        assert out.fault_latched
        return rig
    raise AssertionError(name)


def test_velocity_is_clamped_to_the_firmware_caps() -> None:
    rig = _in_state("move")
    assert rig.submit(vel(1.0, -2.0, 5.0)) is None
    out = rig.tick()
    np.testing.assert_allclose(out.velocity_command, [0.4, -0.4, 0.8])
    assert out.counters["velocity_clamped"] == 1 and out.policy_active


def test_velocity_in_trajectory_hands_back_to_the_policy() -> None:
    rig = _in_state("trajectory")
    epoch = rig.out.policy_epoch
    assert rig.submit(vel(0.1)) is None
    out = rig.tick()
    assert out.move_submode is MoveSubmode.POLICY and out.policy_active and out.policy_epoch == epoch + 1


def test_velocity_staleness_zeroes_and_stays_in_move() -> None:
    rig = _in_state("move")
    t0 = rig.t
    rig.submit(vel(0.3))
    out = rig.run_until(t0 + 2.0 - DT)
    np.testing.assert_allclose(out.velocity_command, [0.3, 0, 0])
    out = rig.tick()
    assert out.mode is Mode.MOVE and out.move_submode is MoveSubmode.POLICY
    np.testing.assert_array_equal(out.velocity_command, 0.0)
    assert out.counters["velocity_timeouts"] == 1
    out = rig.tick(500)
    assert out.mode is Mode.MOVE and out.counters["velocity_timeouts"] == 1


def test_a_10hz_keepalive_keeps_the_velocity() -> None:
    rig = _in_state("move")
    for _ in range(100):  # 10 s of keepalive
        rig.submit(vel(0.2))
        out = rig.tick(5)
        np.testing.assert_allclose(out.velocity_command, [0.2, 0, 0])
    assert out.counters["velocity_timeouts"] == 0


# ── trajectory ──────────────────────────────────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize(
    ("setup", "cmd", "reason", "mode_after", "counter"),
    [
        ("damp", traj(), "FW_DAMPED", Mode.DAMP, "trajectory_in_damp"),
        ("stand_unarmed", traj(), "GATE", Mode.STAND, "trajectory_unarmed_stand"),
        ("stand_armed", traj(), None, Mode.MOVE, "accepted_trajectory"),
        ("move", traj(), None, Mode.MOVE, "accepted_trajectory"),
        ("trajectory", traj(), None, Mode.MOVE, "accepted_trajectory"),
        ("latched", traj(), "FAULT_DAMPED", Mode.DAMP, "trajectory_fault_latched"),
        ("stand_armed", TrajectoryCommand(()), "EMPTY_TRAJECTORY", Mode.STAND, "trajectory_empty"),
        ("stand_armed", traj(np.zeros(24)), "BAD_LENGTH", Mode.STAND, "trajectory_bad_length"),
        ("move", traj(np.zeros(26)), "BAD_LENGTH", Mode.MOVE, "trajectory_bad_length"),
        ("stand_armed", traj(np.r_[np.zeros(24), math.nan]), "NON_FINITE", Mode.STAND, "trajectory_non_finite"),
        ("move", traj(kp=[math.inf] * 25, kd=[1] * 25), None, Mode.MOVE, "trajectory_gains_non_finite"),
        ("move", TrajectoryCommand(("a",) * 25), "PARSE", Mode.MOVE, "command_unparsable"),  # type: ignore[arg-type]
    ],
)
def test_trajectory_table(setup: str, cmd, reason, mode_after: Mode, counter: str) -> None:
    test_velocity_table(setup, cmd, reason, mode_after, counter)
    rig = _in_state(setup)
    rig.submit(cmd)
    out = rig.tick()
    if reason is None:
        assert out.move_submode is MoveSubmode.TRAJECTORY and not out.policy_active


def test_trajectory_targets_and_default_gains() -> None:
    rig = _in_state("stand_armed")
    target = DEFAULT_POS.copy()
    target[joint_index("neck_yaw_joint")] = 0.3
    assert rig.submit(traj(target)) is None
    out = rig.tick()
    np.testing.assert_allclose(out.position, target)
    np.testing.assert_array_equal(out.kp, STAND_KP)
    np.testing.assert_array_equal(out.kd, STAND_KD)
    np.testing.assert_array_equal(out.velocity, 0.0)
    np.testing.assert_array_equal(out.velocity_command, 0.0)


def test_trajectory_ankle_slots_are_pitch_roll_and_clamped() -> None:
    rig = _in_state("move")
    wire = DEFAULT_POS.copy()
    (lp, lr), (rp, rr) = ANKLE_PAIRS
    wire[lp], wire[lr], wire[rp], wire[rr] = -0.6, 0.2, 0.2, -0.05
    rig.submit(traj(wire))
    out = rig.tick()
    assert (out.position[lp], out.position[lr], out.position[rp], out.position[rr]) == (-0.35, 0.1, 0.2, -0.05)
    assert out.counters["trajectory_targets_clamped"] == 1


def test_trajectory_gain_rules() -> None:
    rig = _in_state("move")
    kp = np.full(NUM_JOINTS, 60.0)
    kd = np.full(NUM_JOINTS, 3.0)
    kp[2], kd[7], kp[9], kd[9] = 0.0, -1.0, 900.0, 9.0
    assert rig.submit(traj(kp=kp, kd=kd)) is None
    out = rig.tick()
    assert (out.kp[2], out.kd[2]) == (0.0, 2.0)  # kp <= 0 -> DAMP gains for that joint
    assert (out.kp[7], out.kd[7]) == (0.0, 2.0)  # kd <= 0 -> DAMP gains too
    assert (out.kp[9], out.kd[9]) == (500.0, 5.0)  # clamped to the documented range
    assert (out.kp[0], out.kd[0]) == (60.0, 3.0)
    assert out.counters["trajectory_gains_damped"] == 1
    assert out.counters["trajectory_gains_clamped"] == 1


@pytest.mark.parametrize(
    ("kp", "kd", "use_kp", "use_kd", "counter"),
    [
        # API page: "send exactly 25 values in kp and/or kd": each array is decided on its own
        ([60.0] * 25, None, True, False, None),
        (None, [3.0] * 25, False, True, None),
        ([60.0] * 23, [3.0] * 23, False, False, "trajectory_gains_substituted"),  # any other count -> defaults
        ([60.0] * 25, [3.0] * 24, True, False, "trajectory_gains_substituted"),
        ([60.0] * 24, [3.0] * 25, False, True, "trajectory_gains_substituted"),
        ([math.nan] * 25, [3.0] * 25, False, True, "trajectory_gains_non_finite"),  # non-finite -> defaults too
        ([60.0] * 25, [3.0] * 24 + [math.inf], True, False, "trajectory_gains_non_finite"),
    ],
)
def test_gains_are_decided_per_array_and_never_drop_the_setpoint(kp, kd, use_kp, use_kd, counter) -> None:
    rig = _in_state("move")
    target = DEFAULT_POS.copy()
    target[joint_index("left_elbow_joint")] += 0.2
    assert rig.submit(traj(target, kp=kp, kd=kd)) is None  # the position setpoint is applied
    assert rig.fw.last_gain_notes == (() if counter is None else (counter,))
    out = rig.tick()
    np.testing.assert_allclose(out.position, target)
    np.testing.assert_array_equal(out.kp, np.full(NUM_JOINTS, 60.0) if use_kp else STAND_KP)
    np.testing.assert_array_equal(out.kd, np.full(NUM_JOINTS, 3.0) if use_kd else STAND_KD)
    for name in ("trajectory_gains_substituted", "trajectory_gains_non_finite"):
        assert out.counters[name] == (1 if name == counter else 0)
    assert out.counters["rejections_total"] == 0


@pytest.mark.parametrize("setup", ["damp", "stand_unarmed", "latched"])
def test_a_dropped_trajectory_counts_no_gain_adjustment(setup: str) -> None:
    """trajectory_gains_* count applied trajectories only: one the firmware then drops changed no gains."""
    rig = _in_state(setup)
    kp = [900.0] * 24 + [0.0]
    res = rig.submit(traj(kp=kp, kd=[9.0] * 23 + [math.nan]))
    assert isinstance(res, Rejection)
    out = rig.tick()
    for name in ("trajectory_gains_clamped", "trajectory_gains_damped", "trajectory_gains_non_finite",
                 "trajectory_gains_substituted"):
        assert out.counters[name] == 0, name
    assert rig.fw.last_gain_notes == ()


def test_trajectory_session_timeout_damps_after_two_seconds() -> None:
    rig = _in_state("stand_armed")
    t0 = rig.t
    rig.submit(traj())
    out = rig.run_until(t0 + 2.0 - DT)
    assert out.mode is Mode.MOVE
    out = rig.tick()
    assert out.mode is Mode.DAMP and not out.armed and out.counters["trajectory_timeouts"] == 1
    np.testing.assert_array_equal(out.kp, 0.0)


def test_streaming_trajectory_never_times_out() -> None:
    rig = _in_state("stand_armed")
    for _ in range(500):  # 10 s at 50 Hz
        assert rig.submit(traj()) is None
        assert rig.tick().mode is Mode.MOVE
    rig.tick(99)
    assert rig.out.mode is Mode.MOVE
    assert rig.tick().mode is Mode.DAMP


def test_policy_mode_has_no_trajectory_timeout() -> None:
    rig = _in_state("move")
    assert rig.tick(500).mode is Mode.MOVE


# ── MOVE/POLICY motor targets ───────────────────────────────────────────────────────────────────────────────────
def test_policy_targets_map_from_policy_order_with_policy_gains() -> None:
    rig = _in_state("move")
    target = DEFAULT_POS[POLICY_TO_JOINT] + np.linspace(-0.02, 0.02, NUM_POLICY_JOINTS)
    rig.policy = {"policy_target": target, "policy_torque_ff": np.full(NUM_POLICY_JOINTS, 0.5)}
    out = rig.tick()
    expected = DEFAULT_POS.copy()
    expected[POLICY_TO_JOINT] = target
    np.testing.assert_allclose(out.position, expected)
    np.testing.assert_array_equal(out.kp, POLICY_KP)
    np.testing.assert_array_equal(out.kd, POLICY_KD)
    neck = list(NON_POLICY_JOINTS)
    np.testing.assert_array_equal(out.position[neck], DEFAULT_POS[neck])
    np.testing.assert_array_equal(out.kp[neck], [40.0, 40.0])
    np.testing.assert_array_equal(out.torque_ff[neck], 0.0)
    np.testing.assert_array_equal(out.torque_ff[POLICY_TO_JOINT], 0.5)
    # the policy's own gains win where given
    rig.policy = {"policy_target": target, "policy_kp": np.full(23, 77.0), "policy_kd": np.full(23, 1.5)}
    out = rig.tick()
    assert out.kp[POLICY_TO_JOINT].tolist() == [77.0] * 23 and out.kd[neck].tolist() == [2.0, 2.0]


def test_policy_left_ankle_roll_is_the_policy_index_five() -> None:
    rig = _in_state("move")
    target = np.zeros(NUM_POLICY_JOINTS)
    target[5] = 0.07  # policy index 5 = left ankle roll
    target[12] = 0.2  # policy index 12 = waist yaw
    rig.policy = {"policy_target": target}
    out = rig.tick()
    assert out.position[joint_index("left_ankle_roll_joint")] == pytest.approx(0.07)
    assert out.position[joint_index("waist_yaw_joint")] == pytest.approx(0.2)


def test_policy_targets_go_through_the_firmware_clamp() -> None:
    rig = _in_state("move")
    target = np.zeros(NUM_POLICY_JOINTS)
    target[5] = 0.3  # ankle roll beyond 0.1
    rig.policy = {"policy_target": target}
    out = rig.tick()
    assert out.position[joint_index("left_ankle_roll_joint")] == 0.1
    assert out.counters["policy_targets_clamped"] == 1


def test_missing_policy_output_holds_the_last_targets() -> None:
    rig = _in_state("stand_armed")
    hold = rig.out
    rig.submit(vel())
    out = rig.tick()  # no policy output yet
    assert out.policy_active
    np.testing.assert_allclose(out.position, hold.position)
    np.testing.assert_array_equal(out.kp, hold.kp)
    assert out.counters["policy_output_missing"] == 1
    rig.policy = {"policy_target": np.full(NUM_POLICY_JOINTS, math.nan)}
    out = rig.tick()
    np.testing.assert_allclose(out.position, hold.position)
    assert out.counters["policy_output_invalid"] == 1
    rig.policy = {"policy_target": np.zeros(NUM_POLICY_JOINTS), "policy_kp": np.full(23, -1.0)}
    out = rig.tick()
    np.testing.assert_array_equal(out.kp, POLICY_KP)  # bad gains ignored, counted
    assert out.counters["policy_output_invalid"] == 2


def test_policy_epoch_counts_entries_into_policy() -> None:
    rig = _in_state("stand_armed")
    e0 = rig.out.policy_epoch
    rig.submit(vel())
    assert rig.tick().policy_epoch == e0 + 1
    rig.submit(vel(0.1))
    assert rig.tick().policy_epoch == e0 + 1  # staying in POLICY is not a new entry
    rig.submit(StandCommand())
    rig.tick()
    rig.submit(vel())
    assert rig.tick().policy_epoch == e0 + 2


# ── fault latch ─────────────────────────────────────────────────────────────────────────────────────────────────
def test_fall_latches_refuses_and_clears_only_on_restart() -> None:
    rig = Rig()
    rig.release_gantry()
    rig.submit(vel(0.2))
    rig.tick()
    rig.gravity = FALLEN
    out = rig.tick()
    assert out.mode is Mode.DAMP and out.fault_latched  # reported as DAMP with error_flags (Menlo's SDK reference)
    assert out.error_flags == 0x101
    (alert,) = out.alerts
    assert (alert.id, alert.severity, alert.name) == (ALERT_FALL_DETECTED, 0, "FALL_DETECTED")
    assert alert.first_set_us == out.timestamp_us and alert.threshold == 60
    np.testing.assert_array_equal(out.kp, 0.0)
    np.testing.assert_array_equal(out.kd, 2.0)
    for cmd, counter in [
        (StandCommand(), "stand_fault_latched"),
        (vel(0.1), "velocity_fault_latched"),
        (traj(), "trajectory_fault_latched"),
    ]:
        res = rig.submit(cmd)
        assert res is not None and res.reason == "FAULT_DAMPED" and res.extra["counter"] == counter
    assert rig.submit(DampCommand()) is None  # always accepted; the latch stays
    out = rig.tick()
    assert out.mode is Mode.DAMP and out.fault_latched and out.counters["damp_while_latched"] == 1
    # Upright again (e.g. picked up): the alert clears 2.5 s later, the flags stay.
    rig.gravity = UPRIGHT
    t_up = rig.t
    out = rig.run_until(t_up + 2.5 - DT)
    assert alert_ids(out) == {ALERT_FALL_DETECTED}
    out = rig.tick()
    assert out.alerts == () and out.error_flags == 0x101 and out.mode is Mode.DAMP and out.fault_latched
    assert rig.submit(StandCommand()).reason == "FAULT_DAMPED"  # type: ignore[union-attr]
    # Virtual power cycle.
    rig.fw.restart()
    rig.k = 0
    out = rig.tick()
    assert out.mode is Mode.DAMP and out.error_flags == 0 and not out.fault_latched and out.gantry_engaged
    assert out.t == 0.0 and out.counters["fall_latches"] == 0
    assert rig.submit(StandCommand()) is None


def test_damp_drops_a_free_standing_robot_into_a_latch() -> None:
    rig = Rig()
    rig.release_gantry()
    rig.submit(DampCommand())
    rig.tick()
    rig.gravity = FALLEN
    out = rig.tick()
    assert out.mode is Mode.DAMP and out.fault_latched and out.error_flags == 0x101
    assert [a.name for a in out.alerts] == ["FALL_DETECTED"]
    assert rig.submit(StandCommand()).reason == "FAULT_DAMPED"  # type: ignore[union-attr]


@pytest.mark.parametrize("report_fault_damp", [False, True])
def test_a_latched_fault_is_reported_as_damp_or_fault_damp_by_parameter(report_fault_damp: bool) -> None:
    """The latch drives behaviour; the reported number is DAMP by default (Menlo's SDK reference: a critical alert
    latches DAMP with error_flags set) or FAULT_DAMP 5 with report_fault_damp (also accepted by the SDK)."""
    rig = Rig(report_fault_damp=report_fault_damp)
    rig.release_gantry()
    rig.gravity = FALLEN
    out = rig.tick()
    expected = Mode.FAULT_DAMP if report_fault_damp else Mode.DAMP
    assert out.mode is expected and rig.fw.mode is expected and out.fault_latched
    assert out.error_flags == 0x101 and alert_ids(out) == {ALERT_FALL_DETECTED}
    np.testing.assert_array_equal(out.kp, 0.0)  # DAMP gains either way
    res = rig.submit(StandCommand())
    assert res is not None and res.reason == "FAULT_DAMPED" and res.extra["mode"] == expected.name
    assert rig.submit(DampCommand()) is None
    assert rig.tick().mode is expected and rig.out.fault_latched
    # an unlatched DAMP is DAMP whatever the parameter
    rig.fw.restart()
    rig.k = 0
    assert rig.tick().mode is Mode.DAMP and not rig.out.fault_latched


def test_fall_alert_returns_if_the_condition_comes_back_before_clearing() -> None:
    rig = Rig()
    rig.release_gantry()
    rig.gravity = FALLEN
    first = rig.tick().alerts[0]
    rig.gravity = UPRIGHT
    rig.tick(50)
    rig.gravity = FALLEN
    out = rig.tick()
    assert out.alerts == (dataclasses.replace(first, value=out.alerts[0].value),)
    assert out.counters["fall_latches"] == 1


def test_fall_detection_can_be_switched_off_for_the_twin() -> None:
    rig = Rig(fall_detection=False)
    rig.release_gantry()
    rig.gravity = FALLEN
    assert not rig.tick(10).fault_latched


# ── thermal ─────────────────────────────────────────────────────────────────────────────────────────────────────
def test_stand_torques_stay_cool() -> None:
    model = ThermalModel()
    tau = np.zeros(NUM_JOINTS)
    # generous standing loads (N·m): knees and hip pitch carrying the body, ankles balancing
    for name, value in [("knee", 15.0), ("hip_pitch", 8.0), ("ankle_pitch", 10.0), ("hip_roll", 5.0)]:
        for side in ("left", "right"):
            tau[joint_index(f"{side}_{name}_joint")] = value
    ss = model.steady_state(joint_to_state_torque(tau))
    assert ss.max() < 45.0


def test_a_stalled_knee_warns_then_latches_overtemp() -> None:
    params = FirmwareParams(thermal=ThermalParams(time_constant_s=20.0))
    rig = Rig(params)
    knee = joint_index("left_knee_joint")
    rig.tau[knee] = 45.0  # its torque limit
    warned_at = tripped_at = None
    for _ in range(round(120 / DT)):
        out = rig.tick()
        if warned_at is None and ALERT_MOTOR_TEMP_HIGH in alert_ids(out):
            warned_at = out.t
            assert out.motor_temperature[knee] >= 60.0
        if out.fault_latched:
            tripped_at = out.t
            break
    assert warned_at is not None and tripped_at is not None and warned_at < tripped_at
    assert out.mode is Mode.DAMP and out.fault_latched
    assert out.error_flags == 1 | (1 << 3)  # bit 0 + bit (1 + MOTOR_OVERTEMP)
    hot = [a for a in out.alerts if a.id == ALERT_MOTOR_OVERTEMP]
    assert len(hot) == 1 and hot[0].source_id == knee and hot[0].severity == 0 and hot[0].threshold == 80
    warn = [a for a in out.alerts if a.id == ALERT_MOTOR_TEMP_HIGH]
    assert warn[0].severity == 1 and warn[0].name == "MOTOR_TEMP_HIGH"
    # Analytical time to 80 °C for a first-order model.
    model = ThermalModel(params.thermal)
    tau_m = joint_to_state_torque(rig.tau)
    rise = model.steady_state(tau_m)[knee] - 25.0
    expected = -20.0 * math.log(1.0 - 55.0 / rise)
    assert tripped_at == pytest.approx(expected, abs=2 * DT)
    # Cooling: the alert stays until below 70 °C (hysteresis), then clears 2.5 s later; the latch stays.
    rig.tau[:] = 0.0
    below_70 = None
    for _ in range(round(120 / DT)):
        out = rig.tick()
        if below_70 is None and out.motor_temperature[knee] < 70.0:
            below_70 = out.t
        if ALERT_MOTOR_OVERTEMP not in alert_ids(out):
            break
    assert below_70 is not None and out.t == pytest.approx(below_70 + 2.5, abs=1e-6)
    assert out.error_flags == 9 and out.mode is Mode.DAMP and out.fault_latched


def test_ankle_heat_is_shared_by_both_motors() -> None:
    rig = Rig()
    lp, lr = ANKLE_PAIRS[0]
    rig.tau[lp] = 30.0  # pure pitch torque: motors A and B carry equal and opposite shares
    out = rig.tick(2)
    temps = out.motor_temperature
    assert temps[lp] == pytest.approx(temps[lr]) and temps[lp] > 25.0
    assert out.motor_current[lp] == pytest.approx(-out.motor_current[lr])  # signed: equal and opposite


def test_every_motor_hot_is_one_entry_per_alert_id_naming_the_hottest() -> None:
    """25 motors over the warning and the trip are one MOTOR_TEMP_HIGH and one MOTOR_OVERTEMP entry (the wire holds
    at most one per catalog id), each naming the hottest motor, severities from asimov-protocol's catalog."""
    # no battery model: 25 motors stalled this hard would draw ~25 kW, and its BMS would trip too
    params = FirmwareParams(thermal=ThermalParams(time_constant_s=1.0), battery_model=False)
    rig = Rig(params)
    rig.release_gantry()
    rig.tau[:] = 60.0
    knee = joint_index("right_knee_joint")
    rig.tau[knee] = 200.0
    out = rig.tick(round(20 / DT))
    temps = out.motor_temperature
    assert np.all(temps > 80.0) and int(np.argmax(temps)) == knee and np.sum(temps == temps.max()) == 1
    assert sorted(a.id for a in out.alerts) == [ALERT_MOTOR_OVERTEMP, ALERT_MOTOR_TEMP_HIGH]
    for a in out.alerts:
        assert a.source_id == knee and a.value == round(temps[knee])
        assert a.severity == int(CATALOG_SEVERITY[a.id])
    frame = StateFrame(timestamp_us=out.timestamp_us, sequence=1, current_mode=out.mode, joint_pos=[0.0] * 25,
                       joint_vel=[0.0] * 25, base_ang_vel=[0.0] * 3, projected_gravity=[0.0, 0.0, -1.0],
                       base_quat=[1.0, 0.0, 0.0, 0.0], error_flags=out.error_flags,
                       active_alerts=out.alerts)
    assert len(decode_state(encode_state(frame)).active_alerts) == 2


def test_alert_severities_are_the_protocol_catalogs() -> None:
    for alert_id, severity in CATALOG_SEVERITY.items():
        assert alert_severity(alert_id) == severity
    assert alert_severity(ALERT_FALL_DETECTED) == 0 and alert_severity(ALERT_MOTOR_TEMP_HIGH) == 1
    assert alert_severity(32) == 2  # MODE_CHANGE is INFO (the old "id >= 16 -> warning" rule said 1)
    assert alert_severity(999) == 1  # unknown: a warning, never critical


def test_thermal_model_off_reports_nothing_and_never_alerts() -> None:
    rig = Rig(thermal_model=False, battery_model=False)  # 25 kN·m would trip the battery model's BMS
    rig.tau[:] = 1000.0
    out = rig.tick(round(600 / DT / 10))
    assert out.motor_temperature is None and out.motor_current is None
    assert out.alerts == () and not out.fault_latched


def test_temperatures_survive_a_restart_unless_reset() -> None:
    rig = Rig(FirmwareParams(thermal=ThermalParams(time_constant_s=5.0)))
    rig.tau[joint_index("right_knee_joint")] = 20.0
    hot = rig.tick(100).motor_temperature.max()
    assert hot > 30.0
    rig.fw.restart()
    rig.k = 0
    assert rig.tick().motor_temperature.max() == pytest.approx(hot, rel=1e-6)
    rig.fw.restart(reset_temperatures=True)
    rig.k = 0
    rig.tau[:] = 0.0
    assert rig.tick().motor_temperature.max() == 25.0


# ── bad inputs never raise ──────────────────────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize(
    "override",
    [
        {"q": np.full(NUM_JOINTS, math.nan)},
        {"q": np.zeros(24)},
        {"projected_gravity": (0.0, math.inf, -1.0)},
        {"projected_gravity": None},
        {"tau": "hot"},
    ],
)
def test_bad_sensor_inputs_hold_the_last_reading(override: dict) -> None:
    rig = _in_state("stand_armed")
    good = rig.out
    inp = dataclasses.replace(rig.inputs(), **override)
    out = rig.fw.tick(rig.t, inp)
    assert out.input_error is not None and out.counters["bad_inputs"] == 1
    assert out.mode is Mode.STAND and out.armed
    np.testing.assert_allclose(out.position, good.position)
    assert all(np.all(np.isfinite(a)) for a in (out.position, out.kp, out.kd, out.torque_ff))


def test_unknown_commands_and_clock_anomalies() -> None:
    rig = Rig()
    rig.tick(10)
    res = rig.submit("STAND")
    assert res is not None and res.reason == "UNKNOWN_COMMAND"
    out = rig.fw.tick(0.01, rig.inputs())  # time went back
    assert out.counters["clock_anomalies"] == 1 and out.t == pytest.approx(10 * DT)  # the submit's time
    assert rig.fw.submit(StandCommand(), math.nan) is None
    assert rig.fw.counters["clock_anomalies"] == 2


def test_external_rejections_are_counted() -> None:
    fw = Firmware()
    fw.count_rejection(Rejection("NOT_ACTIVE", extra={"counter": "arbiter_not_active"}))
    fw.count_rejection(Rejection("UNKNOWN_MODE"))
    c = fw.counters
    assert c["arbiter_not_active"] == 1 and c["rejected_unknown_mode"] == 1 and c["rejections_total"] == 2


numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5))
commands = st.one_of(
    st.builds(DampCommand, source=st.sampled_from(CommandSource)),
    st.builds(StandCommand),
    st.builds(VelocityCommand, numbers, numbers, numbers),
    st.builds(
        TrajectoryCommand,
        st.lists(numbers, max_size=27).map(tuple),
        st.one_of(st.none(), st.lists(numbers, max_size=26).map(tuple)),
        st.one_of(st.none(), st.lists(numbers, max_size=26).map(tuple)),
    ),
    st.sampled_from([None, 3, "damp", object()]),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(commands, st.integers(0, 40), st.sampled_from([UPRIGHT, LEANING, FALLEN])), max_size=25))
def test_fuzzed_command_streams_never_raise(script) -> None:
    rig = Rig()
    rig.tick()
    for cmd, gap, gravity in script:
        res = rig.submit(cmd)
        assert res is None or (isinstance(res, Rejection) and res.extra["counter"] in rig.fw.counters)
        rig.gravity = gravity
        out = rig.tick(gap + 1)
        assert out.mode in Mode
        for a in (out.position, out.velocity, out.kp, out.kd, out.torque_ff, out.velocity_command):
            assert np.all(np.isfinite(a))
        assert np.all(out.kp >= 0.0) and np.all(out.kd >= 0.0)
        if out.mode is Mode.MOVE:
            assert out.armed
        if out.fault_latched:
            assert out.mode is Mode.DAMP and out.error_flags & 1
        assert np.all(np.abs(out.velocity_command) <= np.array(FirmwareParams().velocity_caps))


# ── the thermal model itself ────────────────────────────────────────────────────────────────────────────────────
def test_thermal_rated_torques_come_from_the_datasheet_table() -> None:
    model = ThermalModel()
    rated = model.rated_torque
    assert rated[joint_index("left_knee_joint")] == 25.0
    assert rated[joint_index("right_hip_pitch_joint")] == 40.0
    assert rated[joint_index("waist_yaw_joint")] == 40.0
    assert rated[joint_index("left_shoulder_pitch_joint")] == 30.0
    for a, b in ANKLE_PAIRS:
        assert rated[a] == rated[b] == 12.0  # EC-A4310, two per ankle
    assert rated[joint_index("neck_pitch_joint")] == ThermalParams().unknown_motor_rated_torque_nm


def test_thermal_step_is_the_exact_first_order_solution() -> None:
    params = ThermalParams()
    model = ThermalModel(params)
    tau = model.rated_torque.copy()  # every motor at its rated torque
    np.testing.assert_allclose(model.steady_state(tau), 25.0 + params.rise_at_rated_c)
    assert 60.0 < 25.0 + params.rise_at_rated_c < 80.0  # rated continuous torque warns but never trips
    one_big = ThermalModel(params)
    one_big.step(tau, 100.0)
    for _ in range(100):
        model.step(tau, 1.0)
    np.testing.assert_allclose(model.temperature, one_big.temperature, rtol=1e-12)
    expected = 25.0 + params.rise_at_rated_c * (1.0 - math.exp(-100.0 / params.time_constant_s))
    np.testing.assert_allclose(one_big.temperature, expected)
    before = one_big.temperature
    one_big.step(tau, -1.0)
    one_big.step(tau, math.nan)
    one_big.step(np.full(NUM_JOINTS, math.nan), 1.0)
    np.testing.assert_array_equal(one_big.temperature, before)


@pytest.mark.parametrize("field", ["time_constant_s", "winding_resistance_ohm", "rated_current_a"])
@pytest.mark.parametrize("value", [0.0, -1.0, math.inf])
def test_thermal_params_are_validated(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        ThermalParams(**{field: value})
