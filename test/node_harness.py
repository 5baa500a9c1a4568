"""Single-node tests: one node's console script started alone in its own ROS domain, with the test process as its
peers (a RosProbe publishing and subscribing on the node's topics) and its own clients (UDP, HTTP, WebSocket).

The middle tier of the suite (pure cores below, whole graphs above): a node's message conversions and parameters
are tested without the rest of the graph. Nodes run in real time (lockstep waits for peers a lone node does not
have); every wait is bounded and on a condition. `conftest.node_factory` stops every node a test started and checks
that nothing was left behind.
"""

from __future__ import annotations

import math
import re
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from harness import ROOT, VENV_BIN, child_pids, graph_env, next_domain_id, pid_alive, stop_process, wait_for
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock
from rosprobe import RosProbe
from sensor_msgs.msg import JointState
from vasimov_msgs.msg import Alert, FirmwareState, PlantSamples, PlantState

from vasimov import joints
from vasimov.ros import plant_samples, qos, topics
from vasimov.ros.convert import from_stamp

# Start-up of one node on a loaded 2-core machine (rclpy, MuJoCo or foxglove imports, DDS discovery).
START_TIMEOUT = 40.0


def _param_arg(name: str, value: Any) -> str:
    if isinstance(value, bool):
        value = "true" if value else "false"
    return f"{name}:={value}"


class LoneNode:
    """`<executable> --ros-args --params-file config/<config>.yaml -p k:=v ...` alone, in its own ROS domain (or
    `domain`), output in a log file. Parameters come from the node's config file, as the launch file passes them."""

    #: every node started in this session, so a failing test's report can show the logs of those still running
    instances: ClassVar[list[LoneNode]] = []

    def __init__(self, executable: str, params: dict[str, Any] | None = None, config: str | None = None,
                 domain: int | None = None) -> None:
        self.executable = executable
        self.domain = domain if domain is not None else next_domain_id()
        self.env = graph_env(self.domain)
        args = [str(VENV_BIN / executable), "--ros-args"]
        if config:
            args += ["--params-file", str(ROOT / "config" / f"{config}.yaml")]
        for name, value in (params or {}).items():
            args += ["-p", _param_arg(name, value)]
        self.log = tempfile.NamedTemporaryFile(prefix=f"vasimov-{executable}-", suffix=".log", delete=False)  # noqa: SIM115
        self.proc = subprocess.Popen(args, env=self.env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        self.pids: set[int] = {self.proc.pid}
        LoneNode.instances.append(self)

    def output(self) -> str:
        return Path(self.log.name).read_text(errors="replace")

    def wait_log(self, pattern: str, timeout: float = START_TIMEOUT) -> re.Match[str]:
        """The first match of `pattern` in the node's output; fails early (with the log) if the node exits."""
        rx = re.compile(pattern)

        def found() -> re.Match[str] | None:
            m = rx.search(self.output())
            if m is None and self.proc.poll() is not None:
                m = rx.search(self.output())  # the last lines may have landed just before the exit
                if m is None:
                    raise AssertionError(f"{self.executable} exited ({self.proc.returncode}) before logging "
                                         f"{pattern!r}:\n{self.output()[-3000:]}")
            return m

        self.pids.update(child_pids(self.proc.pid))
        return wait_for(found, timeout, f"{self.executable} to log {pattern!r}")

    def wait_exit(self, timeout: float = START_TIMEOUT) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{self.executable} still running after {timeout} s:\n"
                                 f"{self.output()[-3000:]}") from None

    def stop(self, timeout: float = 20.0) -> int:
        """Ctrl-C, as a user or `ros2 launch` stops it; killed (and the test failed) if it does not exit in time."""
        if self.proc.poll() is None:
            self.pids.update(child_pids(self.proc.pid))
        return stop_process(self.proc, signal.SIGINT, timeout, self.executable, self.output)

    def leftovers(self) -> list[int]:
        return sorted(p for p in self.pids if pid_alive(p))


def run_to_exit(executable: str, params: dict[str, Any], timeout: float = START_TIMEOUT) -> tuple[int, str]:
    """Start a node that is expected to refuse its configuration: its exit code and output."""
    node = LoneNode(executable, params)
    try:
        code = node.wait_exit(timeout)
    finally:
        node.stop()
    assert node.leftovers() == [], f"processes left behind: {node.leftovers()}"
    return code, node.output()


class Repeater:
    """Calls `publish_once` every `period` wall seconds in a thread until closed: a fake peer's steady stream (the
    nodes under test sample, pair or decimate their inputs, so a single message may legitimately go unused)."""

    def __init__(self, publish_once: Callable[[], None], period: float = 0.02) -> None:
        self._publish = publish_once
        self._period = period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._publish()
            self._stop.wait(self._period)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def __enter__(self) -> Repeater:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def plant_state(step: int, *, epoch: int = 0, decimation: int = 4, dt: float = 0.005,
                position: Any = None, velocity: Any = None, effort: Any = None,
                quat: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0),
                gyro: tuple[float, float, float] = (0.0, 0.0, 0.0), gantry: bool = True) -> PlantState:
    """A PlantState as the plant publishes it for physics step `step` (sim time step * dt; a control tick when
    step is a multiple of the decimation), at rest in the default pose unless told otherwise."""
    m = PlantState()
    t_ns = round(step * dt * 1e9)
    m.stamp.sec, m.stamp.nanosec = divmod(t_ns, 1_000_000_000)
    m.step = step
    m.tick = step // decimation
    m.control_tick = step % decimation == 0
    m.command_tick = -(-step // decimation) - 1  # the tick whose answer drove this step (-1 for the boot step)
    m.epoch = epoch
    n = joints.NUM_JOINTS
    m.position = [float(v) for v in (joints.DEFAULT_POS if position is None else position)]
    m.velocity = [0.0] * n if velocity is None else [float(v) for v in velocity]
    m.effort = [0.0] * n if effort is None else [float(v) for v in effort]
    m.imu_orientation = [float(v) for v in quat]
    m.imu_angular_velocity = [float(v) for v in gyro]
    m.imu_linear_acceleration = [0.0, 0.0, 9.81]
    m.gantry_engaged = gantry
    return m


def publishers_matched(*entities: Any) -> bool:
    """Every probe publisher has a reader and every probe subscription a writer: the node under test is up."""
    for e in entities:
        count = e.get_subscription_count() if hasattr(e, "get_subscription_count") else e.get_publisher_count()
        if count == 0:
            return False
    return True


YAW_90 = (math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5))  # w, x, y, z: a quarter turn about z
TEMPERATURES = [30.0 + i for i in range(joints.NUM_JOINTS)]


class FakeRobot:
    """The plant and the edge as the bridges see them. Each `publish_once`: the firmware's state after tick k
    (STAND, armed, one alert, temperatures), then the four physics steps its answer drove (4k+1..4k+4), each with its
    own pose so samples can be told apart (and the four in one PlantSamples message), then /clock, /joint_states
    and ground truth (at 1, 2, 0.7 m, a quarter turn about z, 0.5 m/s forward in the pelvis frame)."""

    def __init__(self, probe: RosProbe) -> None:
        self.states = probe.publisher(topics.PLANT_STATE, PlantState, qos.STATE_STREAM)
        self.samples = probe.publisher(topics.PLANT_SAMPLES, PlantSamples, qos.STATE_STREAM)
        self.firmware = probe.publisher(topics.FIRMWARE_STATE, FirmwareState, qos.LOOP)
        self.odom = probe.publisher(topics.ODOM_TRUTH, Odometry, qos.TELEMETRY)
        self.joint_states = probe.publisher(topics.JOINT_STATES, JointState, qos.TELEMETRY)
        self.clock = probe.publisher(topics.CLOCK, Clock, qos.CLOCK)
        self.lock = threading.Lock()
        self.tick = 0
        self.epoch = 0
        self.firmware_epoch = 0  # differs from epoch to play a firmware that has not restarted yet
        self.velocity_command = (0.25, 0.0, -0.5)
        self.sent: dict[tuple[int, int], PlantState] = {}
        self.firmware_lag = 0  # ticks the firmware states trail the plant's on the wire (a starved reader's view)
        self.answered = True  # False: the plant steps on with tick 0's answer, as under its watchdog
        self.lagging: list[FirmwareState] = []

    @staticmethod
    def position(step: int) -> np.ndarray:
        return joints.DEFAULT_POS + 0.001 * ((np.arange(joints.NUM_JOINTS) + step) % 7)

    def publish_once(self) -> None:
        with self.lock:
            k, epoch, fw_epoch = self.tick, self.epoch, self.firmware_epoch
            self.tick += 1
        fw = FirmwareState(tick=k, epoch=fw_epoch, mode=FirmwareState.MODE_STAND, mode_name="STAND", armed=True,
                           error_flags=2, control_source="UDP", gantry_engaged=True,
                           alerts=[Alert(id=0, severity=1, value=7, threshold=5, first_set_us=1000, name="test")],
                           velocity_command=self.velocity_command, thermal_model_active=True,
                           motor_temperature=TEMPERATURES, counter_names=["accepted_stand"], counter_values=[1])
        self.lagging.append(fw)
        while len(self.lagging) > self.firmware_lag:
            self.firmware.publish(self.lagging.pop(0))
        period = []
        for step in range(4 * k + 1, 4 * k + 5):
            m = plant_state(step, epoch=epoch, position=self.position(step), gyro=(0.1, -0.2, 0.3))
            if not self.answered:
                m.command_tick = 0
            with self.lock:
                self.sent[(epoch, step)] = m
            self.states.publish(m)
            period.append(m)
        # the same steps as the plant packs them for the SDK bridge, with the same truth as the odometry below
        # (world frame: 0.5 m/s forward in the pelvis is world +y after the quarter turn)
        self.samples.publish(plant_samples.fill(
            PlantSamples(), epoch, 0, period[0].step, np.array([from_stamp(p.stamp) for p in period]),
            np.array([p.command_tick for p in period]), *(np.array([getattr(p, f) for p in period]) for f in (
                "position", "velocity", "effort", "imu_orientation", "imu_angular_velocity",
                "imu_linear_acceleration")),
            truth=plant_samples.Truth(0.0, np.array([1.0, 2.0, 0.7]), np.array(YAW_90), np.array([0.0, 0.5, 0.0]),
                                      np.zeros(3))))
        self.clock.publish(Clock(clock=m.stamp))
        js = JointState(name=list(joints.SIM_NAMES), position=list(m.position), velocity=list(m.velocity),
                        effort=list(m.effort))
        js.header.stamp = m.stamp
        self.joint_states.publish(js)
        odom = Odometry()
        odom.header.stamp = m.stamp
        odom.header.frame_id, odom.child_frame_id = "world", "pelvis_link"
        odom.pose.pose.position.x, odom.pose.pose.position.y, odom.pose.pose.position.z = 1.0, 2.0, 0.7
        q = odom.pose.pose.orientation
        q.w, q.x, q.y, q.z = YAW_90
        odom.twist.twist.linear.x = 0.5  # pelvis frame: forward, which is world +y after the quarter turn
        self.odom.publish(odom)

    def restart(self, firmware_too: bool = True) -> None:
        with self.lock:
            self.epoch += 1
            self.tick = 0
            if firmware_too:
                self.firmware_epoch = self.epoch
