"""The SDK bridge's side of the simulator's disturbances: the sustained-force endpoints and what the plant reports.

* ``POST /api/sim/force {"body", "force": [x, y, z]}``: a constant force (N, world frame) on the body until replaced
  or cleared; ``[0, 0, 0]`` clears it. Bounded by the robot's weight (``vasimov.sim_control.MAX_SUSTAINED_FORCE_N``).
  400: a broken rule, 404: no such body, 409: the plant is faulted. 202: sent to the plant.
* ``DELETE /api/sim/force`` clears every sustained force (``{"body": name}`` or ``?body=name``: that one).
* ``GET /api/sim/force``: the sustained forces now on the robot, as the plant last reported them.

The view (``DisturbanceView``) is built from the plant's own event lines on ``/vasimov/sim/events``, not from what the
bridge sent, so it also shows what a command script or the ROS service did, and a restart (which clears every force)
is never missed. ``GET /api/sim/counters`` carries it under ``disturbances``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Collection
from typing import Any
from urllib.parse import parse_qs

from vasimov_msgs.msg import SimControl

from vasimov.sim_control import MAX_SUSTAINED_FORCE_N, PushError, parse_force
from vasimov_bridge.http_api import HttpError, Request, Response


class DisturbanceView:
    """What the plant's event lines say about the current life: boot state, sustained forces, counts. Pure."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.epoch = 0
        self.boot = "gantry"
        self.forces: dict[str, list[float]] = {}
        self.counts = {"pushes": 0, "forces": 0, "restarts": 0, "rejected": 0}
        self.last: dict[str, Any] | None = None
        self.unreadable = 0

    def update(self, line: str) -> None:
        try:
            event = json.loads(line)
            kind = event["event"]
            epoch = int(event["epoch"])
        except (ValueError, KeyError, TypeError):
            self.unreadable += 1
            return
        with self._lock:
            self.last = event
            if kind == "restart":
                self.counts["restarts"] += 1
                self.epoch, self.boot, self.forces = epoch, str(event.get("boot", "gantry")), {}
                return
            if epoch != self.epoch:
                return  # an older life's line, replayed to a reader that joined late
            if kind == "push":
                self.counts["pushes"] += 1
            elif kind == "force":
                self.counts["forces"] += 1
                self.forces = {str(b): list(f) for b, f in dict(event.get("active", {})).items()}
            elif kind == "rejected":
                self.counts["rejected"] += 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"epoch": self.epoch, "boot": self.boot, "sustained_forces": dict(self.forces),
                    "events": dict(self.counts), "last_event": self.last}


class ForceControl:
    """``/api/sim/force``: the HTTP inlet of a sustained force (the plant applies it and reports it)."""

    def __init__(self, view: DisturbanceView, bodies: Callable[[], Collection[str]],
                 send: Callable[[SimControl], None], refuse_while_faulted: Callable[[str], None],
                 log: Callable[[str], None]) -> None:
        self.view, self.bodies, self.send, self.refuse, self.log = view, bodies, send, refuse_while_faulted, log

    def http_get(self, req: Request) -> Any:
        snap = self.view.snapshot()
        return {"sustained_forces": snap["sustained_forces"], "epoch": snap["epoch"],
                "max_force_n": round(MAX_SUSTAINED_FORCE_N, 1)}

    def http_post(self, req: Request) -> Any:
        try:
            f = parse_force(req.body)
        except PushError as exc:
            raise HttpError(400, str(exc)) from None
        self._send(f.body, f.force)
        self.log(f"sustained force {list(f.force)} N on {f.body} requested over HTTP")
        return Response({"body": f.body, "force": list(f.force), "cleared": f.clears, "until": "cleared"}, status=202)

    def http_delete(self, req: Request) -> Any:
        body = req.body.get("body") if isinstance(req.body, dict) else None
        body = body or (parse_qs(req.query).get("body") or [None])[0]
        targets = [body] if body else sorted(self.view.snapshot()["sustained_forces"])
        for b in targets:
            self._send(b, (0.0, 0.0, 0.0))
        return Response({"cleared": targets}, status=202)

    def _send(self, body: str, force: tuple[float, float, float]) -> None:
        if body not in self.bodies():
            raise HttpError(404, f"no body {body!r}; valid: {', '.join(sorted(self.bodies()))}")
        self.refuse("force")
        self.send(SimControl(action=SimControl.ACTION_FORCE, body=body, force=[float(v) for v in force]))
