"""Lockstep on the plant's side: the start gate's ROS wiring, tick 0, and the stall and leave checks.

After publishing control tick k the plant waits until the motor command answering tick k arrives, then applies it for
the next `control_decimation` physics steps (`PlantNode.on_motor_command`): nothing depends on wall time. Before
tick 0 the declared participants must be ready: `vasimov.lockstep_gate` holds the rules (and how a test starts one
node alone); this module feeds it what the graph shows and logs what it decides.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rclpy.executors import SingleThreadedExecutor
from std_msgs.msg import String, UInt64MultiArray

from vasimov.lockstep_gate import GateEvent, LockstepGate, parse_participants
from vasimov.ros import qos, topics
from vasimov.ros.lockstep import ready_announcers, resolved, sample_readers, tick_readers, writers_matched

if TYPE_CHECKING:
    from vasimov_plant.node import PlantNode

EXIT_LOCKSTEP_STALL = 4  # a participant never came, left, or did not answer within lockstep_timeout
PRESENCE_PERIOD_S = 0.5  # wall seconds between graph reads for participants that left
CAMERA_PARTICIPANT = "camera"  # the camera node's name: with camera_lockstep it joins the participants


@dataclass
class PeriodHold:
    """What the plant waits for before stepping the next control period (pure: the node feeds it).

    Always the motor command answering the tick it published. With ``camera`` (``camera_lockstep``) also the camera's
    word that it took the period's last state (``/vasimov/lockstep/camera``: [epoch, step]): the camera renders a due
    frame before it answers, so every frame is the state at its simulated time whatever the machine's speed, and a
    seed gives the same images. Answers may come in either order."""

    camera: bool
    tick: int | None = None  # the tick whose motor command is awaited (None: answered)
    answered: bool = False  # the motor command came; the period steps once the camera answered too
    frame: tuple[int, int] | None = None  # (epoch, step) the camera must have taken
    camera_done: tuple[int, int] = (-1, -1)  # the newest state the camera took
    since: float = 0.0

    def wait(self, tick: int, epoch: int, step: int, now: float) -> None:
        """A tick went out (with its period's samples): wait for its answers."""
        self.tick, self.answered, self.since = tick, False, now
        self.frame = (epoch, step) if self.camera else None

    def answer(self, tick: int) -> bool:
        """A motor command for ``tick``: False if it is not the awaited one (ignore it)."""
        if self.tick is None or tick != self.tick:
            return False
        self.tick, self.answered = None, True
        return True

    def took(self, epoch: int, step: int) -> None:
        """The camera took state (epoch, step)."""
        if (epoch, step) > self.camera_done or epoch != self.camera_done[0]:
            self.camera_done = (epoch, step)

    @property
    def camera_waiting(self) -> bool:
        f, d = self.frame, self.camera_done
        return f is not None and not (d[0] == f[0] and d[1] >= f[1])

    def release(self) -> bool:
        """True once (then the period steps): both answers are in."""
        if not self.answered or self.camera_waiting:
            return False
        self.answered, self.frame = False, None
        return True

    @property
    def waiting(self) -> bool:
        return self.tick is not None or (self.answered and self.camera_waiting)

    def describe(self) -> str:
        if self.tick is not None:
            return f"no motor command for tick {self.tick}"
        return f"no word from the camera on step {self.frame[1] if self.frame else '?'}"


class LockstepDriver:
    """Runs a lockstep plant: gate, tick 0, then the executor (the answers step physics) until the run ends."""

    def __init__(self, node: PlantNode) -> None:
        self.node = node
        participants = parse_participants(node.p["lockstep_participants"])
        self.hold = PeriodHold(camera=bool(node.p["camera_lockstep"]))
        if self.hold.camera and CAMERA_PARTICIPANT not in participants:
            participants = (*participants, CAMERA_PARTICIPANT)
        self.gate = LockstepGate(participants, now=time.monotonic(), join_timeout=node.p["lockstep_join_timeout"])
        node.create_subscription(String, topics.LOCKSTEP_READY, self._on_ready, qos.LATCHED_FROM_MANY)
        if self.hold.camera:
            node.create_subscription(UInt64MultiArray, topics.LOCKSTEP_CAMERA, self._on_camera, qos.LATCHED)
        self.wall_start = 0.0
        self.sim_start = 0.0

    def _on_ready(self, msg: String) -> None:
        self._log(self.gate.announce(msg.data))

    def _on_camera(self, msg: UInt64MultiArray) -> None:
        if len(msg.data) != 2:
            self.node.log_limited("camera word", f"lockstep: camera message refused: {list(msg.data)} is not "
                                                 "[epoch, step]")
            return
        self.hold.took(int(msg.data[0]), int(msg.data[1]))
        self.node.advance_when_released()

    def readers(self) -> set[str]:
        """Who reads what they answer: the tick topic; with camera_lockstep the camera reads the samples."""
        n = self.node
        readers = tick_readers(n)
        if self.hold.camera:
            readers |= sample_readers(n) & {CAMERA_PARTICIPANT}
        return readers

    def _log(self, events: list[GateEvent]) -> None:
        logger = self.node.get_logger()
        for e in events:  # one call site per severity: rclpy refuses a call site whose severity changes
            if e.level == "info":
                logger.info(e.text)
            elif e.level == "warning":
                logger.warning(e.text)
            else:
                logger.error(e.text)

    def _wired(self) -> bool:
        """The plant's writers matched every reader it knows of, and someone publishes the answers."""
        n = self.node
        return n.count_publishers(resolved(n, topics.MOTOR_COMMAND)) >= 1 and writers_matched(n, n.pubs.streams)

    def _check_presence(self) -> None:
        n = self.node
        self._log(self.gate.present(self.readers() if self.gate.is_open else ready_announcers(n)))

    def run(self, executor: SingleThreadedExecutor, stop: threading.Event) -> None:
        n = self.node
        next_presence = 0.0
        while not stop.is_set() and not self.gate.is_open:
            executor.spin_once(timeout_sec=0.05)
            now = time.monotonic()
            if now >= next_presence:
                next_presence = now + PRESENCE_PERIOD_S
                self._check_presence()
            self._log(self.gate.poll(now, self.readers(), self._wired()))
            if self.gate.failed:
                n.exit_code = EXIT_LOCKSTEP_STALL
                return
        if stop.is_set():
            return
        self.start()
        while not stop.is_set() and n.exit_code is None:
            executor.spin_once(timeout_sec=0.5)
            now = time.monotonic()
            if now >= next_presence:
                next_presence = now + PRESENCE_PERIOD_S
                self._check_presence()
                if self.gate.failed:
                    n.exit_code = EXIT_LOCKSTEP_STALL
                    return
            if self.stalled():
                n.get_logger().error(
                    f"lockstep: {self.hold.describe()} within {n.p['lockstep_timeout']} s; a participant died or "
                    "stalled")
                n.exit_code = EXIT_LOCKSTEP_STALL

    def start(self) -> None:
        n = self.node
        self.wall_start = time.monotonic()
        self.sim_start = n.sim_time()
        n.publish_current_step(control_tick=True)
        n.await_tick(0)

    def stalled(self) -> bool:
        n = self.node
        return self.hold.waiting and time.monotonic() - self.hold.since > n.p["lockstep_timeout"]

    def log_speed(self) -> None:
        """At the end of a bounded run: how fast lockstep went."""
        wall = time.monotonic() - self.wall_start
        sim = self.node.sim_time() - self.sim_start
        self.node.get_logger().info(f"lockstep: simulated {sim:.3f} s in {wall:.3f} s of wall time "
                                    f"(real-time factor {sim / wall:.2f})")
