"""Which devices this machine has, and how they are cut into trial slots.

``resources.devices: auto`` looks for CUDA GPUs (``nvidia-smi -L``), then Ascend NPUs
(``npu-smi info -l``, else the ``/dev/davinciN`` nodes), else gives CPU slots. A slot is the
tuple of device ids one trial holds; its environment variables (`tuner._protocol.device_env`)
say which devices the trial may see.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from tuner._errors import ConfigError
from tuner._protocol import ASCEND_DEVICES, CUDA_DEVICES, device_env

__all__ = ["Slot", "detect_devices", "make_slots"]


@dataclass(frozen=True)
class Slot:
    index: int
    kind: str  # cpu | gpu | npu
    devices: tuple[str, ...]

    def env(self) -> dict[str, str]:
        return device_env(self.kind, self.devices)

    @property
    def label(self) -> str:
        return f"{self.kind}:{','.join(self.devices)}" if self.devices else f"cpu#{self.index}"


def _run(argv: Sequence[str]) -> str:
    if shutil.which(argv[0]) is None:
        return ""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""


def _allowed(found: list[str], variable: str) -> list[str]:
    """The devices this controller was given: under Slurm, a shared node or a wrapper that
    restricted the visible GPUs / NPUs (`tuner._protocol.device_env`), trials must stay inside
    that set (the ids are physical, as each trial's runtime reads them afresh)."""
    given = os.environ.get(variable)
    if given is None:
        return found
    listed = [d.strip() for d in given.split(",") if d.strip()]
    if not all(d.isdigit() for d in listed):
        return found  # UUIDs or MIG names: no index to intersect with
    return [d for d in listed if d in found]


def _cuda_devices() -> list[str]:
    out = _run(["nvidia-smi", "-L"])
    return _allowed([m.group(1) for m in re.finditer(r"^GPU (\d+):", out, re.M)], CUDA_DEVICES)


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
    kind: str, devices: str | Sequence[str | int], per_trial: int, parallel: int | None
) -> list[Slot]:
    """Cut the devices into slots of ``per_trial`` devices; at most ``parallel`` slots.

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
    per_trial = max(1, per_trial)
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
