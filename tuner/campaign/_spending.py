"""The budget in the units trials spend: reported steps and device-hours.

`Spending` reads what the study's trials spent (every controller's, `tuner resume`'s
predecessors' included: `tuner.coordination.spent_of`), lets a running trial report a new
step only while a step is left (`take_step`: the one that would pass ``budget.steps`` is
refused and the trial stopped there), and once a limit is reached stops every running trial
(`stop_spent`). The study is read at most every `REFRESH_S`; between two reads, the steps
this controller's trials reported are counted here, so one controller never passes
``budget.steps``; several workers may pass it by the steps reported between two reads.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from tuner.coordination import Limits, Spent, spent_of
from tuner.schedulers import Decision, Stop
from tuner.search import FAIL_ATTR, STALE_ATTR, internals

if TYPE_CHECKING:
    import optuna

    from tuner.campaign._running import RunningTrial
    from tuner.config import CampaignConfig

__all__ = ["Spending", "limits_of"]

#: Seconds between two reads of what the study's trials spent.
REFRESH_S = 0.2


def limits_of(config: CampaignConfig, imported: int = 0) -> Limits:
    """The ``budget:`` limits of ``config``; ``imported`` trials (``warm_start:``) are added
    to the trial limit, since they are finished trials of the study that never count."""
    trials = config.trial_limit
    per_trial = config.resources.per_trial
    return Limits(
        trials=None if trials is None else trials + imported,
        steps=config.budget.steps,
        device_hours=config.budget.device_hours,
        share=1.0 if per_trial == "auto" else float(per_trial),
    )


class Spending:
    """What the campaign's trials spent against its limits (see the module's text)."""

    def __init__(
        self, limits: Limits, imported: int, message: Callable[[str], Any] | None = None
    ) -> None:
        self.limits = limits
        self._imported = imported
        self._message = message
        self._spent = Spent(0, 0, 0.0)
        self._read_at = float("-inf")
        self._steps_since = 0
        #: The limit reached (its config key), once one is.
        self.reached: str | None = None
        #: Where its stops take effect (`tuner.campaign._decide.Decisions.apply`), set by the
        #: controller once the campaign's parts are built.
        self.apply: Callable[[RunningTrial, Decision], None] | None = None

    def spent(self, study: optuna.Study | None) -> Spent:
        """What the study's trials spent (imported trials left out), read at most every
        `REFRESH_S`, plus the steps taken here since."""
        now = time.monotonic()
        if study is not None and now - self._read_at >= REFRESH_S:
            try:
                trials = study.get_trials(deepcopy=False)
            except Exception:  # the storage may be what failed: the last reading stands
                trials = None
            if trials is not None:
                self._spent = spent_of(trials, self.limits.share)
                self._read_at, self._steps_since = now, 0
        s = self._spent
        return Spent(s.trials, s.steps + self._steps_since, s.device_hours)

    def take_step(self, rt: RunningTrial) -> bool:
        """Whether ``rt`` may report one more step of its own (it is counted); else it is
        stopped, at the step the budget ran out."""
        steps = self.limits.steps
        if steps is not None and self._spent.steps + self._steps_since >= steps:
            self._stop(rt, "budget.steps", f"{steps} steps spent")
            return False
        self._steps_since += 1
        return True

    def stop_spent(self, study: optuna.Study | None, running: Iterable[RunningTrial]) -> bool:
        """Once ``budget.steps`` or ``budget.device_hours`` is spent, stop every running
        trial; True from then on (no new trial fits)."""
        if not self.limits.spends:
            return False
        if self.reached is None:
            spent = self.spent(study)
            reached = self.limits.reached(
                Spent(spent.trials + self._imported, spent.steps, spent.device_hours)
            )
            if reached is None or reached == "budget.trials":
                return False
            self.reached = reached
            if self._message is not None:
                self._message(
                    f"{reached} reached ({_amount(reached, spent)} spent): no new trials are "
                    "started, the running ones are stopped"
                )
        what = "device-hours spent" if self.reached == "budget.device_hours" else "steps spent"
        for rt in running:
            self._stop(rt, self.reached, f"{_limit(self.limits, self.reached)} {what}")
        return True

    def close_waiting(
        self, study: optuna.Study, locked: Callable[[], AbstractContextManager[Any]]
    ) -> int:
        """Once a spent limit ended the campaign, end the WAITING trials (asked ahead and
        given back, or re-queued): nothing is left to run them with, and a WAITING trial would
        wait forever. Each is told FAIL and marked superseded, so it never counts; how many."""
        import optuna

        if self.reached not in ("budget.steps", "budget.device_hours"):
            return 0
        reason = f"not run: {self.reached} was spent before it started"
        ended = 0
        with locked():
            storage = internals.storage_of(study)
            for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.WAITING,)):
                trial_id = internals.trial_id(t)
                storage.set_trial_user_attr(trial_id, FAIL_ATTR, reason)
                storage.set_trial_system_attr(trial_id, STALE_ATTR, reason)
                storage.set_trial_state_values(trial_id, optuna.trial.TrialState.FAIL)
                ended += 1
        return ended

    def _stop(self, rt: RunningTrial, key: str, amount: str) -> None:
        assert self.apply is not None, "the controller sets where decisions take effect"
        self.apply(rt, Stop(f"stopped at the budget: {key} ({amount})", {}))


def _limit(limits: Limits, key: str) -> str:
    if key == "budget.steps":
        return str(limits.steps)
    return f"{limits.device_hours:g}"


def _amount(key: str, spent: Spent) -> str:
    if key == "budget.steps":
        return f"{spent.steps} steps"
    return f"{spent.device_hours:.3g} device-hours"
