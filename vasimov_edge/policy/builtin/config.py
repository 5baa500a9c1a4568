"""Every tunable of the built-in walker in one frozen dataclass, with the reason for each default.

Numbers marked "measured" were tuned on the bench (``vasimov.walk_bench``); the rest follow from the geometry of
the fact-sheet model (foot 0.167 m x 0.04-0.056 m, hips 0.215 m apart, pelvis ~0.61 m) or from the first
model-based probe's notes (``locomotion_notes.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class ControllerConfig:
    """Parameters of :class:`~vasimov_edge.policy.builtin.controller.BuiltinController`."""

    control_dt: float = 0.02  # s; the firmware runs backends at 50 Hz
    # --- posture
    pelvis_height: float = 0.615  # m above the soles; at 0.60 the ankle reaches its -0.35 stop (probe notes)
    height_ramp_time: float = 0.5  # s to move from the measured to the nominal height when activated
    torso_pitch: float = 0.0  # rad; desired pelvis pitch (forward lean positive)
    com_x_offset: float = 0.0  # m; where the COM rests relative to the sole centre when standing
    # --- gait timing
    step_time: float = 0.40  # s per step (single + double support); 20 ticks
    double_support_time: float = 0.10  # s of each step with both feet loaded
    step_width: float = 0.21  # m between sole centres; 0.15 fell in the probe, the stand pose has 0.215
    min_step_width: float = 0.14  # m; inner limit when strafing (knee capsules 0.08 m wide)
    max_step_width: float = 0.36  # m
    swing_height: float = 0.04  # m apex of the swing sole
    max_step_length: float = 0.22  # m per step along the heading (forward or back)
    max_step_lateral: float = 0.12  # m extra width per step
    max_step_yaw: float = 0.35  # rad per step
    # --- command handling
    command_deadband: tuple[float, float, float] = (0.02, 0.02, 0.05)  # below this the robot stands
    command_rate: tuple[float, float, float] = (0.6, 0.6, 1.5)  # m/s^2, m/s^2, rad/s^2 slew of the used command
    stop_steps: int = 2  # steps taken with a zero command before standing still
    step_in_place: bool = False  # keep stepping at zero command instead of standing
    # --- COM reference (ZMP preview)
    preview_time: float = 1.6  # s
    preview_r: float = 1e-6  # jerk weight (ZMP weight 1)
    zmp_x_offset: float = 0.0  # m ahead of the sole centre for the single-support ZMP
    zmp_y_inset: float = 0.01  # m towards the other foot for the single-support ZMP
    state_blend: float = 0.0  # per tick, pulls the COM reference towards the measured COM (0: open loop)
    # --- balance feedback
    attitude_gain: float = 1.0  # rad/rad; stance hip rotates the pelvis against measured roll/pitch error
    attitude_rate_gain: float = 0.05  # rad/(rad/s)
    yaw_gain: float = 1.0  # rad/rad; stance hip yaw holds the pelvis heading against foot spin
    dcm_step_gain: float = 1.0  # fraction of the predicted DCM error at touchdown moved into the footstep
    stand_dcm_gain: tuple[float, float] = (1.0, 1.0)  # m/m: COM command offset against DCM error, standing
    walk_dcm_gain: tuple[float, float] = (0.3, 0.3)  # the same during walking (ankle strategy)
    recovery_dcm: tuple[float, float] = (0.07, 0.06)  # m; standing DCM error that triggers stepping
    # --- motor commands
    leg_kp: float = 250.0
    leg_kd: float = 5.0
    arm_kp: float = 80.0
    arm_kd: float = 3.0
    waist_kp: float = 100.0
    waist_kd: float = 4.0
    gravity_ff: bool = True
    velocity_ff: bool = True  # add kd * qd_des so moving targets do not lag
    arm_swing: float = 0.0  # rad of shoulder pitch per m of foot advance (counters swing-leg yaw)
    ik_iterations: int = 3
    min_knee_bend: float = 0.15  # rad; sole targets beyond the reach this leaves are pulled back
    swing_pitch_weight: float = 1e-4  # IK weight of swing-foot pitch: it gives way when the ankle hits its stop
    swing_point_x: float = 0.0  # m, foot frame: the swing foot is steered by this sole point (0: below the ankle)
    swing_blend_ticks: int = 4  # ticks to hand a lifted foot from the commanded to the measured pelvis frame

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, float) and v != v:
                raise ValueError(f"{f.name} is NaN")
        if self.control_dt <= 0.0:
            raise ValueError(f"control_dt must be > 0, got {self.control_dt}")
        ticks = self.step_time / self.control_dt
        ds_ticks = self.double_support_time / self.control_dt
        if abs(ticks - round(ticks)) > 1e-6 or abs(ds_ticks - round(ds_ticks)) > 1e-6:
            raise ValueError(
                f"step_time ({self.step_time}) and double_support_time ({self.double_support_time}) must be whole "
                f"multiples of control_dt ({self.control_dt})"
            )
        if not 0 <= round(ds_ticks) < round(ticks) - 2:
            raise ValueError("double_support_time must leave at least 3 ticks of single support")
        if not 0.0 <= self.state_blend <= 1.0:
            raise ValueError(f"state_blend must be in [0, 1], got {self.state_blend}")

    @property
    def step_ticks(self) -> int:
        return round(self.step_time / self.control_dt)

    @property
    def ds_ticks(self) -> int:
        return round(self.double_support_time / self.control_dt)
