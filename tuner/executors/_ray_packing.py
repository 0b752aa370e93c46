"""Several Ray trials on one device: the share of a device each trial asks Ray for, and what
its device saw of it.

Ray places a task by the resources it asks for and never moves or resizes it, and the GPUs
(``num_gpus``) and NPUs (the ``NPU`` resource) of a node are divisible: tasks asking for
fractions share one device while their fractions add up to at most 1, each seeing that one
device. Ray does not look at memory, so under ``resources.per_trial: auto`` the fraction a
trial asks for is its memory estimate (`tuner.executors._packing.Packing.estimate`) over
the device memory packing may use (the smallest device measured, less the headroom): Ray's
own accounting then keeps the estimates of the trials on a device within its memory, whichever
node and device it picks. A fraction never goes below ``1 / AUTO_PER_DEVICE``.

- Before anything was measured a trial asks for a whole device, as the first trial on a local
  device runs alone, and no more of them start than the cluster has devices.
- The task measures its trial on the node (`tuner.executors._ray_node`: the device tool's
  per-process figures for the trial's session, else what the trial reported with
  `tuner.trial.report_memory`) and sends the figures back; they refine the estimates.
- A request is fixed once sent: only one trial at a time waits for Ray to place it, so
  queued requests do not outlive the estimate they were made with.
- A trial that fails out of memory while sharing its device (its node and device ids, as Ray
  assigned them, name its neighbours) is retried asking for a whole device, and every later
  estimate grows (`Packing.ran_out`); a resumed campaign recalls both (`RayPacking.recall`).

With a fixed fraction (``per_trial: 0.5``) every trial asks for it; neighbours and the
out-of-memory retry work the same way. Memory held outside Ray's accounting (another
program on the device) is not seen by Ray: keep it in the headroom.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from tuner.executors._base import Placed, TrialOutcome
from tuner.executors._packing import Packing, is_out_of_memory, still_alone

__all__ = ["RayPacking"]

#: Shares are rounded up to thousandths: Ray keeps four decimals of a resource, cutting off
#: the rest, so a share such as 0.3334 (0.33339999... in binary) would count as 0.3333.
_GRAIN = 1_000


class RayPacking:
    """How the trials of one Ray campaign share devices. ``per_trial``: a fraction 1/k or
    ``auto``; ``packing``: the memory policy under ``auto``; ``devices``: the devices of the
    kind the cluster has (whole-device requests before anything was measured);
    ``per_device``: the most trials on one device under ``auto``. Called from the
    controller's thread only."""

    def __init__(
        self,
        per_trial: float | str,
        packing: Packing | None,
        *,
        devices: int,
        per_device: int,
    ) -> None:
        self._per_trial = per_trial
        self._packing = packing
        self._devices = max(1, devices)
        self._least = 1.0 / per_device
        self._size: float | None = None  # MiB of the smallest device measured
        self._alone: list[dict[str, Any]] = []
        self._on: dict[int, tuple[Any, set[tuple[str, str]]]] = {}  # started, by id(handle)
        self._neighbours: dict[int, int] = {}
        self._peaks: dict[int, float] = {}

    @property
    def auto(self) -> bool:
        return self._per_trial == "auto"

    def recall(self, placed: Sequence[Placed]) -> str | None:
        """See `tuner.executors.Executor.recall`."""
        self._alone.extend(still_alone(placed))
        return self._packing.recall(placed) if self._packing is not None else None

    def may_submit(self, live: Sequence[Any]) -> bool:
        """Whether another trial may be sent now, beside the ``live`` handles (each with
        ``started`` once Ray placed it): under ``auto``, none waits to be placed, and before
        any estimate no more run than the cluster has devices."""
        if not self.auto:
            return True
        if any(not h.started for h in live):
            return False
        self._refresh(live)
        assert self._packing is not None
        if self._size is None or self._packing.estimate(None) is None:
            return len(live) < self._devices
        return True

    def request(self, params: Mapping[str, Any]) -> tuple[float, bool]:
        """The share of a device a trial of ``params`` asks for, and whether it runs alone
        (the retry of a trial that ran out of memory beside others)."""
        if dict(params) in self._alone:
            self._alone.remove(dict(params))
            return 1.0, True
        if not self.auto:
            return float(self._per_trial), False
        assert self._packing is not None
        need = self._packing.estimate(params)
        if need is None or self._size is None:
            return 1.0, False
        usable = self._size * (1 - self._packing.headroom)
        share = math.ceil(need / usable * _GRAIN) / _GRAIN
        return min(1.0, max(self._least, share)), False

    def started(self, handle: Any, node: str, devices: Sequence[str]) -> None:
        """``handle`` runs on ``devices`` of ``node``: it and the trials there are neighbours."""
        where = {(node, d) for d in devices}
        others = [h for h, on in self._on.values() if on & where]
        self._on[id(handle)] = (handle, where)
        for other in others:
            key = id(other)
            self._neighbours[key] = max(self._neighbours.get(key, 0), len(others))
        self._neighbours[id(handle)] = len(others)

    def measured(self, handle: Any, mib: float, total: float | None) -> None:
        """The node measured ``handle``'s trial at ``mib`` on a device of ``total`` MiB."""
        if total:
            self._size = total if self._size is None else min(self._size, total)
        if mib > 0:
            self._peaks[id(handle)] = max(self._peaks.get(id(handle), 0.0), mib)

    def _peak(self, handle: Any) -> float:
        return self._peaks.get(id(handle)) or handle.reported_memory or 0.0

    def _refresh(self, live: Sequence[Any]) -> None:
        if self._packing is None:
            return
        for handle in live:
            peak = self._peak(handle)
            if peak > 0:
                spec = handle.spec
                self._packing.measured((spec.number, spec.attempt), spec.params, peak)

    def ended(self, handle: Any, outcome: TrialOutcome) -> TrialOutcome:
        """``outcome`` with how many trials shared the device, the trial's peak memory, and
        whether it ran out of memory beside others; forgets the trial."""
        self._refresh([handle])
        peak = self._peak(handle)
        neighbours = self._neighbours.pop(id(handle), None)
        self._on.pop(id(handle), None)
        self._peaks.pop(id(handle), None)
        failed = not outcome.succeeded and not outcome.stopped and outcome.launch_error is None
        tail = f"{outcome.stderr_tail}\n{outcome.stdout_tail}"
        packed_oom = failed and bool(neighbours) and is_out_of_memory(tail)
        if packed_oom:
            self._alone.append(dict(handle.spec.params))
            if self._packing is not None:
                self._packing.ran_out()
        return dataclasses.replace(
            outcome,
            neighbours=neighbours,
            peak_memory_mib=peak or None,
            packed_oom=packed_oom,
        )
