"""The firmware core with the opt-in recovery chain (FirmwareParams.recovery): what the SDK sees (modes, the
FALL_DETECTED alert, refusals) while the chain runs, resuming STAND or MOVE, and that recovery off keeps the latch.
Synthetic sensor readings on simulated time; ideal motors (the joints reach the commanded targets)."""

from __future__ import annotations

import numpy as np

from vasimov.alerts import ALERT_FALL_DETECTED, SEVERITY_CRITICAL, SEVERITY_WARNING
from vasimov.boot_states import BootState
from vasimov.command_rules import Reason
from vasimov.commands import DampCommand, StandCommand, TrajectoryCommand, VelocityCommand
from vasimov.joints import DEFAULT_POS, NUM_JOINTS, POLICY_TO_JOINT
from vasimov_edge.firmware import Firmware, FirmwareInputs, FirmwareOutput, FirmwareParams, Mode, MoveSubmode

DT = 0.02
UPRIGHT = (0.0, 0.0, -1.0)
FACE_DOWN = (1.0, 0.0, 0.0)
FACE_UP = (-1.0, 0.0, 0.0)
TOPPLING = (0.7, 0.0, -0.7)  # 45 deg


class Rig:
    """A firmware, a 50 Hz clock and ideal joints: each tick's q is the previous tick's commanded position."""

    def __init__(self, recovery: bool = True, boot: BootState = BootState.GANTRY) -> None:
        self.fw = Firmware(FirmwareParams(recovery=recovery, thermal_model=False, battery_model=False))
        self.fw.restart(boot=boot)
        self.k = 0
        self.g: tuple[float, float, float] = FACE_DOWN if boot is BootState.LYING_FRONT else UPRIGHT
        self.gyro = np.zeros(3)
        self.q = DEFAULT_POS.copy()
        self.out: FirmwareOutput | None = None

    @property
    def t(self) -> float:
        return self.k * DT

    def tick(self, n: int = 1) -> FirmwareOutput:
        for _ in range(n):
            target = DEFAULT_POS[POLICY_TO_JOINT] if self.out is not None and self.out.policy_active else None
            self.out = self.fw.tick(self.t, FirmwareInputs(q=self.q, qd=np.zeros(NUM_JOINTS), projected_gravity=self.g,
                                                           tau=np.zeros(NUM_JOINTS), policy_target=target,
                                                           gyro=self.gyro))
            self.q = np.array(self.out.position)
            self.k += 1
        assert self.out is not None
        return self.out

    def submit(self, cmd: object) -> object:
        return self.fw.submit(cmd, self.t)  # type: ignore[arg-type]

    def run_until(self, pred: object, seconds: float) -> FirmwareOutput:
        for _ in range(round(seconds / DT)):
            out = self.tick()
            if pred(out):  # type: ignore[operator]
                return out
        raise AssertionError(f"not reached in {seconds} s: phase {self.fw.recovery_phase!r}, mode {self.fw.mode}")


def _fall_alert(out: FirmwareOutput) -> bool:
    return any(a.id == ALERT_FALL_DETECTED for a in out.alerts)


def _fall_severity(out: FirmwareOutput) -> int:
    return next(a.severity for a in out.alerts if a.id == ALERT_FALL_DETECTED)


def test_recovery_off_keeps_the_hardware_latch() -> None:
    r = Rig(recovery=False, boot=BootState.LYING_FRONT)
    out = r.tick()
    assert out.fault_latched and out.mode is Mode.DAMP and out.error_flags and out.recovery_phase == ""
    assert _fall_severity(out) == SEVERITY_CRITICAL
    assert r.submit(StandCommand()) is not None  # FAULT_DAMPED: needs a restart
    assert out.counters["recovery_getups"] == 0


def test_lying_boot_stand_gets_up_and_leaves_stand_then_balance_arms() -> None:
    r = Rig(boot=BootState.LYING_FRONT)
    out = r.tick()
    assert out.mode is Mode.DAMP and not out.fault_latched and out.error_flags == 0 and _fall_alert(out)
    # a WARNING, not the catalog's CRITICAL: the SDK reads any critical alert as a latch (State.faulted) and its
    # `menlo stand -y` would give up at once; nothing is latched while the chain may still get up
    assert _fall_severity(out) == SEVERITY_WARNING
    assert r.submit(StandCommand()) is None
    out = r.tick()
    assert out.mode is Mode.STAND and not out.armed and out.recovery_phase == "SETTLING" and _fall_alert(out)
    assert _fall_severity(out) == SEVERITY_WARNING
    out = r.run_until(lambda o: o.recovery_phase == "GETUP_FRONT", 2.0)
    rej = r.submit(VelocityCommand(0.2, 0.0, 0.0))
    assert rej is not None and rej.reason == Reason.GATE and rej.extra["counter"] == "velocity_during_recovery"
    rej = r.submit(TrajectoryCommand(tuple(DEFAULT_POS)))
    assert rej is not None and rej.extra["counter"] == "trajectory_during_recovery"
    out = r.run_until(lambda o: o.recovery_phase == "STANDING_UP", 10.0)
    assert _fall_alert(out) and not out.armed
    r.g = UPRIGHT  # the body came up
    out = r.run_until(lambda o: o.recovery_phase == "", 5.0)
    assert out.mode is Mode.STAND and out.counters["recoveries"] == 1 and out.counters["velocity_during_recovery"] == 1
    assert out.stand_ramp_done and not out.fault_latched and out.error_flags == 0
    np.testing.assert_allclose(out.position, DEFAULT_POS)
    out = r.run_until(lambda o: o.armed, 1.0)  # the SDK's 0.5 s upright hold, as after any STAND
    assert r.submit(VelocityCommand(0.0, 0.0, 0.0)) is None  # `menlo balance -y`
    out = r.tick()
    assert out.mode is Mode.MOVE and out.policy_active
    out = r.run_until(lambda o: not _fall_alert(o), 3.0)  # the alert clears alert_clear_s after the condition ends


def _walking(r: Rig) -> None:
    assert r.submit(StandCommand()) is None
    r.run_until(lambda o: o.armed, 1.5)
    assert r.submit(VelocityCommand(0.3, 0.0, 0.0)) is None
    out = r.tick()
    assert out.mode is Mode.MOVE and out.move_submode is MoveSubmode.POLICY


def test_fall_in_move_protects_gets_up_and_resumes_move_at_zero_velocity() -> None:
    r = Rig(boot=BootState.STANDING)
    _walking(r)
    epoch = r.out.policy_epoch if r.out else 0
    r.g, r.gyro = TOPPLING, np.array([0.0, 3.0, 0.0])  # toppling fast at 45 deg: the rate trip
    out = r.tick()
    assert out.recovery_phase == "FALLING" and out.mode is Mode.STAND and not out.policy_active
    assert not out.fault_latched and out.error_flags == 0 and _fall_alert(out)
    assert out.counters["recovery_falls"] == 1 and out.counters["fall_latches"] == 0
    assert np.all(np.array(out.kp) < 250.0)  # compliant protective pose
    r.g, r.gyro = FACE_DOWN, np.zeros(3)
    r.run_until(lambda o: o.recovery_phase == "GETUP_FRONT", 3.0)
    r.run_until(lambda o: o.recovery_phase == "STANDING_UP", 10.0)
    r.g = UPRIGHT
    out = r.run_until(lambda o: o.recovery_phase == "", 5.0)
    assert out.mode is Mode.MOVE and out.move_submode is MoveSubmode.POLICY and out.policy_active
    assert np.all(np.array(out.velocity_command) == 0.0) and out.policy_epoch == epoch + 1
    assert r.submit(VelocityCommand(0.2, 0.0, 0.0)) is None  # walks on


def test_damp_during_the_chain_goes_limp_and_stand_starts_again() -> None:
    r = Rig(boot=BootState.LYING_BACK)
    r.g = FACE_UP
    r.tick()
    r.submit(StandCommand())
    r.run_until(lambda o: o.recovery_phase == "GETUP_BACK", 2.0)
    assert r.submit(DampCommand()) is None
    out = r.tick()
    assert out.mode is Mode.DAMP and out.recovery_phase == "" and not out.fault_latched and _fall_alert(out)
    assert np.all(np.array(out.kp) == 0.0)
    r.submit(StandCommand())
    out = r.tick()
    assert out.recovery_phase == "SETTLING" and out.counters["recovery_getups"] == 2


def test_out_of_retries_latches_the_fall_like_the_robot() -> None:
    r = Rig(boot=BootState.LYING_FRONT)
    r.tick()
    r.submit(StandCommand())
    r.q = DEFAULT_POS.copy()
    for _ in range(round(60.0 / DT)):  # the joints never move (stuck): every key pose stalls
        out = r.fw.tick(r.t, FirmwareInputs(q=DEFAULT_POS, qd=np.zeros(NUM_JOINTS), projected_gravity=FACE_DOWN,
                                            tau=np.zeros(NUM_JOINTS), gyro=np.zeros(3)))
        r.k += 1
        if out.fault_latched:
            break
    assert out.fault_latched and out.mode is Mode.DAMP and out.error_flags
    assert _fall_severity(out) == SEVERITY_CRITICAL  # latched now: the robot's critical fall alert
    assert out.counters["recovery_failures"] == 1 and out.counters["fall_latches"] == 1
    assert out.counters["recovery_retries"] == 4
    assert r.submit(StandCommand()) is not None  # latched: a restart, as on the robot

