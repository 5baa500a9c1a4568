"""Walker v2 settings. Geometry and limits come from the model; what is left are the gait's few design choices.

Each value says where it comes from: the SDK contract, the model, a reference (``../shared/reference``), or a
short documented bench comparison (docs/walker.md, "settings").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vasimov.control_rate import CONTROL_DT


@dataclass(frozen=True)
class WalkerConfig:
    dt: float = CONTROL_DT  # s, the firmware's 50 Hz policy tick
    # LIPM: COM height of the default pose with the soles on the floor (0.630 m from the model) lowered a little for
    # ankle-pitch margin (locomotion_notes: at pelvis 0.60 the ankle hits its -0.35 stop)
    com_height: float = 0.625
    # command: the SDK envelope, used as given; acceleration limits reach half of a full step change in 0.25 s
    command_limit: tuple[float, float, float] = (0.4, 0.4, 0.8)
    accel: tuple[float, float, float] = (1.0, 1.0, 2.0)  # m/s^2, m/s^2, rad/s^2
    dead_band: float = 0.01
    # gait (locomotion_notes: 0.4 s steps with 0.1 s double support walked; 0.2 m width; 0.15 m fell)
    step_time: float = 0.40
    double_support: float = 0.10
    start_extra: float = 0.10  # s more double support on the first step out of stand (load shift from the middle)
    start_max: float = 0.6  # s: the first double support ends at the latest here
    start_tolerance: float = 0.03  # m: ... or as soon as the DCM is this near its nominal place
    start_dcm_gain: float = 6.0  # 1/s, DCM error decay while the first double support moves the load
    step_width: float = 0.20
    min_width: float = 0.15
    max_width: float = 0.38
    max_forward: float = 0.22
    max_backward: float = 0.18
    # m/s: most the steps' velocity changes from one step to the next; a bounded search (docs/walker.md) and a sweep of
    # 0.4 / 0.1 / 0.05: 0.05 kept 0.4 m/s sideways up for 8 s and lengthened forward/backward survival to 4.8 / 3.8 s
    step_dv: float = 0.05
    max_turn: float = 0.35  # rad per step
    heading_gain: float = 0.5  # share of the IMU heading error corrected by each step (locomotion_notes: 0.5)
    swing_height: float = 0.04
    # m below the floor the swing sole's height target reaches at touchdown (ramped in over the second half of the
    # swing). On flat ground the sole touches 1-2 ticks after the timed touchdown (the simulator's contact forces at
    # 94 touchdowns walking forward, backward, sideways and turning, 2026-12-07): a target a few mm down lands it on
    # time.
    # Opt-in: 0.004-0.008 walk the `sequences` suite 35-85 % longer but fall 1-3 more times in `envelope`
    # (docs/walker.md, "Landing below the floor")
    land_depth: float = 0.0
    lift_phase: float = 0.1  # fraction of the swing spent lifting before the foot travels
    land_phase: float = 0.1  # fraction spent setting down after it arrives
    min_swing_remaining: float = 0.12  # s: the earliest touchdown timing adaptation may ask for
    # balance
    zmp_x: float = 0.0  # m ahead of the sole's centre where the ZMP reference sits
    zmp_margin: float = 0.015  # m kept from the sole's toe/heel line
    zmp_margin_y: float = 0.005
    dcm_gain: float = 3.0  # 1/s, DCM error decay (Englsberger 2015 use 1-5)
    com_pull: float = 0.2  # per tick, COM command state pulled toward the measured one
    vel_filter: float = 0.5  # per tick, COM velocity low-pass
    push_trigger: float = 0.03  # m the DCM may leave the soles' area before standing turns into stepping
    stop_dcm: float = 0.06  # m: walking stops at a touchdown with zero command and the DCM this near the middle
    # the other tasks' weights on the same soft scale (the soles' positions: 1000). COM: 10 (docs/walker.md, "COM
    # task weight"; with the sole weights below, 5 / 7 / 20 / 30 each fell more over the 131 scenarios: 116 / 117 /
    # 115 / 118 against 110). Trunk orientation: 0.5, from a search over every suite (docs/walker.md, "Trunk
    # weight"): 0.1 / 0.2 / 0.3 / 0.5 / 1 / 3 / 10 fell in 117 / 110 / 110 / 108 / 110 / 115 / 117; 0.5 falls no more
    # and passes no fewer than 1 in any suite
    com_weight: float = 10.0
    trunk_weight: float = 0.5
    # sole orientation: the weight of each sole task's orientation against its position (1000 on placo's soft
    # scale). placo's default, 1.0 for both, let the stance sole tilt under the COM task's pull and held the swing
    # sole against the body. A grid search on the bench over every suite (docs/walker.md, "Sole orientation
    # weights"): of 8 settings, swing 0.4 / stance 5 and 0.5 / 7 beat 1 / 1 on every suite in falls, survival and
    # passes, 0.4 / 5 the more (131 scenarios: falls 119 -> 110, survival 1222 -> 1548 s, passed 7 -> 13); swing
    # 0.3 / stance 10 survived longest (1746 s) but less on the viewer courses
    stance_orientation_weight: float = 5.0
    swing_orientation_weight: float = 0.4
    trunk_pitch: float = 0.0  # rad, pelvis pitched forward (frees ankle dorsiflexion: the COM moves ahead of the hips)
    # motor gains (the fact sheet's stand gains on the legs; the policy gains elsewhere)
    gravity_ff: bool = True
    # heel-off: the stance sole rolls onto its toe line (heel up) by ``heel_off_gain`` rad per m the COM command is
    # beyond ``heel_off_start`` ahead of the sole centre, up to ``heel_off_max``. The model's stand pose has the ankle
    # at -0.30 of its -0.35 rad dorsiflexion stop, and placo's IK puts the trailing ankle on that stop at this COM
    # height for any fore-aft split of the feet from 0.08 m: a flat stance sole cannot let the body pass over it.
    # Found by a documented search on the bench (docs/walker.md, "Heel-off"): off 338 survival-s of 638, 31 falls of
    # 40 (envelope + standard); 4.0 / 0.05 m: 370 s, 28 falls, forward 0.3 and 0.4 m/s walk their 10 s. Only while
    # the steps are sized for at least ``heel_off_min_speed`` forward (or back, with ``toe_landing``): that is when
    # the body passes over the stance sole; strafing or turning, a rolled sole only loses the ankle's authority
    # (rolling there too, strafing left fell at 9.0 s where flat soles walked its 10 s)
    heel_off_gain: float = 4.0
    heel_off_start: float = 0.05
    # rad. With toe landing, over every suite (131 scenarios; docs/walker.md, "Toe landing"): 0.2 / 0.3 / 0.4 / 0.5
    # fell in 108 / 108 / 108 / 107 and passed 13 / 14 / 14 / 15, within the landscape's noise; 0.5 takes backward
    # 0.4 m/s down at 5.8 s where 0.3 walks its 8 s, so 0.3 stays
    heel_off_max: float = 0.3
    heel_off_min_speed: float = 0.05  # m/s
    # toe landing: walking backward (steps sized for at least ``heel_off_min_speed`` back) the new sole lands behind
    # the body, where a flat sole needs more dorsiflexion than the ankle's stop, and its heel takes the load with the
    # ZMP on the heel line, so the body ran away backward. Over the second half of its swing the sole rolls onto its
    # toe line by the roll heel-off would give it at the foothold, and as the stance sole it keeps that rule,
    # flattening as the body passes over it. Over every suite: falls 108 -> 108, survival 1646 -> 1840 s, no suite
    # worse; backward 0.4 m/s walks its 8 s (fell at 4.4 s) (docs/walker.md, "Toe landing")
    toe_landing: bool = True
    # ground following (both off by default; the plan is one level floor at z = 0). ``ground_pitch_follow``: per tick,
    # how far a flat-resting sole's pitch target moves toward the pitch it is measured at (IMU attitude and leg
    # encoders): both soles standing, the stance sole in single support walking; the swing sole lands at its stance
    # sole's. ``ground_height_follow``: footholds at the stance sole's height continued along that pitch, and the COM
    # height above the soles' mean. The built-in walker has options of these names; it follows the new sole in double
    # support instead and has no dead band (docs/walker.md, "Ground following on slopes").
    ground_pitch_follow: float = 0.0
    max_ground_pitch: float = 0.3  # rad
    # rad: a measured sole pitch within this of level is read as level ground (so the followed pitch returns to 0).
    # The stance sole in single support on the level floor, default walker, forward 0.3 / backward 0.2 / strafe 0.2 /
    # turn 0.3: 5th-95th percentile -0.26..1.43 deg; followed without it, the soles' own tilt fed back (forward 0.3
    # fell at 7.4 s). 0.05 rad (2.9 deg) is twice the widest of those.
    ground_pitch_deadband: float = 0.05
    ground_height_follow: bool = False

    def __post_init__(self) -> None:
        # the ground-following options reach here from `--policy builtin-v2:KEY=VALUE`: a value the rules cannot use
        # is refused by name, not walked with
        if not 0.0 <= self.ground_pitch_follow <= 1.0:
            raise ValueError(f"ground_pitch_follow must be in [0, 1], got {self.ground_pitch_follow}")
        if not 0.0 <= self.max_ground_pitch < 0.5 * math.pi:
            raise ValueError(f"max_ground_pitch must be in [0, pi/2) rad, got {self.max_ground_pitch}")
        if not 0.0 <= self.land_depth <= self.swing_height:
            raise ValueError(f"land_depth must be in [0, swing_height = {self.swing_height}] m, got {self.land_depth}")
        if not self.ground_pitch_deadband >= 0.0:
            raise ValueError(f"ground_pitch_deadband must be >= 0 rad, got {self.ground_pitch_deadband}")
