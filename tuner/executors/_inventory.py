"""What the tuner finds on this machine: GPUs, NPUs, the visible-device lists, and the problems
that would make ``resources.devices: auto`` find less than the user expects.

`take_inventory` runs the same probes as `tuner.executors._devices` (``nvidia-smi -L``,
``npu-smi info -l``, the ``/dev/davinciN`` nodes) and keeps what each said, so that
``tuner devices`` can show it and say, one line each, what went wrong.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any

from tuner._protocol import ASCEND_DEVICES, CUDA_DEVICES

__all__ = ["Inventory", "take_inventory"]


@dataclass
class Inventory:
    """``gpus``/``npus``: ``{"id", "name"}`` per device found; ``visible``: the visible-device
    variables as set (None when unset); ``usable``: the device kind and ids trials would get
    (`tuner.executors._devices.detect_devices`); ``problems``: one line each; ``missing``:
    the tools absent on a machine that has no GPU or NPU at all, one line each (a problem only
    for a campaign that asks for GPUs or NPUs: a CPU machine is meant to lack them)."""

    gpus: list[dict[str, str]] = field(default_factory=list)
    npus: list[dict[str, str]] = field(default_factory=list)
    visible: dict[str, str | None] = field(default_factory=dict)
    usable: tuple[str, list[str]] = ("cpu", [])
    problems: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpus": self.gpus,
            "npus": self.npus,
            "visible": self.visible,
            "usable": {"kind": self.usable[0], "devices": self.usable[1]},
            "problems": self.problems,
            "missing": self.missing,
        }


def _probe(argv: list[str]) -> tuple[str | None, str | None]:
    """``(stdout, None)``, or ``(None, why not)`` when the tool is absent or fails."""
    if shutil.which(argv[0]) is None:
        return None, f"{argv[0]} not found on PATH"
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"{' '.join(argv)} could not run ({exc})"
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        return None, f"{' '.join(argv)} exited with code {done.returncode}" + (
            f": {said[-1][:160]}" if said else ""
        )
    return done.stdout, None


def _missing(variable: str, found: list[dict[str, str]], kind: str) -> str | None:
    value = os.environ.get(variable)
    if value is None or not value.strip():
        return None
    listed = [d.strip() for d in value.split(",") if d.strip()]
    ids = {d["id"] for d in found}
    if not all(d.isdigit() or d in ids for d in listed):
        return None  # GPU UUIDs: not comparable with indices
    absent = [d for d in listed if d not in ids]
    if not absent:
        return None
    return (
        f"{variable}={value} names {kind} device(s) {', '.join(absent)} that this machine "
        f"does not have (found: {', '.join(sorted(ids, key=_order)) or 'none'})"
    )


def _order(device: str) -> tuple[int, str]:
    return (int(device), "") if device.isdigit() else (-1, device)


def take_inventory() -> Inventory:
    """Probe this machine; never raises."""
    from tuner.executors._devices import detect_devices, parse_gpus

    inv = Inventory(visible={v: os.environ.get(v) for v in (CUDA_DEVICES, ASCEND_DEVICES)})
    absent: list[tuple[bool, str]] = []  # (the tool is missing rather than failing, line)
    out, why = _probe(["nvidia-smi", "-L"])
    if out is not None:
        inv.gpus = parse_gpus(out)
    elif why is not None:
        absent.append((why.endswith("not found on PATH"), f"no CUDA GPU found: {why}"))
    out, why = _probe(["npu-smi", "info", "-l"])
    if out is not None:
        inv.npus = [{"id": i, "name": "Ascend NPU"} for i in re.findall(r"NPU ID\s*:\s*(\d+)", out)]
    if not inv.npus:
        nodes = (re.fullmatch(r"/dev/davinci(\d+)", p) for p in glob.glob("/dev/davinci*"))
        ids = sorted((m.group(1) for m in nodes if m), key=int)
        inv.npus = [{"id": i, "name": "Ascend NPU (/dev/davinci)"} for i in ids]
        if not ids and why is not None:
            line = f"no Ascend NPU found: {why}, and no /dev/davinci* device"
            absent.append((why.endswith("not found on PATH"), line))
    # A missing tool is no problem on a GPU or an NPU machine, and on a CPU machine only for a
    # campaign that asks for GPUs or NPUs; a failing one always is (a driver that does not
    # answer).
    found_any = bool(inv.gpus or inv.npus)
    inv.problems += [line for missing, line in absent if not missing]
    inv.missing = [line for missing, line in absent if missing and not found_any]
    for variable, found, kind in (
        (CUDA_DEVICES, inv.gpus, "GPU"),
        (ASCEND_DEVICES, inv.npus, "NPU"),
    ):
        wrong = _missing(variable, found, kind)
        if wrong is not None:
            inv.problems.append(wrong)
    inv.usable = detect_devices(None)
    return inv
