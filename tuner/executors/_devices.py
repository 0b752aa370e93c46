"""Which devices this machine has, and how they are cut into trial slots.

``resources.devices: auto`` looks for CUDA GPUs (``nvidia-smi -L``), then Ascend NPUs
(``npu-smi info -l``, else the ``/dev/davinciN`` nodes), else gives CPU slots. A GPU cut into
MIG instances is listed as its instances (their ``MIG-...`` UUIDs, which CUDA takes in
``CUDA_VISIBLE_DEVICES``), each used like a whole GPU. A slot is the tuple of device ids one
trial holds; its environment variables (`tuner._protocol.device_env`) say which devices the
trial may see. With ``resources.per_trial: 1/k`` each device gives k slots (``share``), and
with ``auto`` it gives up to `AUTO_PER_DEVICE`, filled as measured memory allows
(`tuner.executors._packing`).
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from tuner._errors import ConfigError
from tuner._protocol import ASCEND_DEVICES, CUDA_DEVICES, device_env
from tuner.config import ResourcesConfig
from tuner.executors._tool import run_tool as _run

__all__ = ["Slot", "detect_devices", "make_slots", "parse_gpus", "slots_for"]


@dataclass(frozen=True)
class Slot:
    index: int
    kind: str  # cpu | gpu | npu
    devices: tuple[str, ...]
    #: Slots cut from the same device (1: the trial holds its devices alone).
    share: int = 1

    def env(self) -> dict[str, str]:
        return device_env(self.kind, self.devices)

    @property
    def label(self) -> str:
        return f"{self.kind}:{','.join(self.devices)}" if self.devices else f"cpu#{self.index}"


def _allowed(found: list[str], variable: str) -> list[str]:
    """The devices this controller was given: under Slurm, a shared node or a wrapper that
    restricted the visible GPUs / NPUs (`tuner._protocol.device_env`), trials must stay inside
    that set (the ids are physical, as each trial's runtime reads them afresh)."""
    given = os.environ.get(variable)
    if given is None:
        return found
    listed = [d.strip() for d in given.split(",") if d.strip()]
    if not all(d.isdigit() or d in found for d in listed):
        return found  # GPU UUIDs: no index to intersect with
    return [d for d in listed if d in found]


_GPU = re.compile(r"^GPU (\d+): (.*?)(?: \(UUID: ([^)]*)\))?$")
_MIG = re.compile(r"^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: (MIG-[^)]*)\)")


def parse_gpus(listing: str) -> list[dict[str, str]]:
    """The CUDA devices of a ``nvidia-smi -L`` listing, ``{"id", "name"}`` each: a GPU by its
    index, or, when it is cut into MIG instances, each instance by its ``MIG-...`` UUID (a
    MIG-enabled GPU runs nothing as a whole)."""
    found: list[dict[str, str]] = []
    gpu: dict[str, str] | None = None
    for line in listing.splitlines():
        m = _GPU.match(line)
        if m:
            gpu = {"id": m.group(1), "name": m.group(2).strip()}
            found.append(gpu)
            continue
        mig = _MIG.match(line)
        if mig and gpu is not None:
            if found and found[-1] is gpu:
                found.pop()  # the GPU gives way to its instances
            found.append({"id": mig.group(3), "name": f"MIG {mig.group(1)} on GPU {gpu['id']}"})
    return found


def _cuda_devices() -> list[str]:
    out = _run(["nvidia-smi", "-L"])
    return _allowed([d["id"] for d in parse_gpus(out)], CUDA_DEVICES)


def _ascend_devices() -> list[str]:
    out = _run(["npu-smi", "info", "-l"])
    ids = re.findall(r"NPU ID\s*:\s*(\d+)", out)
    if not ids:
        nodes = (re.fullmatch(r"/dev/davinci(\d+)", p) for p in glob.glob("/dev/davinci*"))
        ids = sorted((m.group(1) for m in nodes if m), key=int)
    return _allowed(ids, ASCEND_DEVICES)


def detect_devices(kind: str | None = None) -> tuple[str, list[str]]:
    """``(kind, ids)`` found on this machine; ``kind`` restricts the search (cpu: none)."""
    if kind in (None, "gpu"):
        ids = _cuda_devices()
        if ids or kind == "gpu":
            return "gpu", ids
    if kind in (None, "npu"):
        ids = _ascend_devices()
        if ids or kind == "npu":
            return "npu", ids
    return "cpu", []


def make_slots(
    kind: str,
    devices: str | Sequence[str | int],
    per_trial: int | float | str,
    parallel: int | None,
) -> list[Slot]:
    """Cut the devices into slots of ``per_trial`` devices; at most ``parallel`` slots (None:
    every slot the devices give). A fraction ``1/k`` gives k slots per device, ``auto`` up to
    ``ResourcesConfig.AUTO_PER_DEVICE``; their order takes each device once before any twice, so that trials
    spread over the devices before they share one.

    Raises `ConfigError` when the devices cannot give even one slot, or when an explicit
    ``parallel`` asks for more slots than the devices allow.
    """
    if kind == "cpu":
        return [Slot(i, "cpu", ()) for i in range(max(1, parallel or 1))]
    if isinstance(devices, str):
        found_kind, ids = detect_devices(kind)
        where = f"resources.devices: auto found {len(ids)} {found_kind} device(s)"
    else:
        ids = [str(d) for d in devices]
        where = f"resources.devices lists {len(ids)} device(s)"
    if isinstance(per_trial, str) or per_trial < 1:
        share = (
            ResourcesConfig.AUTO_PER_DEVICE if isinstance(per_trial, str) else round(1 / per_trial)
        )
        if not ids:
            raise ConfigError(
                f"resources.per_trial: {per_trial} needs at least one {kind} device "
                f"({where}), got none"
            )
        possible = len(ids) * share
        if parallel is not None and parallel > possible:
            raise ConfigError(
                f"resources.parallel must be <= {possible} ({where}, {share} trials per "
                f"device at per_trial: {per_trial}), got {parallel}"
            )
        order = [(j, d) for j in range(share) for d in ids]
        return [
            Slot(i, kind, (d,), share) for i, (_, d) in enumerate(order[: parallel or possible])
        ]
    per_trial = max(1, int(per_trial))
    if len(ids) < per_trial:
        raise ConfigError(
            f"resources.per_trial must be <= the {kind} devices available ({where}), "
            f"got {per_trial}"
        )
    possible = len(ids) // per_trial
    if parallel is not None and parallel > possible:
        raise ConfigError(
            f"resources.parallel must be <= {possible} ({where}, {per_trial} per trial), "
            f"got {parallel}"
        )
    count = parallel or possible
    return [Slot(i, kind, tuple(ids[i * per_trial : (i + 1) * per_trial])) for i in range(count)]


def slots_for(resources: ResourcesConfig, kind: str) -> list[Slot]:
    """The slots a ``resources:`` section gives on devices of ``kind`` (``auto`` resolved):
    `make_slots`, with ``parallel`` as the config set it, else 1 for whole devices and what
    fits for shared ones (one CPU slot where a shared device turned out to be the CPU)."""
    parallel: int | None = resources.parallel
    if resources.trials_per_device != 1 and not resources.parallel_given:
        parallel = 1 if kind == "cpu" else None
    return make_slots(kind, resources.devices, resources.per_trial, parallel)
