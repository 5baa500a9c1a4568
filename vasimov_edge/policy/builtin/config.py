"""Every tunable of the built-in walker in one frozen dataclass, with the reason for each default.

Numbers marked "measured" were tuned on the bench (``vasimov_tools.walk_bench``, several initial conditions); the rest
follow from the geometry of the fact-sheet model (foot 0.167 m x 0.04-0.056 m, ankle roll +/-0.1 rad, ankle pitch
+/-0.35 rad around a -0.30 stand angle, hips 0.215 m apart, pelvis ~0.61 m) or from the first model-based probe's
notes (``locomotion_notes.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from vasimov.control_rate import CONTROL_DT


@dataclass(frozen=True)
class ControllerConfig:
    """Parameters of :class:`~vasimov_edge.policy.builtin.controller.BuiltinController`."""

    control_dt: float = CONTROL_DT  # s; the firmware runs backends at 50 Hz (vasimov.control_rate)
    # --- posture
    # m of the pelvis above the soles. The flat-foot leg only spans ~0.605..0.635 (ankle dorsiflexion stops at
    # -0.35, knee straight at 0.635), so both standing and walking sit low in that window.
    pelvis_height: float = 0.615
    stand_pelvis_height: float = 0.615  # m; standing (measured: 0.62 loses the 80 N front push)
    height_rate: float = 0.03  # m/s; pelvis height changes at most this fast
    # s over which arms, waist and neck move from the pose held when MOVE begins to the stand pose (MOVE may start
    # mid STAND ramp, with the arms still far from it)
    takeover_time: float = 1.0
    # m the pelvis rises in the middle of single support: the stance leg straightens while the swing leg passes
    # under the hip, where a flat foot has the least room (measured: helps the 0.3 m/s gait keep its toes clear)
    single_support_rise: float = 0.01
    # rad the pelvis rolls up on the swing side in mid single support, lifting the swing hip for toe clearance
    # (measured: 0.02-0.04 made turning pass 3/3 but forward 0.3 fall; off by default)
    hip_hike: float = 0.0
    torso_pitch: float = 0.0  # rad; desired pelvis pitch (forward lean positive)
    # per tick, in double support: how far a sole's pitch target moves toward the pitch the sole is measured at (IMU
    # attitude and leg encoders): both soles standing, the one that has just landed walking; the swing sole lands at
    # its stance sole's. 0 (the default): the soles are held flat, as the gait's flat-ground plan has them. On a ramp
    # the stance ankle then holds the sole against the ramp and tips the body (2026-12-07, envelope slope_10_up: the
    # pelvis pitched back 4-8 deg and the robot fell backward two steps onto the ramp). Measured with the heights
    # below, docs/scenes.md: 5 deg ramps walk 2-3 m instead of falling within 1.1 m; 10 and 15 deg still fall within
    # 1.3 m; ice, which any change to the controller moves by seconds, fell sooner in every setting tried.
    ground_pitch_follow: float = 0.0
    max_ground_pitch: float = 0.3  # rad; the followed sole pitch is clipped to this
    # footholds and the pelvis at the ground's height: each foothold at the stance sole's height continued along the
    # followed ground pitch (integrated from that pitch, not measured: a sole's measured height moves by a centimetre
    # as it rolls), the pelvis kept above the soles' mean height. Off (the default): one level floor at z = 0.
    ground_height_follow: bool = False
    com_x_offset: float = 0.015  # m; standing COM ahead of the sole centre (the stand pose rests 3.5 cm ahead)
    # m the walking ZMP sits ahead of the sole centre. At 0 the robot leans back and loads its heels within a few
    # steps; 0.02-0.04 all walk the straight scenarios. But pressure near the toes costs yaw grip: the sole's four
    # contact points hold ~17 N*m of yaw when all are loaded and ~5 N*m on the two toe points, and over long random
    # sequences the falls (about one per 80 min at 0.03) each followed one or two steps whose stance sole spun
    # 0.07-0.19 rad. Measured 2026-12-02 (4 random sequences of 150 s, 1,469 steps; spin = the stance sole's
    # measured yaw change over its single support): 0.04 -> 67 steps spun > 0.04 rad, one fell; 0.03 -> 30, p95
    # 0.033 rad; 0.02 -> 4; 0.015 -> 1, p95 0.0015 rad; 0.01 -> 0, but turning 0.5 rad/s then falls short of its
    # heading (3.72 of 4 rad). Walking fast forward needs the pressure further ahead: ``zmp_x_offset_fast``.
    zmp_x_offset: float = 0.015
    # m; the same at the forward command limit, blended in over the last 0.1 m/s below it (measured: 0.015 all the
    # way walks forward 0.3 m/s 2.41 m in 10 s, 0.03 walks 2.53 m; 2.4 needed)
    zmp_x_offset_fast: float = 0.03
    # m; the same when walking backward (measured: +0.03 or +0.01 puts the pressure on the toes and backward walking
    # falls within 4 s; 0 and -0.02 both walk). Blended in as the commanded vx goes from 0 to -0.2 m/s (the backward
    # limit): reached already at -0.1 m/s, a slow backward walk spun its heel-loaded soles (footsteps.py).
    zmp_x_offset_backward: float = -0.01
    # --- gait timing
    step_time: float = 0.40  # s per step (double + single support); 20 ticks (probe: 0.4 walked)
    double_support_time: float = 0.10  # s with both feet loaded while the ZMP moves to the new foot
    # s of weight shift onto the first stance foot before the first lift (measured: 0.4 fell in 1 of 5 starts;
    # 0.6 walks too, but 3 s walks cover less ground)
    prelude_time: float = 0.50
    step_width: float = 0.20  # m between sole centres (probe: 0.15 fell, 0.2 walked)
    min_step_width: float = 0.15  # m; inner limit (knee capsules 0.08 m wide)
    max_step_width: float = 0.36  # m
    max_step_length: float = 0.22  # m per step along the heading (forward or back)
    max_step_yaw: float = 0.35  # rad per step
    heading_gain: float = 0.5  # per step: fraction of the heading error the next foothold turns away (probe: 0.5)
    max_heading_step: float = 0.1  # rad; the per-step heading correction is clipped (a slipped foot is no command)
    # --- swing foot
    swing_height: float = 0.02  # m apex of the steered swing point (measured: 0.03+ folds the knee into the stop)
    # foot-frame x (m, from the ankle) of the point the swing IK steers; 0 = below the ankle, so the foot pitches
    # toe-down only as far as the ankle's dorsiflexion stop forces it
    swing_point_x: float = 0.0
    swing_pitch_weight: float = 0.01  # IK weight of swing-foot pitch (1e-4 made the IK jump between branches)
    swing_rise: float = 0.45  # fraction of single support to reach the apex (min-jerk)
    swing_fall: float = 0.45  # fraction of single support to come down from the apex (min-jerk)
    swing_land_phase: float = 0.9  # fraction of single support at which the swing foot is back on the ground
    swing_x0: float = 0.0  # fraction of single support where the horizontal transfer starts...
    swing_x1: float = 0.9  # ...and ends
    landing_adapt: float = 0.3  # per step: integral gain of the learned landing offset (PD lag lands feet long)
    # per step: integral gain of an extra offset per foot, on top of the shared one, used while strafing or turning
    # (the two feet's steps -- and their misses -- then differ). Measured: 0.3 makes turn 0.3 rad/s and strafing
    # +/-0.2 m/s pass 5 of 5 starts (0-2 of 5 without); always on, it breaks straight walking.
    landing_adapt_per_foot: float = 0.3
    # per step: fraction of the learned landing offsets forgotten when a part of the command ran down or reversed
    # since the last landing (0.05 m/s, 0.05 m/s or 0.2 rad/s count fully). The misses belong to the gait they were
    # learned on: 5 cm of "lands long" from 0.3 m/s forward, kept into a turn in place, aims the feet short and the
    # stance sole spins (measured: forward 0.3 -> turn -0.3 fell in 3 of 3 starts, with 0.8 none). 1.0: a change
    # forgets them entirely -- with the slower command slew below every change spans a step or more, and nothing of
    # the old gait's misses is worth keeping (measured with the other 2026-11-30 settings: random_20x3s falls at 31 s
    # with 0.8 and the old slew, walks 60 s with 1.0)
    landing_change_fade: float = 1.0
    landing_change_fade_per_foot: bool = True  # per-foot offsets too (strafe/turn misses kept into backward walking)
    # --- command handling
    command_deadband: tuple[float, float, float] = (0.02, 0.02, 0.05)  # below this the robot may stand
    # m/s^2, m/s^2, rad/s^2 slew of the used command. A command change then takes 1-3 steps instead of one, so the
    # body's momentum (which the plan does not see) keeps up with the plan. Measured over random sequences (seeds
    # 1-12, 60 s each, with the other 2026-11-30 settings): 0.3/0.3/1.0 fell in 1-3 of 12, 0.15/0.15/0.5 in 0 of 12;
    # forward 0.3 m/s still walks 2.46 m in 10 s (2.4 needed).
    command_rate: tuple[float, float, float] = (0.15, 0.15, 0.5)
    # fraction of its slew rate a growing command part gets while another part still runs down or reverses (more
    # than ``command_run_down_margin`` of its limit left): stop one gait, then start the next. 0: strictly one after
    # the other (forward -> turn in place: the turn starts once the forward part is nearly gone, so no turning step
    # is taken with the pressure on the toes, where the sole holds little yaw)
    command_build_while_slowing: float = 0.0
    command_run_down_margin: float = 0.1
    # forward, backward, sideways (m/s), turn (rad/s) the gait uses at most. Larger commands (the SDK allows
    # 0.4/0.4/0.8) are clipped: the robot walks slower than asked instead of falling. Measured: 0.4 forward and
    # backward fall within 3.2 s; 0.3 sideways and 0.8 rad/s turning walk alone, but as the scale of the combined
    # limit below they let strafe/turn mixes (and changes through them) scuff the swing foot and spin the stance
    # sole (random sequences: 0.3/0.8 fell in 3-4 of 12 seeds, 0.2/0.5 in 1-3 of 12 before the slew change).
    # 0.2 m/s sideways and 0.5 rad/s still cover the strafe 0.2 and turn 0.3 (and goal turn 0.5) scenarios.
    # Sideways 0.18 since 2026-12-07 (docs/bench-envelope.md, "A lower sideways limit"): the five suites, 131
    # scenarios, 57 -> 51 falls, every one of the six `sequences` falls gone and nothing else changed; 80 held-out
    # sequences (other seeds) 6 -> 5 falls (0.16: 4); 0.16 fell more over the suites (53; 2 in `sequences`) and
    # walks the strafe 0.2 scenarios short.
    command_limit: tuple[float, float, float, float] = (0.3, 0.2, 0.18, 0.5)
    # sum of the command's parts as fractions of their limits allowed when several are equally large (a single part
    # may use its whole range; see command_combined_exponent); a combined command beyond it is scaled down as a
    # whole. Measured: 0.15 m/s forward + 0.1 sideways + 0.2 rad/s (sum 1.08) falls at 6.7 s, scaled to 0.7 it walks
    # 10 s; each part alone walks. random_20x3s: 0.7 with a saturated part allowing the rest up to 1.0 falls at 6.9 s.
    # Random sequences (seeds 1-24 x settle 1.0/1.04/1.1, 60 s each, with the other 2026-11-30 settings): 0.5 fell in 5
    # of 72 (swing foot scuffing, stance sole spinning in strafe/turn mixes and their reversals), 0.4 in 2 of 72,
    # 0.35 in 1 of 72 (unseen settle times 1.02/1.07: 0.5 fell in 2 of 48, 0.4 in 1 of 48); single-part commands
    # (the forward/backward/strafe/turn scenarios) are unaffected. 2026-12 (issue 10's soak): long sequences of 10 s
    # random mixed holds still fell with 0.4 -- seeds 1-6, 150 s each: 3 of 6 in (0.3, 0.2, 0.5), 2 of 6 in the SDK's
    # (0.4, 0.4, 0.8) -- a few steps after a change to a slow mixed command (e.g. 0.08 m/s forward + 0.06 sideways),
    # whose landing misses then grow step by step (2 -> 8 cm, along or across) until the capture point leaves the
    # soles or the swing foot touches down early and the unloaded stance sole spins; from a fresh start the same
    # command settles within 4 steps. 0.3: 2 of 6 (other seeds) and 0 of 6: fewer, not none. (Not learning
    # landing misses until 1 step after a change, each clipped to 3 cm, instead: 2 of 2 and 0 of 2, no better.)
    # The soak's own sequence (bench/soak.py, seed 0: 180 holds in the SDK envelope) fell at 125 s with 0.4, at
    # 641 s with 0.3.
    command_combined_limit: float = 0.3
    # per step: integral gain of a stride-length correction from leg odometry (the body's measured advance per step
    # against the commanded one): the capture-point blend and landing misses otherwise walk ~10 % short. The
    # correction only lengthens, is learned at a steady command only, is clipped to ``stride_adapt_limit`` of the
    # commanded stride (so it vanishes with the command) and fades out toward the forward limit. Measured over 5
    # starts: forward 0.2 m/s walks 1.90-1.95 m in 10 s instead of 1.54-1.68 m.
    stride_adapt: float = 0.2
    stride_adapt_limit: float = 0.25
    # how much more strictly a command with several parts is scaled down: the allowed sum of the parts' fractions
    # is command_combined_limit + (1 - command_combined_limit) * (largest part / sum) ** this (0: one saturated part
    # lets the others add up to its whole range; measured: 2 -> random_20x3s walks 25-27 s, 1 and 3 fall sooner)
    command_combined_exponent: float = 2.0
    # hold the slewed command inside the combined limit too: going from one command to another never passes through
    # a combination beyond it (measured: random_20x3s falls at 25.9-27.2 s over 5 starts, without 24.5-26.8 s)
    limit_slewed_command: bool = True
    stop_steps: int = 2  # steps taken with a zero command before standing still
    step_in_place: bool = False  # keep stepping at zero command instead of standing
    # --- ZMP preview (standing and walking)
    preview_time: float = 1.6  # s
    preview_r: float = 1e-6  # jerk weight (ZMP weight 1)
    stand_dcm_gain: tuple[float, float] = (1.0, 1.0)  # m/m: COM command offset against DCM error (standing)
    walk_dcm_gain: tuple[float, float] = (1.0, 1.0)  # the same while walking
    # per tick: how far the preview's reference state is pulled toward the estimated COM state while walking. The
    # plan then stays consistent with the body; without it a few long landings put the planned COM 8-10 cm behind
    # the new foot and the preview asks for a CoP behind the heel (measured: 0.1; 0.05 and 0.15 fall sooner)
    ref_pull: float = 0.1
    # fraction of the capture-point foothold (from the predicted DCM) blended into the command's nominal foothold.
    # Measured over 5 starts: 0 -> forward 0.3 m/s falls in 1 of 5 (and the 3 s walk-and-stop in 1 of 5); 0.15-0.2
    # -> no falls, ~10 % slower; 0.35+ -> no falls but too slow for the 10 s distance criteria.
    dcm_step_gain: float = 0.2
    # the same across the walk. Sideways, stepping is the only balance a 4-5 cm wide sole with +/-0.1 rad of ankle
    # roll has, and a wider or narrower step costs no distance. Measured (random sequences, seeds 1-12): the falls
    # began with the body drifting toward the swing side, the swing foot touching down early and the unloaded
    # stance sole spinning; 0.2 -> 9 of 12 fell, 0.4 -> 5 of 12, 0.6 no better. With the limits and slew above,
    # seeds 1-24: 0.3 -> 5 of 24 fell, 0.35 -> 1 of 24, 0.4 -> 0 of 24 but strafing 0.2 m/s then falls in 3 of 10
    # start offsets (0.35: 0 of 10; the capture point then fights the strafe's own sideways drift).
    dcm_step_gain_lateral: float = 0.35
    # share of the measured capture point's lead over the planned one added to the capture point the foothold is
    # placed for while walking (recovering: all of it). At 0 the foothold follows the plan's capture point only, which
    # learns of the body through ``ref_pull`` alone: after a change to a slow mixed command the landing misses could
    # grow from step to step (see command_combined_limit). Measured (2026-12, 10 s random holds, 150 s, seeds 1-8):
    # 0 -> 0 of 8 fell in the SDK's (0.4, 0.4, 0.8), 3 of 8 in (0.3, 0.2, 0.5); 0.5 -> 0 of 8 and 0 of 8. 300 s
    # in (0.4, 0.4, 0.8), seeds 9-16: 0 -> 1 of 8 (seed 15 at 278 s), 0.5 -> 1 of 8 (seed 12 at 206 s): in the
    # SDK envelope, which ``command_combined_limit`` scales down more, no difference shows yet. Standard suite
    # distances within 5 %.
    dcm_step_error_share: float = 0.5
    swing_freeze: float = 0.1  # s before touchdown after which the foothold is no longer moved
    # --- push recovery (standing). A push that moves the capture point (estimated from IMU + leg kinematics, as
    # everything here) ``recovery_margin`` beyond the soles' toe or heel line starts recovery stepping at zero
    # command: stepping in place with a short weight shift, a higher swing and a larger capture-point share of the
    # foothold, until a touchdown leaves the capture point near the stand point again (then the normal stop). The
    # required pushes (80 N front, 100 N back, 0.15 s) peak 0.5 cm and 3 cm inside that line and do not trigger it.
    # Measured (0.15 s pelvis pushes, 5 start offsets): front 80 N -> 90 N survived (85, 90 N fell without); back
    # unchanged (115 N ok, 120 N falls either way); sideways it never triggers (the capture point leaves across the
    # feet, where only a crossing step could catch it). 150 N front/back still fall: the first step lands early on a
    # body already pitched ~0.1 rad over its toes, and the trailing foot, with 0.05 rad of ankle dorsiflexion left,
    # swings heel-up (0.4-0.6 rad) and catches its toe.
    push_recovery: bool = True
    recovery_margin: float = 0.0  # m (measured: -0.02..-0.04, an earlier step, loses pushes the stance rejects)
    recovery_prelude_time: float = 0.1  # s of weight shift before the first recovery step lifts (normal start: 0.5)
    recovery_step_time: float = 0.40  # s per recovery step (measured: 0.3 and 0.5 no better)
    recovery_double_support_time: float = 0.10
    # m; the walking 0.02 lets a toe pitched down by the forward-leaning body catch the floor mid-swing (measured:
    # 0.04 -> 90 N front survived, 0.02 -> 85 N falls; 0.06 no better)
    recovery_swing_height: float = 0.04
    # capture-point share of the foothold while recovering, along / across (measured along: 0.3-0.5 survive 90 N
    # front, 0.7-1.0 fall at 90 N: a full capture-point step overreaches on a body pitched over its toes)
    recovery_step_gain: float = 0.5
    recovery_step_gain_lateral: float = 0.35
    # m: recovery ends at a touchdown that leaves the capture point this close (along) to the stand point between the
    # feet and this far inside both sole centres (across)
    recovery_done_margin: float = 0.04
    recovery_max_steps: int = 6  # recovery steps at most before the normal stop sequence
    # --- estimation
    velocity_filter_gain: float = 0.5  # per tick, weight of the kinematic COM-rate measurement
    velocity_innovation_limit: float = 0.15  # m/s per tick a measurement may move the estimate
    # --- balance feedback on the pelvis
    attitude_gain: float = 0.3  # rad/rad; the loaded hip rotates the pelvis against measured roll error
    pitch_gain: float = 0.3  # rad/rad; the same for pitch (measured: 0.6 and 1.0 both fall sooner)
    attitude_rate_gain: float = 0.05  # rad/(rad/s)
    # rad of shoulder pitch per m the left foot is ahead of the right: the 3.35 kg arms swing against the legs and
    # carry yaw momentum the stance sole otherwise must resist (measured at 0.3 m/s: 2.0 cuts the stance hip-yaw
    # torque p90 from 12.9 to 8.9 N*m, but the gait is not yet more robust with it; off by default)
    arm_swing: float = 0.0
    waist_swing: float = 0.0  # rad of waist yaw per m the left foot is ahead of the right (same purpose)
    # --- motor commands
    leg_kp: float = 250.0
    swing_kp: float = 250.0  # swing leg (measured: 400/8 lands no better)
    swing_kd: float = 5.0
    leg_kd: float = 5.0
    arm_kp: float = 80.0
    arm_kd: float = 3.0
    waist_kp: float = 100.0
    waist_kd: float = 4.0
    gravity_ff: bool = True  # model gravity and planned ground force through the planned ZMP
    velocity_ff: bool = True  # kd * planned joint rate, so the plant's kd (target rate 0) does not brake the legs
    ik_iterations: int = 3
    min_knee_bend: float = 0.15  # rad; sole targets beyond the reach this leaves are pulled back

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
        ticks = self.recovery_prelude_time / self.control_dt
        if abs(ticks - round(ticks)) > 1e-6 or round(ticks) < 1:
            raise ValueError(f"recovery_prelude_time ({self.recovery_prelude_time}) must be a whole, nonzero "
                             "multiple of control_dt")
        if self.ds_ticks < 1:
            raise ValueError("double_support_time must be at least one control tick")
        if self.ss_ticks < 5:
            raise ValueError("step_time - double_support_time must leave at least 5 ticks of single support")
        if not (0.0 <= self.swing_x0 < self.swing_x1 <= 1.0):
            raise ValueError(f"need 0 <= swing_x0 < swing_x1 <= 1, got {self.swing_x0}, {self.swing_x1}")
        if not (0.0 < self.swing_land_phase <= 1.0 and self.swing_rise > 0.0 and self.swing_fall > 0.0):
            raise ValueError("swing_land_phase must be in (0, 1] and swing_rise, swing_fall > 0")
        if not (0.0 <= self.ref_pull <= 1.0 and 0.0 <= self.dcm_step_gain <= 1.0
                and 0.0 <= self.dcm_step_gain_lateral <= 1.0 and 0.0 <= self.dcm_step_error_share <= 1.0
                and 0.0 <= self.command_build_while_slowing <= 1.0
                and 0.0 <= self.recovery_step_gain <= 1.0 and 0.0 <= self.recovery_step_gain_lateral <= 1.0
                and 0.0 <= self.ground_pitch_follow <= 1.0):
            raise ValueError("ref_pull, dcm_step_gain(_lateral), dcm_step_error_share, command_build_while_slowing, "
                             "recovery_step_gain(_lateral) and ground_pitch_follow must be in [0, 1]")
        if not 0.0 <= self.max_ground_pitch < 0.5 * math.pi:
            raise ValueError(f"max_ground_pitch must be in [0, pi/2) rad, got {self.max_ground_pitch}")

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
