"""The collector interface: how a trial's metric values reach the controller.

A trial may report through `tuner.trial.report` (the channel file), through plain
``mlflow.log_metric`` into its own run (named in its environment), or only by printing. One collector
per channel; the controller makes a fresh set per trial attempt (collectors keep per-trial
state such as step counters) and calls them from its one thread.
"""

from __future__ import annotations

import abc

from tuner.executors import Report, TrialHandle, TrialOutcome

__all__ = ["Collector"]


class Collector(abc.ABC):  # noqa: B024 - both hooks are optional
    """Turns one trial's output into metric values."""

    #: Recorded with each value so that a run says where its numbers came from.
    source: str = "collector"

    def collect(self, handle: TrialHandle) -> list[Report]:
        """Intermediate reports that arrived since the previous call. Never blocks long;
        never raises for malformed trial output (it is skipped)."""
        return []

    def final(self, handle: TrialHandle, outcome: TrialOutcome) -> dict[str, float]:
        """Final metric values read once the trial has ended (only for metrics that no live
        report gave). Default: none."""
        return {}
