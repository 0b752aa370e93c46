"""Several trials on one device, placed by their measured memory (``resources.per_trial: auto``).

`read_memory` asks the driver what each device holds and which processes hold it
(``nvidia-smi --query-gpu`` and ``--query-compute-apps``; ``npu-smi info`` for Ascend).
`Packing` is the policy: given plain numbers (each device's size, what runs on it, each
trial's peak so far) it says on which device a trial may start, or none. The local executor
samples, asks and acts (`tuner.executors._local`); nothing here starts or stops a process.

The rules, in the order they apply:

- a device with nothing on it takes any trial: the first trial on a device runs alone;
- nobody joins a trial until it has been measured `SETTLE` times (its memory has grown past
  start-up), nor a trial that must run alone (the retry of one that ran out of memory while
  packed);
- a trial fits when the device's memory, less ``headroom`` and what other processes hold,
  covers what the trials on it hold or are expected to reach plus the newcomer's estimate;
- the estimate for some parameters is the largest peak measured with the same parameters;
  else, with ``memory_params`` named, the largest measured peak scaled by the ratio of those
  parameters (batch size 64 after 32 measured: twice); else the largest peak measured times
  `FALLBACK_MARGIN`, because other parameters (width, depth) may change memory too;
- each out-of-memory failure of a packed trial multiplies every estimate by `CAUTION_STEP`;
  a resumed campaign recalls its earlier failures and peaks from the trials' records
  (`Packing.recall`), so it is as cautious as the run it continues.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tuner.executors._base import Placed
from tuner.executors._procs import session_of
from tuner.executors._tool import run_tool

__all__ = [
    "DeviceMemory",
    "Packing",
    "TrialMemory",
    "held_by_session",
    "is_out_of_memory",
    "read_memory",
    "still_alone",
]

#: Samples of a running trial before another may join its device.
SETTLE = 2
#: Estimate for parameters that may change memory in ways nobody named.
FALLBACK_MARGIN = 1.25
#: What every estimate is multiplied by after a packed trial ran out of memory.
CAUTION_STEP = 1.5

_OOM = re.compile(
    r"out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED"
    r"|EL0004|memory allocation failed|failed to alloc(?:ate)? (?:device )?memory",
    re.IGNORECASE,
)


def is_out_of_memory(text: str) -> bool:
    """Whether a trial's output tail says that it ran out of device memory (CUDA, cuBLAS,
    cuDNN, PyTorch's ``OutOfMemoryError``, Ascend's ``EL0004`` and allocation failures)."""
    return bool(_OOM.search(text))


@dataclass
class DeviceMemory:
    """One device as the driver reports it, in MiB: its size, what is used on it (None when
    the driver does not say), and what each process holds."""

    total: float
    used: float | None = None
    by_pid: dict[int, float] = field(default_factory=dict)


def _number(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:  # "[N/A]", "[Not Supported]"
        return None


def _cuda_memory(ids: Sequence[str], path: str | None) -> dict[str, DeviceMemory]:
    def _run(argv: list[str]) -> str:
        return run_tool(argv, path=path)

    found: dict[str, DeviceMemory] = {}
    query = "--query-gpu=index,uuid,memory.total,memory.used"
    for line in _run(["nvidia-smi", query, "--format=csv,noheader,nounits"]).splitlines():
        cells = [c.strip() for c in line.split(",")]
        total = _number(cells[2]) if len(cells) == 4 else None
        if total is not None:
            for key in cells[:2]:
                found[key] = DeviceMemory(total, _number(cells[3]))
    # A MIG instance's size is in its profile's name (``MIG 3g.20gb``).
    for m in re.finditer(r"MIG \d+g\.(\d+)gb\s+Device\s+\d+: \(UUID: (MIG-[^)]*)\)",
                         _run(["nvidia-smi", "-L"])):  # fmt: skip
        found[m.group(2)] = DeviceMemory(float(m.group(1)) * 1024)
    apps = _run(
        ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"]
    )
    by_pid: dict[int, float] = {}
    for line in apps.splitlines():
        cells = line.split(",")
        used = _number(cells[1]) if len(cells) == 2 else None
        if used is not None and cells[0].strip().isdigit():
            by_pid[int(cells[0])] = by_pid.get(int(cells[0]), 0.0) + used
    out = {d: found[d] for d in ids if d in found}
    for memory in out.values():
        memory.by_pid = by_pid  # pids are matched to trials, whose device is known
    return out


def _ascend_memory(ids: Sequence[str], path: str | None) -> dict[str, DeviceMemory]:
    # ``npu-smi info``: an NPU row ("0  910B3 | OK | ..."), its chip row below it whose last
    # cell ends in HBM "used / total", then a process table ("0  0 | pid | name | MB").
    out: dict[str, DeviceMemory] = {}
    by_pid: dict[int, float] = {}
    npu: str | None = None
    for line in run_tool(["npu-smi", "info"], path=path).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        head = cells[0].split()
        if len(cells) < 3 or not head or not head[0].isdigit():
            continue
        hbm = re.findall(r"(\d+)\s*/\s*(\d+)", cells[-1])
        if len(head) == 2 and not head[1].isdigit():
            npu = head[0]
        elif len(head) == 1 and hbm and npu is not None:
            used, total = (float(x) for x in hbm[-1])
            out[npu] = DeviceMemory(total, used)
        elif len(head) == 2 and cells[1].isdigit():
            used_mb = _number(cells[-1])
            if used_mb is not None:
                by_pid[int(cells[1])] = by_pid.get(int(cells[1]), 0.0) + used_mb
    found = {d: out[d] for d in ids if d in out}
    for memory in found.values():
        memory.by_pid = by_pid
    return found


def read_memory(
    kind: str, ids: Sequence[str], *, path: str | None = None
) -> dict[str, DeviceMemory]:
    """What the driver says of devices ``ids`` (``gpu`` or ``npu``); devices it says nothing
    of are absent. ``path``: where to find the tool (None: this process's ``PATH``). Never
    raises."""
    if kind == "gpu":
        return _cuda_memory(ids, path)
    if kind == "npu":
        return _ascend_memory(ids, path)
    return {}


def held_by_session(memory: Mapping[str, DeviceMemory]) -> dict[int, float]:
    """MiB held on the devices of ``memory``, by session (every trial leads its own)."""
    by_pid: dict[int, float] = {}
    for device in memory.values():
        by_pid.update(device.by_pid)
    held: dict[int, float] = {}
    for pid, mib in by_pid.items():
        session = session_of(pid)
        if session is not None:
            held[session] = held.get(session, 0.0) + mib
    return held


def still_alone(placed: Sequence[Placed]) -> list[dict[str, Any]]:
    """The parameters of the earlier attempts that ran out of memory beside others and were
    not run again since: their retries run alone."""
    return [
        dict(p.params)
        for p in placed
        if p.packed_oom
        and not any(q.number > p.number and dict(q.params) == dict(p.params) for q in placed)
    ]


@dataclass
class TrialMemory:
    """A trial on a device, as the policy sees it: its parameters, the largest memory measured
    for it (MiB), how many times it was measured, whether it must run alone."""

    params: Mapping[str, Any]
    peak: float = 0.0
    samples: int = 0
    alone: bool = False


class Packing:
    """The placement policy of one campaign (see the module docstring). ``headroom``: the
    share of each device kept free; ``memory_params``: the parameters memory grows with in
    proportion (None: unknown, so estimates keep `FALLBACK_MARGIN`). Not thread-safe: the
    executor calls it from the controller's thread."""

    def __init__(self, *, headroom: float = 0.1, memory_params: Sequence[str] | None = None):
        self.headroom = headroom
        self.memory_params = None if memory_params is None else list(memory_params)
        self.caution = 1.0
        self._peaks: dict[Any, tuple[dict[str, Any], float]] = {}

    @property
    def _measured(self) -> list[tuple[dict[str, Any], float]]:
        return list(self._peaks.values())

    def measured(self, key: Any, params: Mapping[str, Any], peak: float) -> None:
        """The peak so far of trial ``key`` (re-measured as it runs: the last word counts)."""
        if peak > 0:
            self._peaks[key] = (dict(params), peak)

    def ran_out(self) -> None:
        """A packed trial ran out of memory: every estimate grows from now on."""
        self.caution *= CAUTION_STEP

    def recall(self, placed: Sequence[Placed]) -> str | None:
        """Take the measured peaks of the campaign's earlier attempts, and grow as cautious
        as their out-of-memory failures beside other trials made the run before; a line
        saying so when there were any (None: none)."""
        for p in placed:
            if p.peak_memory_mib:
                self.measured(("recalled", p.number), p.params, p.peak_memory_mib)
        failures = sum(1 for p in placed if p.packed_oom)
        if not failures:
            return None
        self.caution *= CAUTION_STEP**failures
        return (
            f"packing: {failures} earlier trial(s) ran out of device memory beside others; "
            f"memory estimates x{self.caution:.2f}"
        )

    def estimate(self, params: Mapping[str, Any] | None) -> float | None:
        """MiB a trial of ``params`` is expected to reach (None: nothing measured yet);
        ``params`` None stands for any parameters (the largest estimate)."""
        if not self._measured:
            return None
        largest = max(peak for _, peak in self._measured)
        if params is not None:
            same = [peak for p, peak in self._measured if p == dict(params)]
            if same:
                return max(same) * self.caution
            if self.memory_params is not None:
                scaled = [self._scaled(p, peak, params) for p, peak in self._measured]
                known = [s for s in scaled if s is not None]
                if known:
                    return max(known) * self.caution
        margin = 1.0 if self.memory_params == [] else FALLBACK_MARGIN
        return largest * margin * self.caution

    def _scaled(
        self, source: Mapping[str, Any], peak: float, params: Mapping[str, Any]
    ) -> float | None:
        ratio = 1.0
        for name in self.memory_params or ():
            old, new = source.get(name), params.get(name)
            if old == new:
                continue
            if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (old, new)):
                return None
            before, after = float(old), float(new)  # type: ignore[arg-type]
            if not (math.isfinite(before) and before > 0 and math.isfinite(after)):
                return None
            ratio *= max(after, 0.0) / before
        return peak * ratio

    def room(self, memory: DeviceMemory, running: Sequence[TrialMemory]) -> float:
        """MiB of ``memory`` left for one more trial beside ``running``."""
        held = sum(t.peak for t in running)
        others = max(0.0, (memory.used or 0.0) - held)
        expected = sum(max(t.peak, self.estimate(t.params) or t.peak) for t in running)
        return memory.total * (1 - self.headroom) - others - expected

    def admits(
        self,
        memory: DeviceMemory | None,
        running: Sequence[TrialMemory],
        params: Mapping[str, Any] | None,
        *,
        alone: bool = False,
    ) -> bool:
        """Whether a trial of ``params`` may start on a device holding ``running`` now."""
        if not running:
            return True
        if alone or memory is None or any(t.alone or t.samples < SETTLE for t in running):
            return False
        need = self.estimate(params)
        return need is not None and need <= self.room(memory, running)
