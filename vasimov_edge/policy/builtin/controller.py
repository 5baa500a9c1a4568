"""The built-in model-based walker: balance and walking from IMU + encoders + command, no learned weights.

Why this shape. Asimov 1's feet are 4-5.6 cm wide with +/-0.1 rad of ankle roll and only 0.05 rad of ankle
dorsiflexion left at the stand pose, and the policy interface gives no force sensing. Each foot touches the floor
with four small spheres; as long as all four carry load the sole resists ~17 N*m of yaw, but once the pressure
sits on the two toe or two heel spheres that drops to ~5 N*m and on one sphere to nothing, and the foot spins
(``contact_yaw`` measurements in the report). So the one rule everything here serves: **keep the stance sole flat
and the centre of pressure inside it** -- and near its middle: the walking ZMP sits only 1.5 cm ahead of the sole
centre (``zmp_x_offset``; 3 cm near the forward limit, where the stride needs it). At 3 cm everywhere the pressure
rode the toe spheres and about one step in fifty spun its sole 0.04+ rad; the walk's rare falls all began that way.

* **Stiff position control of a planned COM path** (the first probe's method, which walked): a ZMP-preview
  controller turns the footstep plan into a COM path whose ZMP stays on the sole; whole-body IK puts the pelvis
  where that COM must be; gravity and the planned ground force are fed forward through the planned ZMP.
* **The plan follows the body** (``ref_pull``): each tick the preview's reference state is pulled a little toward
  the estimated COM state. A pure open-loop plan drifts from the robot by a few centimetres per step (landing
  errors) until it asks for a CoP behind the heel; the pull keeps the planned ZMP reachable.
* **Capture-point feedback** on top (``walk_dcm_gain``/``stand_dcm_gain``): the COM command moves against the
  divergent-component error, so the stiff joints shift the pressure the right way. Standing pushes are rejected
  this way without a step. While walking, a fifth of each foothold comes from the capture-point rule
  (``dcm_step_gain``): a body that lags gets a shorter step instead of a CoP behind the heel. Sideways the share is
  larger (``dcm_step_gain_lateral``): a body drifting toward the swing side otherwise sets the swing foot down early,
  unloads the stance sole and spins it -- how the random command sequences used to fall. The capture point the
  foothold is placed for is the plan's plus half the measured one's lead over it (``dcm_step_error_share``): the
  plan alone learns of a body drifting off it only through ``ref_pull``, and after a command change the landing
  misses could grow from step to step.
* **Push recovery** (``push_recovery``): standing, a capture point (IMU + leg kinematics) beyond the soles' toe or
  heel line starts stepping at zero command -- a short weight shift, a higher swing, half of each foothold from the
  measured capture point -- until a touchdown leaves it near the stand point. It lifts the survivable 0.15 s front
  push from 80-85 N to 90 N; 150 N still falls (the body pitches over its toes before the first foot is down, and
  the trailing foot, at its dorsiflexion stop, swings heel-up and catches its toe).
* **Commands inside the walked envelope** (``command_limit``, ``command_combined_limit``): larger or strongly
  combined commands are scaled down, so the robot walks slower than asked rather than falling. Changes are slewed
  over a step or more, and one gait runs down before the next builds up (``command_rate``,
  ``command_build_while_slowing``): the plan knows the command, not the body's momentum, and a turn started while
  the body still carries the old walk's momentum is stepped with the pressure on a sole end that holds little yaw.
* **Swing foot**: lifted first, moved, set down (min-jerk pieces), steered through the point below the ankle so the
  foot pitches toe-down only as far as the ankle's dorsiflexion stop forces it, with a swing IK whose pitch has a
  small but real weight (a near-zero weight let the IK jump between solutions at 30 rad/s). A learned landing
  offset removes the repeatable few centimetres the PD-tracked leg lands long (plus one per foot while strafing or
  turning, when the two feet miss differently).
* **Heading**: once per step the next foothold turns by a clipped fraction of the heading error; the hips never
  fight the sole for yaw.

Everything is computed from what the real robot's policy gets (IMU, encoders, command) plus the controller's own
copy of the model (``kinematics.RobotKinematics``). Odometry: the stance sole is assumed fixed on flat ground;
each new foothold is measured at the end of its double support, when it rests flat.

Where each part lives (this module only orchestrates one tick through them, in this order):

* ``estimation.py`` -- pelvis, COM and capture point from IMU, encoders and the footprints (leg odometry);
* ``command_shaping.py`` -- dead band, walked envelope, combined limit, slew, integrated heading;
* ``gait.py`` -- the stand/walk state machine, footprints, step timing, ZMP horizon, swing path;
* ``footsteps.py`` -- footholds: nominal, constrained, heading-corrected, capture-point blended; ZMP points;
* ``adaptation.py`` -- learned landing offsets and the stride correction;
* ``recovery.py`` -- push-recovery trigger, gait variant and end;
* ``preview.py`` -- the ZMP preview controller (COM plan); here: its reference pull and the capture-point feedback;
* ``whole_body.py`` -- leg IK for pelvis and feet, upper-body posture, pelvis height;
* ``motor_commands.py`` -- gains, support-load and rate feed-forward torques, the policy output.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from vasimov import joints
from vasimov_edge.policy.builtin.adaptation import LandingOffsets, StrideCorrection
from vasimov_edge.policy.builtin.command_shaping import CommandShaper
from vasimov_edge.policy.builtin.config import ControllerConfig
from vasimov_edge.policy.builtin.estimation import Reading, StateEstimator
from vasimov_edge.policy.builtin.footsteps import FootstepPlanner
from vasimov_edge.policy.builtin.gait import Gait, Mode
from vasimov_edge.policy.builtin.kinematics import RobotKinematics, roll_pitch_yaw
from vasimov_edge.policy.builtin.motor_commands import MotorCommands
from vasimov_edge.policy.builtin.preview import GRAVITY, PreviewController, preview_gains
from vasimov_edge.policy.builtin.recovery import PushRecovery
from vasimov_edge.policy.builtin.whole_body import WholeBody
from vasimov_edge.policy.interface import PolicyInput, PolicyOutput

Vec = NDArray[np.float64]

COM_ABOVE_PELVIS = 0.017  # m; the stand-pose COM sits this far above the pelvis origin
MAX_COM_SHIFT = 0.05  # m; clamp of the capture-point correction of the COM command


@dataclass
class Telemetry:
    """What the controller believes, for the bench and for debugging (odometry frame)."""

    mode: str = Mode.STAND.value
    stance: str = "both"
    com: Vec = field(default_factory=lambda: np.zeros(3))
    dcm: Vec = field(default_factory=lambda: np.zeros(2))
    dcm_error: Vec = field(default_factory=lambda: np.zeros(2))
    com_ref: Vec = field(default_factory=lambda: np.zeros(2))
    zmp_ref: Vec = field(default_factory=lambda: np.zeros(2))
    steps: int = 0
    compute_s: float = 0.0


class BuiltinController:
    """Model-based balance and walking backend (implements ``PolicyBackend``)."""

    name = "builtin"

    def __init__(self, config: ControllerConfig | None = None, kinematics: RobotKinematics | None = None) -> None:
        self.cfg = config if config is not None else ControllerConfig()
        self.kin = kinematics if kinematics is not None else RobotKinematics()
        cfg = self.cfg
        h_com = cfg.pelvis_height + COM_ABOVE_PELVIS
        self.omega = math.sqrt(GRAVITY / h_com)
        self.preview = PreviewController(
            preview_gains(cfg.control_dt, h_com, round(cfg.preview_time / cfg.control_dt), r_jerk=cfg.preview_r)
        )
        self.command = CommandShaper(cfg)
        self.stride = StrideCorrection(cfg)
        self.landing = LandingOffsets(cfg)
        self.planner = FootstepPlanner(cfg, self.stride)
        self.recovery = PushRecovery(cfg, self.kin.legs["left"].sole_half_length)
        self.gait = Gait(cfg, self.planner, self.command, self.recovery, self.landing, self.stride, self.preview,
                         self.omega)
        self.estimator = StateEstimator(cfg, self.kin, self.omega)
        self.body = WholeBody(cfg, self.kin)
        self.motor = MotorCommands(cfg, self.kin)
        self.telemetry = Telemetry()
        self.reset()

    def reset(self) -> None:
        """Forget the gait; the next active tick re-anchors odometry on the measured stance."""
        self._reset_done = True  # nothing changes until the next active tick: inactive ticks need not redo this
        self._initialized = False
        self.gait.reset()
        self.command.reset()
        self.stride.reset()
        self.landing.reset()
        self.recovery.reset()
        self.estimator.reset()
        self.motor.reset()
        self.body.reset()
        self.telemetry = Telemetry()

    def _take_over(self, r: Reading) -> None:
        """First active tick after a reset: odometry anchored on the measured soles, heading on the measured yaw,
        the body taken over from the measured pose."""
        self.gait.anchor(r.sole)
        self.command.heading = roll_pitch_yaw(r.R)[2]
        self.body.take_over(r.sole, r.q)
        self._initialized = True

    def step(self, inp: PolicyInput) -> PolicyOutput:
        """One 50 Hz tick: estimate, command, gait logic, preview, IK, motor commands."""
        t0 = time.perf_counter()
        motor = self.motor
        if not inp.active:
            # The firmware may use this very output on the tick it enters MOVE (its decision comes after this
            # answer), so it must be safe to apply from whatever pose the robot is in -- mid STAND ramp included:
            # hold the measured pose rather than jump to the stand pose. (Reset once: a robot in DAMP or STAND
            # sends inactive ticks for minutes, and the reset was half of each one's cost.)
            if not self._reset_done:
                self.reset()
            q_hold = np.asarray(inp.q, dtype=np.float64)
            if q_hold.shape != (joints.NUM_JOINTS,) or not np.all(np.isfinite(q_hold)):
                q_hold = joints.DEFAULT_POS
            out = motor.output(q_hold.copy(), np.zeros(joints.NUM_JOINTS), motor.kp0, motor.kd0)
            self.telemetry.compute_s = time.perf_counter() - t0
            return out
        self._reset_done = False
        cfg = self.cfg
        gait = self.gait
        reading = self.estimator.read(inp)
        if not self._initialized:
            self._take_over(reading)
        est = self.estimator.estimate(reading, gait.feet, gait.anchor_weights(), self.preview.state[2])
        self.command.slew(np.asarray(inp.command, dtype=np.float64))
        self.planner.update_zmp_local(self.command.cmd[0])
        self.command.integrate_heading(est.rpy[2])

        gait.ground_slope = self.body.ground_pitch[gait.stance]  # last tick's, for the footholds' heights
        if gait.mode is Mode.STAND:
            gait.stand_tick(est)
        if gait.mode is Mode.WALK:
            gait.walk_tick(est)

        # the COM plan: the preview over the gait's ZMP horizon, pulled toward the body while walking (``ref_pull``),
        # with capture-point feedback on the COM command
        horizon = gait.zmp_horizon()
        if gait.mode is Mode.WALK and cfg.ref_pull > 0.0:
            ref = self.preview.state
            ref[0] += cfg.ref_pull * (est.com[:2] - ref[0])
            ref[1] += cfg.ref_pull * (est.comv[:2] - ref[1])
        state = self.preview.step(horizon)
        err = est.dcm - (state[0] + state[1] / self.omega)
        gain = np.array(cfg.walk_dcm_gain if gait.mode is Mode.WALK else cfg.stand_dcm_gain)
        com_cmd = state[0] - np.clip(gain * err, -MAX_COM_SHIFT, MAX_COM_SHIFT)
        zmp = self.preview.zmp()
        loads = motor.support_loads(est, zmp, state[2], gait)
        if gait.mode is Mode.WALK:
            gait.adjust_step(err)

        q_des = self.body.solve(est, com_cmd, gait)
        swing_q = self.body.swing_q
        kp, kd = motor.gains(None if swing_q is None else swing_q[0])
        tau = motor.support_torques(loads)
        motor.rate_feedforward(q_des, tau, kd, swing_q)

        tel = self.telemetry
        tel.mode = gait.mode.value
        tel.stance = gait.stance if gait.mode is Mode.WALK else "both"
        tel.com = est.com
        tel.dcm = est.dcm
        tel.dcm_error = err
        tel.com_ref = state[0].copy()
        tel.zmp_ref = zmp.copy()
        tel.steps = gait.steps
        out = motor.output(q_des, tau, kp, kd)
        out.command_used = self.command.target.copy()  # the command inside the walked envelope (command_shaping)
        tel.compute_s = time.perf_counter() - t0
        return out
