"""Real time: the plant's physics thread, paced to the wall clock, and the command-age watchdog.

Lockstep held back to the wall clock (`vasimov_plant.pacing`): the thread starts control period k once the motor
command answering tick k has arrived and the wall clock has reached the period's slot. A machine that cannot keep up
slows simulated time down (real-time factor < 1) instead of stepping a tick without its answer; only when no answer
has arrived for `answer_timeout` wall seconds (a participant is gone) does the plant step on at wall pace under the
watchdog (the last command while younger than `command_timeout`, then pure damping).
"""

from __future__ import annotations

import json
import threading
import time
from typing import TYPE_CHECKING

from rclpy.executors import SingleThreadedExecutor
from std_msgs.msg import String

from vasimov.graph_status import SUMMARY_TAG
from vasimov.ros import qos, topics
from vasimov_plant.pacing import Pacer, WindowStats

if TYPE_CHECKING:
    from vasimov_plant.node import PlantNode


class RealtimeDriver:
    """Owns the pacer and the physics thread; steps the node's physics under the node's condition variable."""

    def __init__(self, node: PlantNode) -> None:
        self.node = node
        self.pacer: Pacer | None = None  # created by start(), before any answer can arrive
        self.stale_count = 0
        self.warned_slow = False
        self.reports = 0
        self.pub_report = (node.create_publisher(String, topics.REALTIME, qos.EVENTS)
                           if node.p["realtime_report_period"] > 0 else None)

    def start(self) -> None:
        """Create the pacer and publish tick 0."""
        n = self.node
        with n.cond:
            self.pacer = Pacer(period_wall=n.control_period / n.p["realtime_factor"], period_sim=n.control_period,
                               answer_timeout=n.p["answer_timeout"], now=time.monotonic())
            n.publish_current_step(control_tick=True)

    def run(self, executor: SingleThreadedExecutor, stop: threading.Event) -> None:
        """Spin the node's callbacks here while the physics thread steps; print the run's summary at the end."""
        n = self.node
        self.start()
        loop = threading.Thread(target=n.guarded, args=("physics thread", self._loop, stop), name="physics",
                                daemon=True)
        loop.start()
        try:
            while not stop.is_set() and n.exit_code is None:
                executor.spin_once(timeout_sec=0.1)
        finally:
            stop.set()
            with n.cond:
                n.cond.notify_all()
            loop.join(timeout=5.0)
            stats = self.stats()
            print(f"plant: realtime stats: {json.dumps(stats)}", flush=True)
            print(f"{SUMMARY_TAG}real time: real-time factor {stats['rtf']:.3f} ({stats['sim_s']:.1f} s simulated "
                  f"in {stats['wall_s']:.1f} s), control-tick lateness p50 {stats['p50_ms']:.2f} ms p99 "
                  f"{stats['p99_ms']:.2f} ms max {stats['max_ms']:.2f} ms, control period p50 "
                  f"{stats['period_p50_ms']:.2f} p99 {stats['period_p99_ms']:.2f} max {stats['period_max_ms']:.2f} ms, "
                  f"{stats['late_ticks']} ticks late > 1 period, {stats['unanswered']} without answer, "
                  f"{stats['stale_commands']} stale-command damps, "
                  f"{stats['rejected_commands']} motor commands rejected", flush=True)

    def _loop(self, stop: threading.Event) -> None:
        """Per control period: wait (bounded) for the answer to the current tick and for the wall clock, then step
        (with the answer; without it only after `answer_timeout` of silence, under the watchdog)."""
        n = self.node
        pacer = self.pacer
        assert pacer is not None, "start() first"
        log_period = n.p["realtime_log_period"]
        next_log = time.monotonic() + log_period
        report_period = n.p["realtime_report_period"]
        next_report = time.monotonic() + report_period
        while not stop.is_set() and n.exit_code is None:
            with n.cond:
                if n.faulted:  # no physics until a virtual restart: the clock and the held sensors go on
                    left = pacer.release_at(True) - time.monotonic()
                    if left > 0:
                        n.cond.wait(left)
                    if n.faulted and not stop.is_set() and time.monotonic() >= pacer.release_at(True):
                        pacer.started(time.monotonic(), True)
                        n.publish_held_period()
                    continue
                while True:
                    tick = n.step_count // n.decimation  # re-read: a restart may happen while waiting
                    answered = n.latest is not None and n.latest.tick == tick
                    left = pacer.release_at(answered) - time.monotonic()
                    if left <= 0 or stop.is_set():
                        break
                    n.cond.wait(left)
                if stop.is_set():
                    return
                pacer.started(time.monotonic(), answered)
                if answered:
                    n.apply_answer(n.latest)
                else:
                    self._watchdog(tick)
                try:
                    n.advance_control_period()
                except Exception:
                    if not n.context.ok():
                        return  # Ctrl-C shut the context down under us: a normal stop, not a failure
                    raise
            now = time.monotonic()
            if self.pub_report is not None and now >= next_report:
                next_report = now + report_period
                self._report(pacer.take_report(now))
            if log_period > 0 and now >= next_log:
                next_log = now + log_period
                n.get_logger().info(f"real time, last {log_period:g} s: {pacer.take_window(now).describe()}; "
                                    f"{self.stale_count} stale-command damps, {n.rejected_commands} "
                                    f"rejected motor commands in all")

    def _report(self, w: WindowStats) -> None:
        """Publish one conformance window; warn once (with the figures) when the machine does not keep real time.
        The first window after the loop closes is skipped for the warning: it holds the nodes' start-up."""
        n = self.node
        assert self.pub_report is not None
        report = w.as_dict(n.control_period / n.p["realtime_factor"] * 1e3)
        self.pub_report.publish(String(data=json.dumps(report)))
        self.reports += 1
        assert self.pacer is not None
        if (not self.warned_slow and self.pacer.closed and self.reports > 2 and w.ticks > 0
                and w.rtf < n.p["realtime_warn_rtf"] * n.p["realtime_factor"]):
            self.warned_slow = True
            n.get_logger().warning(
                f"this machine is not keeping real time: real-time factor {w.rtf:.3f} over the last {w.wall_s:.1f} s "
                f"(control period p99 {w.period_ms[1]:.1f} ms for {report['control_period_ms']['target']:g} ms, "
                f"lateness p99 {w.lateness_ms[1]:.1f} ms); an SDK program timed on the wall clock sees a slower "
                f"robot. Warned once; /vasimov/realtime has the figures")

    def _watchdog(self, tick: int) -> None:
        """A tick stepped without its answer (a participant silent for answer_timeout): the last command while it
        is younger than command_timeout, then pure damping."""
        n = self.node
        last = n.latest
        if last is None:
            n.apply_damping()
            return
        age = (tick - last.tick) * n.control_period
        if age > n.p["command_timeout"]:
            self.stale_count += 1
            n.apply_damping()
            n.log_limited("stale", f"motor command is {age:.3f} s old (limit {n.p['command_timeout']} s): "
                                   "damping all joints")
        else:
            n.apply_answer(last)

    def stats(self) -> dict[str, float]:
        n = self.node
        w = self.pacer.summary(time.monotonic())
        p50, p99, mx = w.lateness_ms
        q50, q99, qmx = w.period_ms
        return {"period_p50_ms": q50, "period_p99_ms": q99, "period_max_ms": qmx,
                "ticks": w.ticks, "rtf": round(w.rtf, 4), "sim_s": round(w.sim_s, 3), "wall_s": round(w.wall_s, 3),
                "late_ticks": w.late_ticks, "unanswered": w.unanswered, "slipped_s": round(self.pacer.slipped_s, 3),
                "stale_commands": self.stale_count, "rejected_commands": n.rejected_commands,
                "rejected_sim_control": n.rejected_sim_control, "physics_faults": n.physics_faults,
                "p50_ms": p50, "p99_ms": p99, "max_ms": mx}
