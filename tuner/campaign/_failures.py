"""A campaign's failure budget: ``budget.max_failures`` failed trial attempts (a retried
failure counts too; an interrupted trial does not), and whether a failed attempt is retried
(``trial.retries``, ``trial.retry_on``). An attempt that ran out of device memory while
sharing its device is the packing's fault, not its configuration's: it is always retried (alone),
and neither counts as a failure nor uses up a retry."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tuner.campaign._running import RunningTrial
    from tuner.config import BudgetConfig, TrialConfig
    from tuner.executors import TrialOutcome

__all__ = ["FailureBudget"]


class FailureBudget:
    """The failed attempts of campaign ``campaign`` counted so far (every controller's on a
    shared study, as read at setup, plus this one's since) against ``budget``."""

    def __init__(self, campaign: str, budget: BudgetConfig, trial: TrialConfig) -> None:
        self._campaign = campaign
        self._max = budget.max_failures
        self._trial = trial
        self.failures = 0
        self._last: str | None = None

    def spent(self, more: int = 0) -> bool:
        """Whether the budget is spent, or would be after ``more`` further failures."""
        return self.failures + more >= self._max

    def already_spent(self) -> str:
        """Why a campaign whose budget was spent before this controller started stops."""
        return (
            f"campaign {self._campaign!r} already has {self.failures} failed trial "
            f"attempt(s), budget.max_failures={self._max}; raise it to continue"
        )

    def stop_reason(self) -> str:
        """Why the campaign stops once its budget is spent."""
        return (
            f"campaign {self._campaign!r} stopped: {self.failures} failed trial "
            f"attempt(s) reached budget.max_failures={self._max}; last: {self._last}"
        )

    def count(
        self, rt: RunningTrial, outcome: TrialOutcome, reason: str | None, *, tries: int
    ) -> bool:
        """Count a failed attempt; whether it is retried. ``tries``: the failed attempts of
        its configuration in a row, this one included (a scheduler's continuation is a later
        attempt of its chain, but it starts a new run of tries; an attempt that ran out of
        memory beside others is not on record as failed, so it is not among them)."""
        if outcome.packed_oom:
            return True
        self.failures += 1
        self._last = f"trial {rt.number}: {reason}"
        return (
            tries <= self._trial.retries
            and self.failures < self._max
            and self._trial.retries_on(outcome.exit_code, outcome.signal_name, outcome.timed_out)
        )
