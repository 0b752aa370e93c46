"""Executors: where trial processes run (local device slots; a Ray cluster)."""

from __future__ import annotations

from tuner.executors._base import (
    Executor,
    ExecutorFullError,
    Report,
    TrialHandle,
    TrialOutcome,
    TrialSpec,
)

__all__ = [
    "Executor",
    "ExecutorFullError",
    "Report",
    "TrialHandle",
    "TrialOutcome",
    "TrialSpec",
]
