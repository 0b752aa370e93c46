"""Values a plain-mlflow script logged into its own run (the one its environment names).

Read once, after the trial exits, and only for objective metrics that no live channel gave:
one query per trial, off the path of scripts that use `tuner.trial` or print.
"""

from __future__ import annotations

from collections.abc import Callable

from tuner.collectors._base import Collector
from tuner.executors import TrialHandle, TrialOutcome

__all__ = ["MlflowRunCollector"]


class MlflowRunCollector(Collector):
    source = "mlflow"

    def __init__(self, read_latest: Callable[[str], dict[str, float]]) -> None:
        self._read_latest = read_latest

    def final(self, handle: TrialHandle, outcome: TrialOutcome) -> dict[str, float]:
        run_id = handle.spec.run_id
        if not run_id:
            return {}
        return self._read_latest(run_id)
