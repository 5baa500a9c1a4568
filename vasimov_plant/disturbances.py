"""The plant's disturbances: pushes and sustained forces from every inlet, and what happened, told as events.

Inlets: ``SimControl`` messages (the HTTP API through the SDK bridge, command scripts through the edge, anyone on
the graph) and the ROS services ``/vasimov/sim/push`` and ``/vasimov/sim/restart`` served here. Each request goes
through the one rule set (``vasimov.sim_control``) and the plant's own body list; a broken rule is a logged, counted
rejection (a service reply says which rule), never a crash or a silent change.

Timing: a request without a tick acts from the next physics step. A command script's request names the control tick
it acts from (``SimControl.tick``, sent one tick ahead by the edge): the plant queues it and applies it at the start
of the control period that answers that tick, so the same script pushes on the same physics step in every run. One
that arrives after its period began (never seen; counted as ``late``) acts at once.

Every applied or rejected request, and every restart with its boot state, is one JSON line on ``/vasimov/sim/events``
(``vasimov.sim_control.event_json``) with the life (epoch), simulated time and physics step it took effect at, so a
recording explains its run. The latest lines are kept for a late reader (transient local).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from std_msgs.msg import String
from vasimov_msgs.msg import SimControl
from vasimov_msgs.srv import Push, Restart

from vasimov.boot_states import BootError, parse_boot
from vasimov.ros import qos, topics
from vasimov.sim_control import PushError, event_json, parse_force, parse_push

if TYPE_CHECKING:
    from vasimov_plant.node import PlantNode


class Disturbances:
    def __init__(self, node: PlantNode) -> None:
        self.node = node
        self.pub = node.create_publisher(String, topics.SIM_EVENTS, qos.EVENTS)
        self.queue: list[tuple[int, Callable[[], None]]] = []  # (tick, apply) of this life, in arrival order
        self.counts = {"pushes": 0, "forces": 0, "restarts": 0, "rejected": 0, "late": 0}
        node.create_service(Push, topics.SIM_PUSH_SERVICE, self.on_push_service)
        node.create_service(Restart, topics.SIM_RESTART_SERVICE, self.on_restart_service)

    # -- events --------------------------------------------------------------------------------------------------
    def emit(self, kind: str, **fields: Any) -> None:
        n = self.node
        self.pub.publish(String(data=event_json(kind, epoch=n.epoch, sim_time=round(n.sim_time(), 6),
                                                step=int(n.step_count), **fields)))

    def reject(self, action: str, source: str, reason: str) -> None:
        self.counts["rejected"] += 1
        self.emit("rejected", action=action, source=source, reason=reason)
        key = f"{action} while faulted" if self.node.faulted else action  # one rate-limited log line per kind
        self.node._reject_sim_control(key, f"{action} rejected: {reason}")

    # -- requests (callers hold node.cond) -----------------------------------------------------------------------
    def _check(self, body: str) -> None:
        if self.node.faulted:
            raise PushError("the physics is faulted until a restart")
        if body not in self.node.core.index.body_ids:
            raise PushError(f"unknown body {body!r}; valid: {', '.join(self.node.core.body_names)}")

    def push(self, body: str, force: list[float], duration: float, source: str, tick: int = -1,
             epoch: int = 0) -> str:
        """Validate and apply (or queue, with a tick) a push; ``PushError`` names the broken rule."""
        req = parse_push({"body": body, "force": force, "duration": duration})
        self._check(req.body)

        def apply(late: bool = False) -> None:
            self.node.core.apply_push(req.body, np.asarray(req.force, dtype=float), req.duration)
            self.counts["pushes"] += 1
            self.emit("push", source=source, body=req.body, force=list(req.force), duration=req.duration,
                      **({"late": True} if late else {}))

        self._when(tick, epoch, apply)
        return f"push {list(req.force)} N on {req.body} for {req.duration} s"

    def force(self, body: str, force: list[float], source: str, tick: int = -1, epoch: int = 0) -> str:
        """Validate and set (or queue) a sustained force; a zero force clears it."""
        req = parse_force({"body": body, "force": force})
        self._check(req.body)

        def apply(late: bool = False) -> None:
            core = self.node.core
            core.set_force(req.body, np.asarray(req.force, dtype=float))
            self.counts["forces"] += 1
            self.emit("force", source=source, body=req.body, force=list(req.force), cleared=req.clears,
                      active={b: list(f) for b, f in core.sustained_forces.items()},
                      **({"late": True} if late else {}))

        self._when(tick, epoch, apply)
        return (f"sustained force on {req.body} cleared" if req.clears
                else f"sustained force {list(req.force)} N on {req.body} until cleared")

    def _when(self, tick: int, epoch: int, apply: Callable[..., None]) -> None:
        n = self.node
        if tick < 0:
            apply()
            return
        if epoch != n.epoch:
            raise PushError(f"scheduled for life {epoch}, but this is life {n.epoch}")
        if tick < n.core.step_count // n.decimation:
            self.counts["late"] += 1
            apply(True)
            return
        self.queue.append((tick, apply))

    def apply_due(self, tick: int) -> None:
        """At the start of the control period answering ``tick``: the queued requests whose tick has come."""
        due = [a for k, a in self.queue if k <= tick]
        if due:
            self.queue = [(k, a) for k, a in self.queue if k > tick]
            for apply in due:
                apply()

    def restarted(self, boot_label: str, source: str) -> None:
        """A new life began (the core is already booted): forget the last life's queue, tell it."""
        self.queue.clear()
        self.counts["restarts"] += 1
        self.emit("restart", source=source, boot=boot_label)

    # -- SimControl and services ----------------------------------------------------------------------------------
    def on_message(self, msg: SimControl) -> None:
        """A PUSH or FORCE message (node.cond held)."""
        scripted = msg.tick >= 0
        source = "script" if scripted else "sim_control"
        action = "push" if msg.action == SimControl.ACTION_PUSH else "force"
        try:
            force = [float(f) for f in msg.force]
            if action == "push":
                text = self.push(msg.body, force, float(msg.duration), source, int(msg.tick), int(msg.epoch))
            else:
                text = self.force(msg.body, force, source, int(msg.tick), int(msg.epoch))
        except PushError as exc:
            self.reject(action, source, str(exc))
            return
        when = f" from tick {msg.tick}" if scripted else ""
        self.node.get_logger().info(f"{text}{when} ({source})")

    def on_push_service(self, request: Push.Request, response: Push.Response) -> Push.Response:
        force = [float(f) for f in request.force]
        with self.node.cond:
            try:
                if request.hold:
                    text = self.force(request.body, force, "service")
                else:
                    text = self.push(request.body, force, float(request.duration), "service")
            except PushError as exc:
                self.reject("force" if request.hold else "push", "service", str(exc))
                response.accepted, response.message = False, str(exc)
                return response
        self.node.get_logger().info(f"{text} (service)")
        response.accepted, response.message = True, text
        return response

    def on_restart_service(self, request: Restart.Request, response: Restart.Response) -> Restart.Response:
        try:
            boot = parse_boot(request.boot)
        except BootError as exc:
            with self.node.cond:
                self.reject("restart", "service", str(exc))
            response.accepted, response.message = False, str(exc)
            return response
        with self.node.cond:
            self.node.restart(boot, "service")
            response.epoch = int(self.node.epoch)
        response.accepted, response.message = True, f"restarted into {boot.label} (life {response.epoch})"
        return response
