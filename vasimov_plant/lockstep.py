"""Lockstep on the plant's side: the start gate's ROS wiring, tick 0, and the stall and leave checks.

After publishing control tick k the plant waits until the motor command answering tick k arrives, then applies it for
the next `control_decimation` physics steps (`PlantNode.on_motor_command`): nothing depends on wall time. Before
tick 0 the declared participants must be ready: `vasimov.lockstep_gate` holds the rules (and how a test starts one
node alone); this module feeds it what the graph shows and logs what it decides.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from rclpy.executors import SingleThreadedExecutor
from std_msgs.msg import String

from vasimov.lockstep_gate import GateEvent, LockstepGate, parse_participants
from vasimov.ros import qos, topics
from vasimov.ros.lockstep import ready_announcers, resolved, tick_readers, writers_matched

if TYPE_CHECKING:
    from vasimov_plant.node import PlantNode

EXIT_LOCKSTEP_STALL = 4  # a participant never came, left, or did not answer within lockstep_timeout
PRESENCE_PERIOD_S = 0.5  # wall seconds between graph reads for participants that left


class LockstepDriver:
    """Runs a lockstep plant: gate, tick 0, then the executor (the answers step physics) until the run ends."""

    def __init__(self, node: PlantNode) -> None:
        self.node = node
        self.gate = LockstepGate(parse_participants(node.p["lockstep_participants"]), now=time.monotonic(),
                                 join_timeout=node.p["lockstep_join_timeout"])
        node.create_subscription(String, topics.LOCKSTEP_READY, self._on_ready, qos.LATCHED_FROM_MANY)
        self.wall_start = 0.0
        self.sim_start = 0.0

    def _on_ready(self, msg: String) -> None:
        self._log(self.gate.announce(msg.data))

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
        self._log(self.gate.present(tick_readers(n) if self.gate.is_open else ready_announcers(n)))

    def run(self, executor: SingleThreadedExecutor, stop: threading.Event) -> None:
        n = self.node
        next_presence = 0.0
        while not stop.is_set() and not self.gate.is_open:
            executor.spin_once(timeout_sec=0.05)
            now = time.monotonic()
            if now >= next_presence:
                next_presence = now + PRESENCE_PERIOD_S
                self._check_presence()
            self._log(self.gate.poll(now, tick_readers(n), self._wired()))
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
                    f"lockstep: no motor command for tick {n.awaiting_tick} within "
                    f"{n.p['lockstep_timeout']} s; a participant died or stalled")
                n.exit_code = EXIT_LOCKSTEP_STALL

    def start(self) -> None:
        n = self.node
        self.wall_start = time.monotonic()
        self.sim_start = n.sim_time()
        n.publish_current_step(control_tick=True)
        n.await_tick(0)

    def stalled(self) -> bool:
        n = self.node
        return n.awaiting_tick is not None and time.monotonic() - n.awaiting_since > n.p["lockstep_timeout"]

    def log_speed(self) -> None:
        """At the end of a bounded run: how fast lockstep went."""
        wall = time.monotonic() - self.wall_start
        sim = self.node.sim_time() - self.sim_start
        self.node.get_logger().info(f"lockstep: simulated {sim:.3f} s in {wall:.3f} s of wall time "
                                    f"(real-time factor {sim / wall:.2f})")
