"""Executors: where trial processes run (local device slots; a Ray cluster)."""

from __future__ import annotations

from lineage.lazy import lazy_names
from tuner.executors._base import (
    Executor,
    ExecutorFullError,
    Placed,
    Report,
    TrialHandle,
    TrialOutcome,
    TrialSpec,
    attempt_folder,
)
from tuner.executors._procs import end_attempt, end_group, known_ended

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tuner.executors._devices import detect_devices, make_slots, slots_for
    from tuner.executors._factory import default_executor
    from tuner.executors._inventory import take_inventory

# Device discovery runs nvidia-smi and npu-smi (subprocess, glob): it loads on first use, so
# that collectors and coordination, which import this package for its types, do not pay for it.
_LAZY = {
    "default_executor": "tuner.executors._factory",
    "detect_devices": "tuner.executors._devices",
    "make_slots": "tuner.executors._devices",
    "slots_for": "tuner.executors._devices",
    "take_inventory": "tuner.executors._inventory",
}

__getattr__ = lazy_names(globals(), _LAZY)


__all__ = [
    "Executor",
    "ExecutorFullError",
    "Placed",
    "Report",
    "TrialHandle",
    "TrialOutcome",
    "TrialSpec",
    "attempt_folder",
    "default_executor",
    "detect_devices",
    "end_attempt",
    "end_group",
    "known_ended",
    "make_slots",
    "slots_for",
    "take_inventory",
]
