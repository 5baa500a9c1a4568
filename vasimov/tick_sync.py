"""Pairs the inputs a node needs for one control tick, so lockstep answers are computed from exactly tick k's data.

Messages arrive on separate topics in any order; `TickSync` keeps the latest few per input keyed by (epoch, tick)
and reports a tick as ready once every required input for it is present. The edge (plant state + policy answer) and
the policy runner (plant state + the firmware's state after the tick before) both pair their inputs with it. Pure
and unit-tested.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any


class TickSync:
    def __init__(self, inputs: tuple[str, ...], depth: int = 64) -> None:
        self.inputs = inputs
        self.depth = depth
        self._slots: OrderedDict[tuple[int, int], dict[str, Any]] = OrderedDict()
        self.epoch = 0
        self.dropped_stale = 0

    def put(self, name: str, epoch: int, tick: int, value: Any) -> None:
        if name not in self.inputs:
            raise KeyError(f"unknown input {name!r}; expected one of {self.inputs}")
        if epoch < self.epoch:
            self.dropped_stale += 1
            return
        if epoch > self.epoch:
            self.reset(epoch)
        slot = self._slots.setdefault((epoch, tick), {})
        slot[name] = value
        while len(self._slots) > self.depth:
            self._slots.popitem(last=False)

    def ready(self, tick: int) -> dict[str, Any] | None:
        slot = self._slots.get((self.epoch, tick))
        if slot is None or any(k not in slot for k in self.inputs):
            return None
        return slot

    def take(self, tick: int) -> dict[str, Any] | None:
        """Return and forget tick's inputs (and every older tick) if all are present."""
        slot = self.ready(tick)
        if slot is None:
            return None
        self.forget_through(tick)
        return slot

    def forget_through(self, tick: int) -> None:
        """Forget tick's inputs and every older tick's (a tick answered without all of them, in real time)."""
        for key in [k for k in self._slots if k[0] == self.epoch and k[1] <= tick]:
            del self._slots[key]

    def get(self, name: str, tick: int) -> Any | None:
        slot = self._slots.get((self.epoch, tick))
        return None if slot is None else slot.get(name)

    def reset(self, epoch: int) -> None:
        self._slots.clear()
        self.epoch = epoch
