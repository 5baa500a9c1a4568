"""The plant's outputs: what each physics step's readings become on the graph.

One control period's steps are snapshotted first and published after the period's tick (see
`PlantNode._advance_control_period`), so a snapshot keeps everything a message needs. The mapping lives here, apart
from the stepping, so the message layout (frames, units, which topics every N steps) is in one place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import mujoco
import numpy as np
from geometry_msgs.msg import Vector3
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import String
from vasimov_msgs.msg import FootContacts, PlantFault, PlantSamples, PlantState

from vasimov import joints
from vasimov.frames import rotate_inverse
from vasimov.model.terrain import scene_geoms
from vasimov.model.urdf import build_urdf
from vasimov.ros import plant_samples, qos, topics
from vasimov.ros.convert import quat_wxyz_to_ros, to_stamp
from vasimov.scenes import Scene
from vasimov_plant.physics import GroundTruth, SensorReading


@dataclass(frozen=True)
class StepSnapshot:
    """One physics step's readings, kept until the control period's tick has been published."""

    sensors: SensorReading
    truth: GroundTruth | None  # standard steps while a ground-truth topic has a reader (``wants_truth``), else None
    now: float
    step: int
    control_tick: bool
    command_tick: int  # the tick whose answer drove this step (-1: none, e.g. watchdog damping): PlantState's field
    ideal: SensorReading | None = None  # realism on, standard steps: the same instant without sensor errors
    standard: bool = False  # a step that publishes the standard topics (every ``standard_topics_decimation``)


def _vec(v) -> Vector3:
    return Vector3(x=float(v[0]), y=float(v[1]), z=float(v[2]))


class PlantPublishers:
    """The plant's publishers and reused messages (one of each: no allocation per step)."""

    def __init__(self, node, decimation: int, ideal_sensors: bool = False, clock_decimation: int = 1) -> None:
        self.decimation = decimation
        self.clock_decimation = clock_decimation
        self.clock = node.create_publisher(Clock, topics.CLOCK, qos.CLOCK)
        self.state = node.create_publisher(PlantState, topics.PLANT_STATE, qos.STATE_STREAM)
        self.samples = node.create_publisher(PlantSamples, topics.PLANT_SAMPLES, qos.STATE_STREAM)
        self.tick = node.create_publisher(PlantState, topics.PLANT_TICK, qos.LOOP)
        self.joints = node.create_publisher(JointState, topics.JOINT_STATES, qos.TELEMETRY)
        self.imu = node.create_publisher(Imu, topics.IMU, qos.TELEMETRY)
        self.odom = node.create_publisher(Odometry, topics.ODOM_TRUTH, qos.TELEMETRY)
        self.feet = node.create_publisher(FootContacts, topics.FEET_TRUTH, qos.TELEMETRY)
        self.fault = node.create_publisher(PlantFault, topics.PLANT_FAULT, qos.LATCHED)  # late joiners see it
        # the robot for viewers (Foxglove, RViz): latched, published once; link names = MuJoCo body names
        self.description = node.create_publisher(String, topics.ROBOT_DESCRIPTION, qos.LATCHED)
        self.description.publish(String(data=build_urdf()))
        # the ground around it (vasimov.scenes), latched JSON: the Foxglove bridge draws it, bags keep it
        self.scene = node.create_publisher(String, topics.SCENE, qos.LATCHED)
        # realism on: the ideal encoders and IMU beside the noisy ones (ground truth, like the odometry)
        self.joints_truth = node.create_publisher(JointState, topics.JOINT_STATES_TRUTH, qos.TELEMETRY) \
            if ideal_sensors else None
        self.imu_truth = node.create_publisher(Imu, topics.IMU_TRUTH, qos.TELEMETRY) if ideal_sensors else None

        self.boot_state = 0  # vasimov.boot_states.BootState of this life, set by the node at each boot
        self.m_clock = Clock()
        self.m_state = PlantState()
        self.m_samples = PlantSamples()
        self.m_joints = JointState()
        self.m_joints.name = list(joints.SIM_NAMES)
        self.m_imu = Imu()
        self.m_imu.header.frame_id = "imu_in_pelvis"
        self.m_odom = Odometry()
        self.m_odom.header.frame_id = "world"
        self.m_odom.child_frame_id = "pelvis_link"
        self.m_feet = FootContacts()

    def publish_scene(self, scene: Scene, model: mujoco.MjModel) -> None:
        """The scene's name, parameters and seed, and its ground as compiled (``terrain.scene_geoms``)."""
        self.scene.publish(String(data=json.dumps({**scene.describe(), "geoms": scene_geoms(model)})))

    @property
    def streams(self) -> list:
        """The publishers every run's first tick must reach each known reader of (the lockstep gate's check)."""
        truth = [p for p in (self.joints_truth, self.imu_truth) if p is not None]
        return [self.state, self.samples, self.tick, self.clock, self.joints, self.imu, self.odom, self.feet, *truth]

    def fill_state(self, snap: StepSnapshot, epoch: int) -> PlantState:
        s = snap.sensors
        m = self.m_state
        to_stamp(snap.now, m.stamp)
        m.step = snap.step
        m.tick = snap.step // self.decimation
        m.control_tick = snap.control_tick
        m.command_tick = snap.command_tick
        m.epoch = epoch
        m.boot_state = self.boot_state
        m.position = s.q
        m.velocity = s.qd
        m.effort = s.tau
        m.imu_orientation = s.imu_quat
        m.imu_angular_velocity = s.gyro
        m.imu_linear_acceleration = s.accel
        m.gantry_engaged = bool(s.gantry_engaged)
        return m

    def publish_tick(self, snap: StepSnapshot, epoch: int) -> None:
        self.tick.publish(self.fill_state(snap, epoch))

    def publish_samples(self, period: list[StepSnapshot], epoch: int, truth: GroundTruth | None) -> None:
        """A period's samples in one PlantSamples message (`vasimov.ros.plant_samples`), with ``truth``: the ground
        truth of the period's last step. Volatile like the rest: built only while some reader is matched."""
        if not period or not self.samples.get_subscription_count():
            return
        sensors = [s.sensors for s in period]
        self.samples.publish(plant_samples.fill(
            self.m_samples, epoch, self.boot_state, period[0].step, np.array([s.now for s in period]),
            np.array([s.command_tick for s in period]), np.array([r.q for r in sensors]),
            np.array([r.qd for r in sensors]), np.array([r.tau for r in sensors]),
            np.array([r.imu_quat for r in sensors]), np.array([r.gyro for r in sensors]),
            np.array([r.accel for r in sensors]),
            None if truth is None else plant_samples.Truth(period[-1].now, truth.base_pos, truth.base_quat,
                                                           truth.base_lin_vel, truth.base_ang_vel)))

    def wants_truth(self) -> bool:
        """Whether a step's ground truth has a reader on the standard topics (odometry, foot contacts). Why ask:
        computing it every physics step for nobody was a tenth of the plant's step thread in an idle graph."""
        return bool(self.odom.get_subscription_count() or self.feet.get_subscription_count())

    def publish_step(self, snap: StepSnapshot, epoch: int) -> None:
        """/clock (on its steps), the plant state and (on their steps) the standard topics of one step, each while
        some reader is matched (all volatile: a sample with no reader reaches nobody; the SDK bridge reads the
        period's PlantSamples instead of the plant state)."""
        stamp = to_stamp(snap.now, self.m_state.stamp)
        if snap.step % self.clock_decimation == 0 and self.clock.get_subscription_count():
            self.m_clock.clock = stamp
            self.clock.publish(self.m_clock)
        if self.state.get_subscription_count():
            self.state.publish(self.fill_state(snap, epoch))
        if snap.standard:
            self._publish_standard(snap.sensors, snap.truth, stamp)
            if snap.ideal is not None and self.joints_truth is not None and self.imu_truth is not None:
                self._publish_sensors(snap.ideal, stamp, self.joints_truth, self.imu_truth)

    def _publish_sensors(self, s: SensorReading, stamp, joints_pub, imu_pub) -> None:
        if joints_pub.get_subscription_count():
            j = self.m_joints
            j.header.stamp = stamp
            j.position = s.q.tolist()
            j.velocity = s.qd.tolist()
            j.effort = s.tau.tolist()
            joints_pub.publish(j)
        if imu_pub.get_subscription_count():
            imu = self.m_imu
            imu.header.stamp = stamp
            quat_wxyz_to_ros(s.imu_quat, imu.orientation)
            imu.angular_velocity = _vec(s.gyro)
            imu.linear_acceleration = _vec(s.accel)
            imu_pub.publish(imu)

    def _publish_standard(self, s: SensorReading, t: GroundTruth | None, stamp) -> None:
        """Each standard topic is built and published only while some reader is matched: they are volatile, so a
        sample written with no reader reaches nobody, and building one costs the plant (the closed loop's critical
        path) tens of microseconds per topic and step. ``t`` None: no truth reader when the step was taken."""
        self._publish_sensors(s, stamp, self.joints, self.imu)
        if t is None:
            return
        if self.odom.get_subscription_count():
            o = self.m_odom
            o.header.stamp = stamp
            o.pose.pose.position.x, o.pose.pose.position.y, o.pose.pose.position.z = (float(v) for v in t.base_pos)
            quat_wxyz_to_ros(t.base_quat, o.pose.pose.orientation)
            # nav_msgs/Odometry twist is expressed in child_frame_id (the pelvis): rotate world vectors into it.
            o.twist.twist.linear = _vec(rotate_inverse(t.base_quat, t.base_lin_vel))
            o.twist.twist.angular = _vec(rotate_inverse(t.base_quat, t.base_ang_vel))
            self.odom.publish(o)
        if self.feet.get_subscription_count():
            f = self.m_feet
            f.stamp = stamp
            f.left_contact, f.right_contact = bool(t.left_contact), bool(t.right_contact)
            f.left_normal_force, f.right_normal_force = float(t.left_force), float(t.right_force)
            self.feet.publish(f)

    def publish_fault(self, now: float, step: int, kind: str, message: str, epoch: int | None = None) -> PlantFault:
        msg = PlantFault()
        to_stamp(now, msg.stamp)
        msg.step = step
        msg.kind = kind
        msg.message = message
        if epoch is not None:
            msg.epoch = epoch
        self.fault.publish(msg)
        return msg
