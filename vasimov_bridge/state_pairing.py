"""Which firmware state may go out with a plant sample, and when a sample must be reported as a firmware fault.

A RobotState frame joins two parts made by different processes: the plant's sensor sample of physics step ``s``
and the firmware's decision (mode, flags, alerts). Step ``s`` (``s >= 1``) was driven by the motor command that
answered control tick ``r = ceil(s / decimation) - 1``, so its honest firmware part is the firmware state of tick
``r``. The bridge must never pair a fresh sample with a stale firmware state (a stalled edge would otherwise be
reported as "MOVE, all fine" while the plant's watchdog damps the robot), so every sample is judged by the age of
its firmware part in simulated ticks:

* firmware known for tick ``>= r``: **fresh**, sent with the firmware state of tick ``r`` (or the nearest older one
  kept; the newest when none is older);
* firmware behind by at most ``max_lag_ticks``: **held** (bounded) until the firmware state arrives; the two parts
  travel on different topics, so the firmware state of tick ``r`` may simply be a little behind on the wire;
* behind by more (the plant stepped on without answers: the edge is stalled or gone): **stale**, the held samples
  and this one leave as firmware-fault frames (DAMP, a critical alert), what the robot's own watchdog reports when a
  firmware thread stops responding.
* before the epoch's first firmware state: **held** for up to ``max_lag_ticks`` ticks (or while the plant says the
  edge answered them), then released with it, so a life that boots straight into STAND (``boot: standing``) is
  STAND from its first frame; the two topics race after a restart, and pairing the new life's first samples with
  nothing read as DAMP for a few frames to a client that connected right after the restart. If no firmware state
  comes within that bound (the edge still starting), samples go out without a firmware part: the robot streams DAMP
  from boot.

The plant says which tick's answer drove each sample (``command_tick``). A sample driven by the answer to its own
tick proves the edge decided that tick: its firmware part is only late on the wire (the bridge's executor behind on
a loaded machine, seen lagging 5+ ticks), so it is held however far behind the firmware topic is, and past
``max_held`` it leaves **fresh** with the newest firmware state known (late, never invented). Judging such samples
by lag alone reported a live firmware as stalled under load: DAMP + WATCHDOG_TIMEOUT, which the SDK reads as a
latched fault, so `menlo stand` failed. Only samples the plant stepped without their answer are judged by lag.

Pure: ticks in, decisions out; the node turns decisions into frames. Unit-tested alone.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

FRESH = "fresh"
STALE = "stale"


@dataclass(frozen=True)
class Paired[P, F]:
    """One sample ready to send: ``firmware`` is the part to pair it with (None: none yet / stale). ``P`` is a
    plant sample type, ``F`` a firmware state type."""

    sample: P
    step: int
    firmware: F | None
    verdict: str  # FRESH or STALE


def driving_tick(step: int, decimation: int) -> int:
    """The control tick whose answer drove physics step ``step`` (-1 for the boot step 0)."""
    return -(-step // decimation) - 1


class StatePairing[P, F]:
    """Pairs plant samples with firmware states of one epoch; ``reset()`` on a new epoch."""

    def __init__(self, decimation: int, max_lag_ticks: int = 5, max_held: int = 64, history: int = 16) -> None:
        if decimation < 1 or max_lag_ticks < 0 or max_held < 1 or history < 1:
            raise ValueError("decimation >= 1, max_lag_ticks >= 0, max_held >= 1, history >= 1")
        self.decimation = decimation
        self.max_lag_ticks = max_lag_ticks
        self.max_held = max_held
        self._history: deque[tuple[int, F]] = deque(maxlen=history)
        self._held: deque[tuple[int, P]] = deque()
        self.stale_frames = 0  # cumulative (not reset with the epoch): samples sent as firmware faults
        self.held_frames = 0  # cumulative: samples that waited for their firmware part
        self.late_frames = 0  # cumulative: answered samples sent past max_held with the newest firmware known

    def reset(self) -> None:
        self._history.clear()
        self._held.clear()

    @property
    def newest_tick(self) -> int | None:
        return self._history[-1][0] if self._history else None

    @property
    def held(self) -> int:
        return len(self._held)

    def firmware(self, tick: int, state: F) -> list[Paired[P, F]]:
        """A firmware state for ``tick``: returns the held samples it releases (in step order)."""
        if self._history and tick <= self._history[-1][0]:
            return []  # out of order or repeated: the newer one already rules
        self._history.append((tick, state))
        out: list[Paired[P, F]] = []
        while self._held and driving_tick(self._held[0][0], self.decimation) <= tick:
            step, sample = self._held.popleft()
            out.append(self._fresh(step, sample))
        return out

    def plant(self, step: int, sample: P, command_tick: int | None = None) -> list[Paired[P, F]]:
        """A plant sample: returns what may be sent now (possibly older held samples first, or nothing).

        ``command_tick``: the tick whose answer the plant applied for this step (None: unknown; -1: none)."""
        need = driving_tick(step, self.decimation)
        newest = self.newest_tick
        if newest is None:
            return self._before_firmware(step, sample, need, command_tick)
        if need <= newest and not self._held:
            return [self._fresh(step, sample)]
        if command_tick is not None and command_tick >= need:  # the edge decided this tick: its state is in the mail
            if len(self._held) < self.max_held:
                self._held.append((step, sample))
                self.held_frames += 1
                return []
            out = self._release_all(step, sample, self._fresh)
            self.late_frames += len(out)
            return out
        if need - newest > self.max_lag_ticks or len(self._held) >= self.max_held:
            return self._release_all(step, sample, self._stale)
        self._held.append((step, sample))
        self.held_frames += 1
        return []

    def _before_firmware(self, step: int, sample: P, need: int, command_tick: int | None) -> list[Paired[P, F]]:
        """No firmware state of this epoch yet: hold within the boot grace, else send without a firmware part."""
        answered = command_tick is not None and command_tick >= need >= 0
        if len(self._held) < self.max_held and (need <= self.max_lag_ticks or answered):
            self._held.append((step, sample))
            self.held_frames += 1
            return []
        return self._release_all(step, sample, self._fresh)  # the firmware still booting: DAMP from boot

    def _release_all(self, step: int, sample: P, judge: Callable[[int, P], Paired[P, F]]) -> list[Paired[P, F]]:
        """The held samples and this one, in step order, each judged by ``judge`` (``_fresh`` or ``_stale``)."""
        out = [judge(s, p) for s, p in self._held]
        self._held.clear()
        out.append(judge(step, sample))
        return out

    def _fresh(self, step: int, sample: P) -> Paired[P, F]:
        need = driving_tick(step, self.decimation)
        chosen: F | None = None
        for tick, state in self._history:  # oldest first: keep the newest with tick <= need
            if tick <= need or chosen is None:
                chosen = state
            if tick >= need:
                break
        return Paired(sample, step, chosen, FRESH)

    def _stale(self, step: int, sample: P) -> Paired[P, F]:
        self.stale_frames += 1
        return Paired(sample, step, None, STALE)
