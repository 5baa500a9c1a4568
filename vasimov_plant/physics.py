"""The plant's physics core: one MuJoCo model and data, a motor model, and nothing that knows about ROS.

``PlantCore`` is driven purely by method calls (command in, ``step()``, readings out) so that the plant node, the
lockstep tests and offline scripts all exercise the same code. Divergence never leaks out as NaN: every step ends
with a check that turns non-finite state, any MuJoCo warning or an absurd speed into a typed ``PhysicsError`` and
latches the core until ``reset()``, because a twin that silently keeps integrating garbage is worse than one that
stops.

Step ordering: a step is ``mj_step2`` (actuation, constraint solve, integration) followed by ``mj_step1``
(kinematics and position/velocity sensors of the *new* state). After ``step()`` the joint state, IMU orientation,
gyro and velocimeter therefore all describe the same instant, and the next step's torques are computed from it.
The accelerometer and the contact forces need the constraint solve, so they describe the step just taken
(one physics step, 5 ms, older), which is also when the reported applied torques acted.

Why one file past 400 lines: `PlantCore` owns one MuJoCo model/data pair, and stepping, commands, the gantry, pushes,
sensor faults and readings all act on that one state. What has a life of its own is elsewhere: the motor law
(`motor_model.py`), realism (`realism.py`), the ground (`vasimov/model/terrain.py`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import mujoco
import numpy as np
from numpy.typing import ArrayLike, NDArray

from vasimov import frames
from vasimov.joints import NUM_JOINTS, RANGE_HI, RANGE_LO, SIM_NAMES
from vasimov.model.mjcf import (
    DEFAULT_GANTRY_HEIGHT,
    FLOOR_GEOM,
    FOOT_BODIES,
    FREE_JOINT,
    GANTRY_EQUALITY,
    ROOT_BODY,
    SENSOR_ACCEL,
    SENSOR_GYRO,
    SENSOR_QUAT,
    SENSOR_VELOCIMETER,
    load_model,
)
from vasimov.model.terrain import SCENE_GROUP, ground_geom_ids
from vasimov.realism import RealismParams
from vasimov.scenes import Scene, parse_scene
from vasimov_plant.motor_model import default_motor_model
from vasimov_plant.realism import RealismModel

# Any |qvel| entry above this (rad/s or m/s) is treated as divergence: the fastest Asimov 1 motor peaks at
# 12.57 rad/s, so 200 is far outside anything the robot can do yet far below where MuJoCo itself gives up (1e10).
DEFAULT_MAX_SPEED = 200.0
# m/s the gantry hook comes down at most while the robot stands up on it. The feet need ~8 mm at the start (straight
# limp legs) and ~12 mm/s while the STAND ramp bends the knees; 0.1 m/s follows that with room, and is still slow
# enough that the hook never sets the robot down harder than a crane operator would.
GANTRY_LOWER_RATE = 0.1
_RANGE_TOL = 1e-9
_ZERO3 = np.zeros(3)
_ZERO3.setflags(write=False)
_WARNING_NAMES = {int(v): name for name, v in mujoco.mjtWarning.__members__.items() if name != "mjNWARNING"}


class PhysicsError(RuntimeError):
    """The simulation diverged (or was already faulted). ``kind`` names the check that fired."""

    KINDS = ("faulted", "non_finite", "mujoco_warning", "speed")

    def __init__(self, kind: str, message: str) -> None:
        if kind not in self.KINDS:
            raise ValueError(f"unknown PhysicsError kind {kind!r}; valid: {', '.join(self.KINDS)}")
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class SensorReading:
    """What the robot's own sensors report (joint-index order). IMU vectors are in the IMU (= pelvis) frame."""

    q: NDArray[np.float64]  # (25,) rad
    qd: NDArray[np.float64]  # (25,) rad/s
    tau: NDArray[np.float64]  # (25,) N*m applied during the last step
    imu_quat: NDArray[np.float64]  # (4,) wxyz, IMU frame to world
    gyro: NDArray[np.float64]  # (3,) rad/s, body frame
    accel: NDArray[np.float64]  # (3,) m/s^2 specific force (+9.81 z at rest upright), body frame, last step
    gantry_engaged: bool
    time: float = 0.0  # s, simulation time of q/qd/imu_quat/gyro


@dataclass(frozen=True)
class GroundTruth:
    """Simulator-only knowledge (no robot sensor measures it): for evaluation and visualisation, never control."""

    base_pos: NDArray[np.float64]  # (3,) world, pelvis_link origin
    base_quat: NDArray[np.float64]  # (4,) wxyz
    base_lin_vel: NDArray[np.float64]  # (3,) world
    base_ang_vel: NDArray[np.float64]  # (3,) world
    base_yaw: float
    left_contact: bool
    right_contact: bool
    left_force: float  # N, normal force of left foot spheres on the floor (last step)
    right_force: float
    time: float = 0.0


@dataclass(frozen=True)
class PlantIndex:
    """Every id and address the core needs, resolved once by name (nothing downstream uses raw offsets)."""

    qpos_adr: NDArray[np.intp]  # (25,) joint-index order
    dof_adr: NDArray[np.intp]
    actuator_id: NDArray[np.intp]
    base_qpos_adr: int
    base_dof_adr: int
    base_body: int
    gyro_adr: int
    accel_adr: int
    quat_adr: int
    velocimeter_adr: int
    gantry_eq: int  # -1 when the model has no gantry weld
    floor_geom: int  # -1 when the model has no floor
    geom_ground: NDArray[np.bool_]  # (ngeom,) the floor and every scene geom (colliding geoms of the world body)
    geom_foot_side: NDArray[np.int8]  # (ngeom,) 0 = not a foot contact geom, 1 = left, 2 = right
    body_ids: dict[str, int] = field(repr=False)

    @classmethod
    def from_model(cls, model: mujoco.MjModel) -> PlantIndex:
        def jid(name: str) -> int:
            j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
            if j < 0:
                raise ValueError(f"model has no joint {name!r}")
            return j

        hinges = [jid(n) for n in SIM_NAMES]
        for n, j in zip(SIM_NAMES, hinges, strict=True):
            if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE:
                raise ValueError(f"joint {n!r} is not a hinge")
        acts = []
        for n in SIM_NAMES:
            a = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, n)
            if a < 0 or model.actuator_trnid[a, 0] != jid(n):
                raise ValueError(f"model has no motor actuator {n!r} driving joint {n!r}")
            acts.append(a)
        free = jid(FREE_JOINT)
        if model.jnt_type[free] != mujoco.mjtJoint.mjJNT_FREE:
            raise ValueError(f"{FREE_JOINT!r} must be a free joint")

        def sensor(name: str, dim: int) -> int:
            s = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, name)
            if s < 0 or model.sensor_dim[s] != dim:
                raise ValueError(f"model needs a {dim}-D sensor {name!r}")
            return int(model.sensor_adr[s])

        gantry = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_EQUALITY, GANTRY_EQUALITY)
        if gantry >= 0 and (
            model.eq_type[gantry] != mujoco.mjtEq.mjEQ_WELD
            or model.eq_obj1id[gantry] != 0
            or model.eq_obj2id[gantry] != model.jnt_bodyid[free]
        ):
            raise ValueError(f"equality {GANTRY_EQUALITY!r} must be a weld from world to {ROOT_BODY!r}")
        side = np.zeros(model.ngeom, dtype=np.int8)
        for k, body_name in enumerate(FOOT_BODIES.values(), start=1):
            b = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body_name)
            if b < 0:
                raise ValueError(f"model has no foot body {body_name!r}")
            collides = (model.geom_bodyid == b) & ((model.geom_contype | model.geom_conaffinity) != 0)
            side[collides] = k
        side.setflags(write=False)
        ground = np.zeros(model.ngeom, dtype=bool)
        ground[ground_geom_ids(model)] = True
        ground.setflags(write=False)
        body_ids = {mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b): b for b in range(1, model.nbody)}

        def frozen(values: list[int]) -> NDArray[np.intp]:
            arr = np.array(values, dtype=np.intp)
            arr.setflags(write=False)
            return arr

        return cls(
            qpos_adr=frozen([int(model.jnt_qposadr[j]) for j in hinges]),
            dof_adr=frozen([int(model.jnt_dofadr[j]) for j in hinges]),
            actuator_id=frozen(acts),
            base_qpos_adr=int(model.jnt_qposadr[free]),
            base_dof_adr=int(model.jnt_dofadr[free]),
            base_body=int(model.jnt_bodyid[free]),
            gyro_adr=sensor(SENSOR_GYRO, 3),
            accel_adr=sensor(SENSOR_ACCEL, 3),
            quat_adr=sensor(SENSOR_QUAT, 4),
            velocimeter_adr=sensor(SENSOR_VELOCIMETER, 3),
            gantry_eq=int(gantry),
            floor_geom=int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, FLOOR_GEOM)),
            geom_ground=ground,
            geom_foot_side=side,
            body_ids=body_ids,
        )


def _vector(name: str, value: ArrayLike, n: int = NUM_JOINTS) -> NDArray[np.float64]:
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        names = [SIM_NAMES[i] for i in np.flatnonzero(bad)] if n == NUM_JOINTS else list(np.flatnonzero(bad))
        raise ValueError(f"{name} must be finite; non-finite at {names}")
    return arr


@dataclass(frozen=True)
class MotorTargets:
    """A validated joint-space motor command (25-vectors, joint-index order): finite, gains >= 0."""

    position: NDArray[np.float64]
    velocity: NDArray[np.float64]
    kp: NDArray[np.float64]
    kd: NDArray[np.float64]
    torque_ff: NDArray[np.float64]


def validate_command(position: ArrayLike, velocity: ArrayLike, kp: ArrayLike, kd: ArrayLike,
                     torque_ff: ArrayLike) -> MotorTargets:
    """The one rule for a motor command the plant accepts: five finite 25-vectors, ``kp`` and ``kd`` >= 0.

    Raises ``ValueError`` naming the field and the joints. ``PlantCore.set_command`` applies it; the plant node
    applies it to every message it receives, before anything reaches physics (a message can come from anyone on
    the graph).
    """
    t = MotorTargets(_vector("position", position), _vector("velocity", velocity), _vector("kp", kp),
                     _vector("kd", kd), _vector("torque_ff", torque_ff))
    for name, g in (("kp", t.kp), ("kd", t.kd)):
        if (g < 0.0).any():
            raise ValueError(f"{name} must be >= 0; negative at {[SIM_NAMES[i] for i in np.flatnonzero(g < 0)]}")
    return t


class PlantCore:
    """Asimov 1 in MuJoCo: boots limp on a virtual gantry, steps at the model timestep, reports sensors and truth.

    A caller-supplied ``model`` must come from ``vasimov.model.build_mjcf`` (or match its names); ``reset()``
    writes the gantry target into that model's ``eq_data``, so do not share one ``MjModel`` between cores with
    different gantry heights.
    """

    def __init__(
        self,
        model: mujoco.MjModel | None = None,
        *,
        gantry_height: float = DEFAULT_GANTRY_HEIGHT,
        seed: int = 0,
        speed_torque_envelope: bool = False,
        max_speed: float = DEFAULT_MAX_SPEED,
        scene: Scene | None = None,
        realism: RealismParams | None = None,
    ) -> None:
        if not (np.isfinite(gantry_height) and gantry_height > 0.0):
            raise ValueError(f"gantry_height must be finite and > 0, got {gantry_height}")
        if not (np.isfinite(max_speed) and max_speed > 0.0):
            raise ValueError(f"max_speed must be finite and > 0, got {max_speed}")
        self.scene = parse_scene("") if scene is None else scene
        self.model = load_model(gantry_height=gantry_height, scene=self.scene) if model is None else model
        self.data = mujoco.MjData(self.model)
        self.index = PlantIndex.from_model(self.model)
        self.motor = default_motor_model(speed_torque_envelope=speed_torque_envelope)
        self.gantry_height = float(gantry_height)
        self.max_speed = float(max_speed)
        self.seed = int(seed)
        # Seeded generator for callers that randomise scenarios against this plant (pushes, noise); the core's
        # own dynamics are deterministic and draw nothing from it.
        self.rng = np.random.default_rng(self.seed)
        self._elliptic = self.model.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC

        n = NUM_JOINTS
        self._cmd_pos = np.zeros(n)
        self._cmd_vel = np.zeros(n)
        self._cmd_kp = np.zeros(n)
        self._cmd_kd = np.zeros(n)
        self._cmd_ff = np.zeros(n)
        self._q = np.zeros(n)
        self._qd = np.zeros(n)
        self._tau = np.zeros(n)
        self._pushes: dict[int, int] = {}  # body id -> physics steps left
        self._push_force: dict[int, NDArray[np.float64]] = {}  # body id -> force of its running push
        self._forces: dict[int, NDArray[np.float64]] = {}  # body id -> sustained force (until cleared or reset)
        self._foot_force = np.zeros(3)  # index 1 = left, 2 = right (matches geom_foot_side)
        self._warn_base = np.zeros_like(self.data.warning.number)
        self._faulted: PhysicsError | None = None
        self._step_count = 0
        # Injected sensor and actuator faults (``vasimov.faults``), cleared by ``reset()``: motors that stopped
        # answering (limp, their last reply held in the reading), a frozen IMU, encoder offsets.
        self._lost = np.zeros(n, dtype=bool)
        self._held_q = np.zeros(n)
        self._held_qd = np.zeros(n)
        self._held_tau = np.zeros(n)
        self._held_imu: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._encoder_offset = np.zeros(n)
        self._sensor_faults = False
        self._gantry_lowering = False
        feet = np.flatnonzero(self.index.geom_foot_side > 0)
        if not np.all(self.model.geom_type[feet] == mujoco.mjtGeom.mjGEOM_SPHERE):
            raise ValueError("the foot contact geoms must be spheres (the gantry lowers the robot onto them)")
        self._foot_geoms = feet
        # Sensor and actuator realism (vasimov.realism), None when off: then not one operation differs from a plant
        # without it. It randomises the model here, once per run, before the first boot.
        self.realism: RealismModel | None = None
        if realism is not None and realism.enabled:
            self.realism = RealismModel(realism, self.seed, self.model, self.index.dof_adr)
            self.realism.randomise_model(self.data)
        self.reset()

    # -- properties ----------------------------------------------------------------------------------------------
    @property
    def dt(self) -> float:
        return float(self.model.opt.timestep)

    @property
    def time(self) -> float:
        return float(self.data.time)

    @property
    def step_count(self) -> int:
        return self._step_count

    @property
    def faulted(self) -> bool:
        return self._faulted is not None

    @property
    def gantry_engaged(self) -> bool:
        g = self.index.gantry_eq
        return g >= 0 and bool(self.data.eq_active[g])

    @property
    def body_names(self) -> tuple[str, ...]:
        return tuple(self.index.body_ids)

    # -- state changes -------------------------------------------------------------------------------------------
    def reset(self, joint_pos: ArrayLike | None = None) -> None:
        """Boot state: pelvis upright on the engaged gantry at ``gantry_height``, joints limp and at rest.

        Joints start at the model zero pose (``qpos0``, i.e. 0 rad everywhere, which for the elbows is their
        ``ref`` angle of +/-0.785 rad measured in the same joint space as the policy) unless ``joint_pos``
        (joint-index order) says otherwise. The command is cleared to zero gains: the real robot boots limp.
        """
        m, d, ix = self.model, self.data, self.index
        pose = None if joint_pos is None else _vector("joint_pos", joint_pos)
        if pose is not None:
            out = (pose < RANGE_LO - _RANGE_TOL) | (pose > RANGE_HI + _RANGE_TOL)
            if out.any():
                bad = {SIM_NAMES[i]: (float(pose[i]), (float(RANGE_LO[i]), float(RANGE_HI[i])))
                       for i in np.flatnonzero(out)}
                raise ValueError(f"joint_pos outside joint ranges (value, (lo, hi)): {bad}")
        mujoco.mj_resetData(m, d)
        b = ix.base_qpos_adr
        d.qpos[b : b + 3] = (0.0, 0.0, self.gantry_height)
        d.qpos[b + 3 : b + 7] = (1.0, 0.0, 0.0, 0.0)
        if pose is not None:
            d.qpos[ix.qpos_adr] = pose
        if ix.gantry_eq >= 0:
            d.eq_active[ix.gantry_eq] = 1
            # weld data: anchor(3), relpose pos(3), relpose quat(4), torquescale: pelvis pose in the world frame.
            m.eq_data[ix.gantry_eq, 3:6] = (0.0, 0.0, self.gantry_height)
            m.eq_data[ix.gantry_eq, 6:10] = (1.0, 0.0, 0.0, 0.0)
        self._cmd_pos[:] = d.qpos[ix.qpos_adr]
        self._cmd_vel[:] = 0.0
        self._cmd_kp[:] = 0.0
        self._cmd_kd[:] = 0.0
        self._cmd_ff[:] = 0.0
        self._pushes.clear()
        self._push_force.clear()
        self._forces.clear()
        self._foot_force[:] = 0.0
        self._gantry_lowering = False
        self._faulted = None
        self._step_count = 0
        self._lost[:] = False
        self._held_imu = None
        self._encoder_offset[:] = 0.0
        self._sensor_faults = False
        mujoco.mj_forward(m, d)
        self._warn_base[:] = d.warning.number
        if self.realism is not None:
            self.realism.boot((self._cmd_pos, self._cmd_vel, self._cmd_kp, self._cmd_kd, self._cmd_ff))

    def restart_clock(self) -> None:
        """Make the current state the start of a life: time and step count back to zero (a boot state that settled
        before the life starts, ``vasimov_plant.boot_pose``)."""
        self.data.time = 0.0
        self._step_count = 0
        self._warn_base[:] = self.data.warning.number

    def set_command(
        self,
        position: ArrayLike,
        velocity: ArrayLike,
        kp: ArrayLike,
        kd: ArrayLike,
        torque_ff: ArrayLike,
    ) -> None:
        """Latch a joint-space command (25-vectors, joint-index order) used by every step until the next one.

        Commands are validated here, at the edge (``validate_command``): a non-finite entry or a negative gain is a
        caller bug and raises ``ValueError`` naming the joints, rather than surfacing later as a divergence.
        """
        t = validate_command(position, velocity, kp, kd, torque_ff)
        np.copyto(self._cmd_pos, t.position)
        np.copyto(self._cmd_vel, t.velocity)
        np.copyto(self._cmd_kp, t.kp)
        np.copyto(self._cmd_kd, t.kd)
        np.copyto(self._cmd_ff, t.torque_ff)

    def set_gantry(self, engaged: bool, lowering: bool = False) -> None:
        """Set the boot gantry: ``engaged=False`` takes it off; re-engaging is only possible through ``reset()``.

        While engaged, the hook holds the pelvis upright. With ``lowering`` it also comes down (at most
        ``GANTRY_LOWER_RATE``) until the lowest foot sphere touches the floor, and follows the feet down while the
        legs stand up, so a standing-up robot hangs "with both feet on the floor" and the hook carries only what the
        legs do not; without it, the hook stays at its height (a limp robot hangs where it is). It never rises.

        Re-welding a robot that has moved would yank it back across the world in one step, which no real gantry
        does; asking for it raises ``RuntimeError``. Engaging an engaged gantry only sets ``lowering``.
        """
        g = self.index.gantry_eq
        if g < 0:
            if engaged:
                raise RuntimeError(f"this model has no {GANTRY_EQUALITY!r} weld to engage")
            return
        if engaged:
            if not self.data.eq_active[g]:
                raise RuntimeError("the gantry re-engages only on reset()")
            self._gantry_lowering = bool(lowering)
            return
        self._gantry_lowering = False
        if self.data.eq_active[g]:
            self.data.eq_active[g] = 0
            mujoco.mj_forward(self.model, self.data)  # drop the weld from the already-assembled constraints

    @property
    def gantry_hook_height(self) -> float:
        """Height (m, world) at which the engaged gantry holds the pelvis origin."""
        g = self.index.gantry_eq
        return float(self.model.eq_data[g, 5]) if g >= 0 else math.nan

    def _lower_gantry(self) -> None:
        """One step of the hook coming down: toward the height where the lowest foot sphere touches the floor."""
        m, d, g = self.model, self.data, self.index.gantry_eq
        feet = self._foot_geoms
        clearance = float(np.min(d.geom_xpos[feet, 2] - m.geom_size[feet, 0]))
        if clearance > 0.0:
            m.eq_data[g, 5] -= min(clearance, GANTRY_LOWER_RATE * self.dt)

    def _body_id(self, body: str) -> int:
        bid = self.index.body_ids.get(body)
        if bid is None:
            raise KeyError(f"unknown body {body!r}; valid: {', '.join(self.index.body_ids)}")
        return bid

    def _write_force(self, bid: int) -> None:
        """The body's external force: its sustained force plus its running push (no torque)."""
        total = self._forces.get(bid, _ZERO3) + self._push_force.get(bid, _ZERO3)
        self.data.xfrc_applied[bid, :3] = total
        self.data.xfrc_applied[bid, 3:] = 0.0

    def apply_push(self, body: str, force_world: ArrayLike, duration: float) -> None:
        """Apply ``force_world`` (N, world frame, at the body's centre of mass) for ``duration`` sim seconds.

        The duration is rounded to whole physics steps (at least one). A new push on the same body replaces the
        old one; it adds to the body's sustained force, if any. Pushes end on their own and are cleared by
        ``reset()``.
        """
        bid = self._body_id(body)
        force = _vector("force_world", force_world, 3)
        if not (np.isfinite(duration) and duration > 0.0):
            raise ValueError(f"duration must be finite and > 0, got {duration}")
        steps = max(1, round(duration / self.dt))
        self._push_force[bid] = force.copy()
        self._pushes[bid] = steps
        self._write_force(bid)

    def set_force(self, body: str, force_world: ArrayLike) -> None:
        """A sustained ``force_world`` (N, world frame, at the body's centre of mass) on ``body`` from the next step
        until replaced, cleared (a zero force) or ``reset()``. It adds to a push on the same body."""
        bid = self._body_id(body)
        force = _vector("force_world", force_world, 3)
        if np.any(force != 0.0):
            self._forces[bid] = force.copy()
        else:
            self._forces.pop(bid, None)
        self._write_force(bid)

    @property
    def sustained_forces(self) -> dict[str, tuple[float, float, float]]:
        """Body name -> the sustained force on it (N, world frame), for every body that has one."""
        names = {b: n for n, b in self.index.body_ids.items()}
        return {names[b]: (float(f[0]), float(f[1]), float(f[2])) for b, f in self._forces.items()}

    def lose_motors(self, joints: tuple[int, ...]) -> None:
        """Scenario hook: the motors of ``joints`` (joint indices) stop answering, as on a lost CAN link: they
        apply no torque from the next step on (limp), and the reading keeps their last reply (position, velocity,
        torque) until ``reset()``."""
        now = self.sensors()
        for j in joints:
            if not self._lost[j]:
                self._lost[j] = True
                self._held_q[j], self._held_qd[j], self._held_tau[j] = now.q[j], now.qd[j], now.tau[j]
        self._sensor_faults = True

    def freeze_imu(self) -> None:
        """Scenario hook: the IMU stops updating; orientation, gyro and accelerometer keep their last values until
        ``reset()`` (the physics goes on)."""
        if self._held_imu is None:
            now = self.sensors()
            self._held_imu = (now.imu_quat, now.gyro, now.accel)
        self._sensor_faults = True

    def offset_encoder(self, joint: int, offset: float) -> None:
        """Scenario hook: joint ``joint``'s encoder reads ``offset`` rad more than the joint's position (a slipped
        encoder) until ``reset()``; the physics is unchanged."""
        if not math.isfinite(offset):
            raise ValueError(f"offset must be finite, got {offset!r}")
        self._encoder_offset[joint] += offset
        self._sensor_faults = True

    def inject_non_finite(self) -> None:
        """Scenario hook: corrupt the base velocity with NaN, as a diverging solver would, so users (and tests) can
        rehearse the fault path end to end. The next ``step()`` reports it as a ``PhysicsError``."""
        self.data.qvel[0] = np.nan

    # -- stepping ------------------------------------------------------------------------------------------------
    def step(self) -> None:
        """Advance one physics step (``dt``) under the latched command; raise ``PhysicsError`` on divergence."""
        if self._faulted is not None:
            raise PhysicsError("faulted", f"core is faulted since step {self._step_count} "
                               f"({self._faulted}); call reset()")
        m, d, ix = self.model, self.data, self.index
        np.take(d.qpos, ix.qpos_adr, out=self._q)
        np.take(d.qvel, ix.dof_adr, out=self._qd)
        cmd = (self._cmd_pos, self._cmd_vel, self._cmd_kp, self._cmd_kd, self._cmd_ff)
        if self.realism is not None:
            cmd = self.realism.actuate(cmd)
        tau = self.motor.compute(self._q, self._qd, *cmd, out=self._tau)
        if self.realism is not None:
            self.realism.scale_torque(tau)
        if self._sensor_faults:
            tau[self._lost] = 0.0  # a motor that lost its link applies nothing
        d.ctrl[ix.actuator_id] = tau
        mujoco.mj_step2(m, d)
        self._collect_foot_forces()
        mujoco.mj_step1(m, d)
        self._step_count += 1
        if self.realism is not None:
            self.realism.after_step(self.dt, d.xmat[ix.base_body].reshape(3, 3))
        if self._gantry_lowering and d.eq_active[ix.gantry_eq]:
            self._lower_gantry()
        if self._pushes:
            self._count_down_pushes()
        self._check()

    def _count_down_pushes(self) -> None:
        for bid in list(self._pushes):
            left = self._pushes[bid] - 1
            if left <= 0:
                del self._pushes[bid]
                del self._push_force[bid]
                self._write_force(bid)  # back to the sustained force, if any
            else:
                self._pushes[bid] = left

    def _collect_foot_forces(self) -> None:
        """Normal force of foot-floor contacts, read while contacts and solved forces belong to the same step."""
        d, ix = self.data, self.index
        self._foot_force[:] = 0.0
        ncon = d.ncon
        if ncon == 0:
            return
        geoms = d.contact.geom
        on_floor = ix.geom_ground[geoms[:, 0]] | ix.geom_ground[geoms[:, 1]]
        side = np.maximum(ix.geom_foot_side[geoms[:, 0]], ix.geom_foot_side[geoms[:, 1]])
        sel = np.flatnonzero(on_floor & (side > 0) & (d.contact.efc_address >= 0))
        if sel.size == 0:
            return
        if self._elliptic:  # elliptic cones store the contact-frame force; its first row is the normal force
            normal = d.efc_force[d.contact.efc_address[sel]]
        else:
            wrench = np.zeros(6)
            normal = np.empty(sel.size)
            for k, c in enumerate(sel):
                mujoco.mj_contactForce(self.model, d, int(c), wrench)
                normal[k] = wrench[0]
        np.add.at(self._foot_force, side[sel], normal)

    def _check(self) -> None:
        d = self.data
        err: PhysicsError | None = None
        if (d.warning.number != self._warn_base).any():
            fired = [f"{_WARNING_NAMES.get(i, i)} (x{int(n - b)})" for i, (n, b) in
                     enumerate(zip(d.warning.number, self._warn_base, strict=True)) if n != b]
            err = PhysicsError("mujoco_warning", f"MuJoCo raised {', '.join(fired)} at t={d.time:.3f}s "
                               "(MuJoCo has already reset the state or zeroed the controls)")
        elif not (np.isfinite(d.qpos).all() and np.isfinite(d.qvel).all() and np.isfinite(d.qacc).all()):
            err = PhysicsError("non_finite", f"non-finite qpos/qvel/qacc at t={d.time:.3f}s")
        else:
            vmax = float(np.abs(d.qvel).max())
            if vmax > self.max_speed:
                dof = int(np.abs(d.qvel).argmax())
                jname = mujoco.mj_id2name(self.model, mujoco.mjtObj.mjOBJ_JOINT, int(self.model.dof_jntid[dof]))
                err = PhysicsError("speed", f"|qvel| {vmax:.1f} > {self.max_speed} at dof {dof} ({jname}) "
                                   f"t={d.time:.3f}s")
        if err is not None:
            self._faulted = err
            raise err

    # -- readings ------------------------------------------------------------------------------------------------
    def sensors(self) -> SensorReading:
        """A snapshot of the robot's own sensors (copies; safe to keep), with the run's sensor errors when realism
        is on (``ideal_sensors`` is the same instant without them)."""
        reading = self.ideal_sensors()
        if self.realism is not None:
            ideal = reading
            q, qd, quat, gyro, accel = self.realism.apply(ideal.q, ideal.qd, ideal.imu_quat, ideal.gyro, ideal.accel)
            reading = SensorReading(q=q, qd=qd, tau=ideal.tau, imu_quat=quat, gyro=gyro, accel=accel,
                                    gantry_engaged=ideal.gantry_engaged, time=ideal.time)
        return self._faulty(reading) if self._sensor_faults else reading  # injected faults: what control sees

    def ideal_sensors(self) -> SensorReading:
        """The sensors as an ideal instrument reads them (simulator truth: for evaluation, never control)."""
        d, ix = self.data, self.index
        s = d.sensordata
        reading = SensorReading(
            q=d.qpos[ix.qpos_adr],
            qd=d.qvel[ix.dof_adr],
            tau=d.actuator_force[ix.actuator_id],
            imu_quat=s[ix.quat_adr : ix.quat_adr + 4].copy(),
            gyro=s[ix.gyro_adr : ix.gyro_adr + 3].copy(),
            accel=s[ix.accel_adr : ix.accel_adr + 3].copy(),
            gantry_engaged=self.gantry_engaged,
            time=float(d.time),
        )
        return reading

    def _faulty(self, r: SensorReading) -> SensorReading:
        """The reading as the injected sensor faults make it (lost motors' last replies, a frozen IMU, offsets)."""
        q, qd, tau = r.q + self._encoder_offset, r.qd.copy(), r.tau.copy()
        lost = self._lost
        q[lost], qd[lost], tau[lost] = self._held_q[lost], self._held_qd[lost], self._held_tau[lost]
        quat, gyro, accel = (r.imu_quat, r.gyro, r.accel) if self._held_imu is None else self._held_imu
        return SensorReading(q=q, qd=qd, tau=tau, imu_quat=quat.copy(), gyro=gyro.copy(), accel=accel.copy(),
                             gantry_engaged=r.gantry_engaged, time=r.time)

    def truth(self) -> GroundTruth:
        """Simulator ground truth of the floating base and foot contacts."""
        d, ix = self.data, self.index
        b, v = ix.base_qpos_adr, ix.base_dof_adr
        rot = d.xmat[ix.base_body].reshape(3, 3)  # kept current by mj_step1 / mj_forward
        left, right = float(self._foot_force[1]), float(self._foot_force[2])
        return GroundTruth(
            base_pos=d.qpos[b : b + 3].copy(),
            base_quat=d.qpos[b + 3 : b + 7].copy(),
            base_lin_vel=d.qvel[v : v + 3].copy(),  # free joint: linear velocity is in the world frame
            base_ang_vel=rot @ d.qvel[v + 3 : v + 6],  # free joint: angular velocity is in the body frame
            base_yaw=math.atan2(rot[1, 0], rot[0, 0]),  # heading of the pelvis x axis
            left_contact=left > 0.0,
            right_contact=right > 0.0,
            left_force=left,
            right_force=right,
            time=float(d.time),
        )

    def ground_height(self, x: float, y: float) -> float:
        """Height (m, world) of the ground under (x, y): the floor or the scene's highest geom there (a ray cast
        down onto group-0 geoms). On the default flat floor it is 0.0 without a ray. NaN where there is no ground."""
        if self.scene.is_default:
            return 0.0
        top = 100.0
        groups = np.zeros(mujoco.mjNGROUP, dtype=np.uint8)
        groups[SCENE_GROUP] = 1
        hit = np.full(1, -1, dtype=np.int32)
        dist = mujoco.mj_ray(self.model, self.data, np.array([x, y, top]), np.array([0.0, 0.0, -1.0]), groups, 1, -1,
                             hit)
        return top - dist if dist >= 0.0 else math.nan

    def projected_gravity(self) -> NDArray[np.float64]:
        """Gravity direction in the IMU frame from the IMU orientation (``[0, 0, -1]`` when upright)."""
        s = self.data.sensordata
        return frames.projected_gravity(s[self.index.quat_adr : self.index.quat_adr + 4])
