"""The SDK bridge's link-impairment controls: start-up parameters, ``GET``/``POST /api/sim/link``, the event topic.

The model and its rules are the core's (``vasimov.link_impairment``); the lane applies them (``udp_lane``). This
module is the glue the node needs, kept out of ``sdk_node`` so the node stays a list of wirings:

* ``link_params()``: one parameter per direction and field (``link_state_loss``, ``link_command_delay_ms``, ...),
  bounds from the core, so ``vasimov up link_state_loss:=0.5`` starts with a lossy state stream;
* ``LinkControl``: applies settings to the lane, answers the HTTP routes (400 naming the field for a bad request),
  logs every change and publishes it, latched, on ``/vasimov/sim/link`` (JSON in a ``std_msgs/String``) so a
  recording says when the link changed and to what.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from vasimov.link_impairment import BOUNDS, DIRECTIONS, Impairment, LinkSettingError, parse_link_request
from vasimov.ros.params import ParamSpec
from vasimov_bridge.http_api import HttpError, Request
from vasimov_bridge.udp_lane import UdpLane

_FIELD_HELP = {
    "loss": "probability a datagram is lost (1.0 = blackout)",
    "delay_ms": "added delay in ms",
    "jitter_ms": "uniform +- jitter on the delay in ms",
    "duplicate": "probability a datagram arrives twice",
    "reorder": "probability a datagram is overtaken by the next one",
}
_DIRECTION_HELP = {"state": "RobotState robot -> SDK", "command": "RobotCommand SDK -> robot"}


def param_name(direction: str, field: str) -> str:
    return f"link_{direction}_{field}"


def link_params() -> tuple[ParamSpec, ...]:
    """The start-up link parameters (all 0.0: a perfect link). Give decimals (``1.0``): ROS types ``1`` an int."""
    return (
        ParamSpec("seed", 0, "Seed of the link impairment draws (the launch file passes the run's seed).",
                  min=0, max=2**31 - 1),
        *(ParamSpec(param_name(d, f), 0.0, f"Link impairment at start, {_DIRECTION_HELP[d]}: {_FIELD_HELP[f]} "
                    "(POST /api/sim/link changes it at run time).", min=lo, max=hi)
          for d in DIRECTIONS for f, (lo, hi) in BOUNDS.items()),
    )


def settings_from_params(params: Mapping[str, Any]) -> dict[str, Impairment]:
    return {d: Impairment(**{f: params[param_name(d, f)] for f in BOUNDS}) for d in DIRECTIONS}


class LinkControl:
    """Run-time link settings of one lane. ``log(text)`` and ``publish(json_text)`` are the node's."""

    def __init__(self, lane: UdpLane, seed: int, log: Callable[[str], None], publish: Callable[[str], None]) -> None:
        self._lane = lane
        self._seed = int(seed)
        self._log = log
        self._publish = publish

    def snapshot(self) -> dict[str, Any]:
        """What ``GET /api/sim/link`` answers and the event topic carries."""
        return {**{d: imp.as_dict() for d, imp in self._lane.link_settings().items()}, "seed": self._seed}

    def apply(self, settings: Mapping[str, Impairment], why: str) -> dict[str, Any]:
        for direction, impairment in settings.items():
            self._lane.set_link(direction, impairment)
        snap = self.snapshot()
        described = "; ".join(f"{d}: {_describe(self._lane.link_settings()[d])}" for d in DIRECTIONS)
        self._log(f"link ({why}): {described}")
        self._publish(json.dumps({"why": why, **snap}, separators=(",", ":")))
        return snap

    def http_get(self, _req: Request) -> Any:
        return self.snapshot()

    def http_post(self, req: Request) -> Any:
        try:
            settings = parse_link_request(req.body)
        except LinkSettingError as exc:
            raise HttpError(400, str(exc), field=exc.field) from None
        return self.apply(settings, f"POST /api/sim/link from {req.client[0]}")


def _describe(imp: Impairment) -> str:
    if not imp.active:
        return "perfect"
    return ", ".join(f"{k} {v:g}" for k, v in imp.as_dict().items() if v)
