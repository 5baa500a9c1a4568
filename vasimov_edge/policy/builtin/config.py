"""Every tunable of the built-in walker in one frozen dataclass, with the reason for each default.

Numbers marked "measured" were tuned on the bench (``vasimov.walk_bench``); the rest follow from the geometry of
the fact-sheet model (foot 0.167 m x 0.04-0.056 m, ankle roll +/-0.1 rad, ankle pitch +/-0.35 rad around a -0.30
stand angle, hips 0.215 m apart, pelvis ~0.61 m) or from the first model-based probe's notes
(``locomotion_notes.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class ControllerConfig:
    """Parameters of :class:`~vasimov_edge.policy.builtin.controller.BuiltinController`."""

    control_dt: float = 0.02  # s; the firmware runs backends at 50 Hz
    # --- posture
    # m of the pelvis above the soles. The flat-foot leg only spans 0.605..0.635 (ankle dorsiflexion stops at
    # -0.35, knee straight at 0.635), so walking sits in the middle of that window.
    pelvis_height: float = 0.62
    stand_pelvis_height: float = 0.615  # m; standing (measured: 0.62 loses the 80 N front push)
    height_rate: float = 0.03  # m/s; pelvis height changes at most this fast
    torso_pitch: float = 0.0  # rad; desired pelvis pitch (forward lean positive)
    com_x_offset: float = 0.015  # m; standing COM ahead of the sole centre (the stand pose rests 3.5 cm ahead)
    # --- gait timing
    step_time: float = 0.40  # s per step (double + single support); 20 ticks
    double_support_time: float = 0.04  # s with both feet loaded after each touchdown
    prelude_time: float = 0.40  # s of stiff weight shift onto the first stance foot before the first lift
    step_width: float = 0.215  # m between sole centres (hip spacing: legs vertical in the frontal plane)
    min_step_width: float = 0.15  # m; inner limit when strafing (knee capsules 0.08 m wide)
    max_step_width: float = 0.36  # m
    swing_height: float = 0.02  # m apex of the swing ankle (measured: 0.03 lands the foot ~4 cm off its target)
    max_step_length: float = 0.22  # m per step along the heading (forward or back)
    max_step_yaw: float = 0.35  # rad per step
    swing_land_phase: float = 1.0  # fraction of single support at which the swing foot is back on the ground
    landing_adapt: float = 0.3  # per step: how fast the learned landing offset follows the measured one
    swing_freeze: float = 0.08  # s before touchdown after which the foothold is no longer moved
    # --- command handling
    command_deadband: tuple[float, float, float] = (0.02, 0.02, 0.05)  # below this the robot may stand
    command_rate: tuple[float, float, float] = (0.8, 0.8, 2.0)  # m/s^2, m/s^2, rad/s^2 slew of the used command
    stop_steps: int = 2  # steps taken with a zero command before standing still
    step_in_place: bool = False  # keep stepping at zero command instead of standing
    # --- standing (stiff ankles, COM held over the feet by ZMP preview + capture-point feedback)
    preview_time: float = 1.6  # s
    preview_r: float = 1e-6  # jerk weight (ZMP weight 1)
    stand_dcm_gain: tuple[float, float] = (1.0, 1.0)  # m/m: COM command offset against DCM error
    recovery_dcm: tuple[float, float] = (0.08, 0.06)  # m; standing DCM error beyond which the robot steps
    # --- walking (passive-ankle pendulum, balance by foot placement)
    dcm_step_gain: float = 1.0  # fraction of the predicted DCM at touchdown used to place the foot
    cop_x_offset: float = 0.0  # m ahead of the sole centre where the stance ankle puts the pressure
    ankle_cop_gain: tuple[float, float] = (3.0, 1.0)  # m of CoP shift per m of DCM error (sagittal, lateral)
    cop_limit: tuple[float, float] = (0.04, 0.01)  # m; CoP stays this close to the sole centre (edges: 8.4/2 cm)
    stance_ankle_kp: tuple[float, float] = (20.0, 10.0)  # pitch, roll: a nearly free ankle, a pendulum pivot
    stance_ankle_kd: tuple[float, float] = (2.0, 2.0)
    # --- estimation
    velocity_filter_gain: float = 0.5  # per tick, weight of the kinematic COM-rate measurement
    velocity_innovation_limit: float = 0.15  # m/s per tick a measurement may move the estimate
    # --- balance feedback on the pelvis
    attitude_gain: float = 0.3  # rad/rad; stance hip rotates the pelvis against measured roll error
    pitch_gain: float = 0.3  # rad/rad; the same for pitch
    attitude_rate_gain: float = 0.05  # rad/(rad/s)
    waist_yaw_damping: float = 0.0  # N*m per rad/s of pelvis yaw rate, applied at the waist
    yaw_gain: float = 0.5  # rad/rad; stance hip yaw holds the pelvis heading
    # --- motor commands
    leg_kp: float = 250.0
    leg_kd: float = 5.0
    arm_kp: float = 80.0
    arm_kd: float = 3.0
    waist_kp: float = 100.0
    waist_kd: float = 4.0
    gravity_ff: bool = True
    velocity_ff: bool = True  # swing leg: inverse dynamics of its planned curve, plus kd * qd_des
    ik_iterations: int = 3
    min_knee_bend: float = 0.15  # rad; sole targets beyond the reach this leaves are pulled back
    swing_pitch_weight: float = 1e-4  # IK weight of swing-foot pitch: it gives way when the ankle hits its stop
    swing_point_x: float = 0.0  # m, foot frame: the swing foot is steered by this sole point (0: below the ankle)
    swing_inertia: float = 0.0  # scale of the swing leg's inertial feed-forward (measured: 1.0 adds lateral error)
    swing_kp: float = 400.0  # hip and knee stiffness of the swing leg (the hip otherwise lags 0.07 rad at landing)
    landing_kp: float = 400.0  # hip and knee stiffness of the swing leg at touchdown
    landing_reach_margin: float = 0.005  # m a landing leg may reach beyond its standing length
    swing_time_lead: float = 1.0  # ticks the swing target runs ahead of the schedule (PD lag)
    swing_lead: float = 1.0  # control periods of pelvis motion the swing-foot target anticipates
    swing_blend_ticks: int = 4  # ticks to hand a lifted foot from the commanded to the measured pelvis frame

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, float) and v != v:
                raise ValueError(f"{f.name} is NaN")
        if self.control_dt <= 0.0:
            raise ValueError(f"control_dt must be > 0, got {self.control_dt}")
        for name in ("step_time", "double_support_time", "prelude_time"):
            ticks = getattr(self, name) / self.control_dt
            if abs(ticks - round(ticks)) > 1e-6:
                raise ValueError(f"{name} ({getattr(self, name)}) must be a whole multiple of control_dt")
        if self.ss_ticks < 5:
            raise ValueError("step_time - double_support_time must leave at least 5 ticks of single support")

    @property
    def step_ticks(self) -> int:
        return round(self.step_time / self.control_dt)

    @property
    def ds_ticks(self) -> int:
        return round(self.double_support_time / self.control_dt)

    @property
    def ss_ticks(self) -> int:
        return self.step_ticks - self.ds_ticks

    @property
    def prelude_ticks(self) -> int:
        return round(self.prelude_time / self.control_dt)
