"""Executors: where trial processes run (local device slots; a Ray cluster)."""

from __future__ import annotations

from tuner.executors._base import (
    Executor,
    ExecutorFullError,
    Report,
    TrialHandle,
    TrialOutcome,
    TrialSpec,
    attempt_folder,
)
from tuner.executors._procs import known_ended

__all__ = [
    "Executor",
    "ExecutorFullError",
    "Report",
    "TrialHandle",
    "TrialOutcome",
    "TrialSpec",
    "attempt_folder",
    "known_ended",
]
