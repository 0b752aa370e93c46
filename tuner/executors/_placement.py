"""Which free slot a local trial takes, and what its device saw of it.

Several slots may name one device (``resources.per_trial: 1/k`` or ``auto``). `Placement`
keeps the trials running on each device, samples their device memory (the driver's per
process figures, matched to a trial by its session: every local trial leads one; where the
driver attributes nothing, the figure the trial reported of itself), asks the
`Packing` policy where a trial may start under ``auto``, and, once a trial ended, says on its
outcome how many trials shared its device, its peak memory, and whether it ran out of memory
beside others (then its retry runs alone and the policy grows more cautious).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tuner.executors._base import Placed, TrialOutcome
from tuner.executors._devices import Slot
from tuner.executors._packing import (
    DeviceMemory,
    Packing,
    TrialMemory,
    held_by_session,
    is_out_of_memory,
    read_memory,
    still_alone,
)

__all__ = ["Placement"]


@dataclass
class _Entry:
    slot: Slot
    pid: int | None
    memory: TrialMemory
    key: tuple[int, int]
    handle: Any
    neighbours: int = 0


class Placement:
    """The devices of ``slots`` and who runs on them. ``packing``: the memory policy under
    ``per_trial: auto`` (None: a slot is free when it is free); ``interval``: seconds between
    two memory samples. Called from the controller's thread only."""

    def __init__(
        self, slots: Sequence[Slot], packing: Packing | None = None, *, interval: float = 1.0
    ) -> None:
        self._kind = slots[0].kind if slots else "cpu"
        self._devices = sorted({d for s in slots for d in s.devices})
        self._shared = any(s.share > 1 for s in slots)
        self._packing = packing
        self._interval = interval
        self._entries: dict[int, _Entry] = {}  # by id() of the handle
        self._memory: dict[str, DeviceMemory] = {}
        self._sampled = float("-inf")
        self._alone: list[dict[str, Any]] = []

    def recall(self, placed: Sequence[Placed]) -> str | None:
        """What earlier attempts of the campaign left on record (`Packing.recall`); the
        retries of those that ran out of memory beside others, not yet run again, run
        alone. A line worth showing, or None."""
        if not self._shared:
            return None
        self._alone.extend(still_alone(placed))
        return self._packing.recall(placed) if self._packing is not None else None

    # ----- what runs where -----------------------------------------------------------------

    def _running(self, device: str) -> list[_Entry]:
        return [e for e in self._entries.values() if device in e.slot.devices]

    def _fits(self, slot: Slot, params: Mapping[str, Any] | None, alone: bool) -> bool:
        running = [e.memory for d in slot.devices for e in self._running(d)]
        if self._packing is not None:
            return all(
                self._packing.admits(self._memory.get(d), running, params, alone=alone)
                for d in slot.devices
            )
        return not running or not (alone or any(t.alone for t in running))

    def free(self, free: Sequence[Slot]) -> int:
        """How many of the ``free`` slots may take a trial now (one per device at most
        while memory decides, so that each start is measured before the next)."""
        if not self._shared:
            return len(free)
        self.sample()
        alone = bool(self._alone)
        usable = [s for s in free if self._fits(s, None, alone)]
        if self._packing is None and not alone:
            return len(usable)
        return len({s.devices for s in usable})

    def choose(self, free: Sequence[Slot], params: Mapping[str, Any]) -> tuple[Slot, bool]:
        """The slot a trial of ``params`` takes, and whether it runs alone (the retry of a
        packed trial that ran out of memory). Prefers the device with the fewest trials."""
        alone = dict(params) in self._alone
        if alone:
            self._alone.remove(dict(params))
        if not self._shared:
            return free[0], alone
        ranked = sorted(free, key=lambda s: (len(self._running(s.devices[0])), s.index))
        for wanted in (params, None):
            for slot in ranked:
                if self._fits(slot, wanted, alone):
                    return slot, alone
        return ranked[0], alone  # `free` said yes for unknown parameters: the best bet

    def started(self, handle: Any, slot: Slot, pid: int | None, alone: bool) -> None:
        """``handle`` (a trial of ``handle.spec``) runs on ``slot`` as session ``pid``."""
        spec = handle.spec
        entry = _Entry(slot, pid, TrialMemory(dict(spec.params), alone=alone),
                       (spec.number, spec.attempt), handle)  # fmt: skip
        for device in slot.devices:
            others = self._running(device)
            for other in others:
                other.neighbours = max(other.neighbours, len(others))
            entry.neighbours = max(entry.neighbours, len(others))
        self._entries[id(handle)] = entry

    # ----- memory --------------------------------------------------------------------------

    def sample(self) -> None:
        """Read the devices' memory (at most once per ``interval``) and each trial's share."""
        if self._kind == "cpu" or not self._entries:
            return
        now = time.monotonic()
        if now - self._sampled < self._interval:
            return
        self._sampled = now
        self._memory = read_memory(self._kind, self._devices)
        held = held_by_session(self._memory)
        for entry in self._entries.values():
            # The driver's figure for the trial's session; where it attributes nothing (a
            # container hides the processes), what the trial said of itself.
            now_mib = held.get(entry.pid or -1, 0.0) or entry.handle.reported_memory or 0.0
            if now_mib > 0:
                entry.memory.samples += 1
                entry.memory.peak = max(entry.memory.peak, now_mib)
                if self._packing is not None:
                    self._packing.measured(entry.key, entry.memory.params, entry.memory.peak)

    def ended(self, handle: Any, outcome: TrialOutcome) -> TrialOutcome:
        """``outcome`` with what the device saw of the trial; forgets the trial."""
        entry = self._entries.pop(id(handle), None)
        if entry is None:
            return outcome
        failed = not outcome.succeeded and not outcome.stopped and outcome.launch_error is None
        tail = f"{outcome.stderr_tail}\n{outcome.stdout_tail}"
        packed_oom = failed and entry.neighbours > 0 and is_out_of_memory(tail)
        if packed_oom:
            self._alone.append(dict(entry.memory.params))
            if self._packing is not None:
                self._packing.ran_out()
        return dataclasses.replace(
            outcome,
            neighbours=entry.neighbours,
            peak_memory_mib=entry.memory.peak or None,
            packed_oom=packed_oom,
        )
