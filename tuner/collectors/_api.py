"""Values the trial sent with `tuner.trial.report`."""

from __future__ import annotations

from tuner.collectors._base import Collector
from tuner.executors import Report, TrialHandle

__all__ = ["TrialApiCollector"]


class TrialApiCollector(Collector):
    source = "api"

    def collect(self, handle: TrialHandle) -> list[Report]:
        return handle.reports()
