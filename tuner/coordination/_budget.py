"""The budget, shared by every controller of a study: trials, steps and device-hours.

Every trial of the study counts, whatever its state, except trials *superseded* by a copy
with the same parameters (system attribute ``tuner:stale``): a failed attempt that is
retried, or a trial interrupted by a crash and re-queued; and a paused trial a scheduler
promoted (its continuation names it in ``tuner:supersedes``). A new trial is created only under
the study lock, after counting; so N controllers end with exactly ``budget.trials``.

Steps and device-hours are what the trials *spent*, every trial included (superseded ones
too: their work was done), read from the study alone, so that every worker and `tuner
resume` count the same: a trial's steps are its reported steps after the one it resumed from
(a continuation's copied reports are its parent's), its device-hours the devices it holds
(``resources.per_trial``; a fraction counts its fraction, a CPU slot as one device) times
the seconds its process ran (still running: since it started). A new trial is asked while
some of each is left; the controller stops the running ones where it is spent.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lineage import faults
from tuner.records import tags as T
from tuner.search import (
    FAIL_ATTR,
    IMPORTED_ATTR,
    LAUNCH_ATTR,
    OWNER_ATTR,
    RESUMED_STEP_ATTR,
    STALE_ATTR,
    counts,
    internals,
    superseded_numbers,
)

if TYPE_CHECKING:
    import optuna

    from tuner.coordination._heartbeat import Heartbeat
    from tuner.coordination._lock import StudyLock

__all__ = [
    "Limits",
    "Spent",
    "ask_within_budget",
    "counted_trials",
    "own_steps",
    "running_seconds",
    "spent_of",
]


@dataclass(frozen=True)
class Spent:
    """What the study's trials spent: counted trials, reported steps, device-hours."""

    trials: int
    steps: int
    device_hours: float


@dataclass(frozen=True)
class Limits:
    """The limits a campaign runs to: ``trials`` counted trials (imported ones included:
    the budget plus their number), ``steps``, ``device_hours`` (each None: no such limit).
    ``share``: the devices one trial holds (``resources.per_trial``; 1 for ``auto``)."""

    trials: int | None
    steps: int | None = None
    device_hours: float | None = None
    share: float = 1.0

    def reached(self, spent: Spent) -> str | None:
        """Which limit ``spent`` has reached (its config key), or None while all have room."""
        if self.trials is not None and spent.trials >= self.trials:
            return "budget.trials"
        if self.steps is not None and spent.steps >= self.steps:
            return "budget.steps"
        if self.device_hours is not None and spent.device_hours >= self.device_hours:
            return "budget.device_hours"
        return None

    @property
    def spends(self) -> bool:
        """Whether a limit counts what trials spend (steps or device-hours)."""
        return self.steps is not None or self.device_hours is not None


def own_steps(trial: optuna.trial.FrozenTrial) -> int:
    """The steps ``trial`` reported itself: after the step it resumed from, if any."""
    resumed = trial.user_attrs.get(RESUMED_STEP_ATTR)
    if resumed is None:
        return len(trial.intermediate_values)
    return sum(1 for step in trial.intermediate_values if step > resumed)


def running_seconds(trial: optuna.trial.FrozenTrial, now: float) -> float:
    """How long ``trial``'s process ran (so far, while it runs): its placement's duration
    once it ended, else since its launch (not since it was asked: a trial asked ahead waits
    for a slot first)."""
    placement = trial.user_attrs.get(T.PLACEMENT_ATTR) or {}
    duration = placement.get("duration")
    if isinstance(duration, int | float):
        return max(0.0, float(duration))
    started = (trial.user_attrs.get(LAUNCH_ATTR) or {}).get("started")
    if not isinstance(started, int | float):
        return 0.0
    if trial.state.is_finished():
        end = trial.datetime_complete.timestamp() if trial.datetime_complete else now
    else:
        end = now
    return max(0.0, end - float(started))


def spent_of(
    trials: Iterable[optuna.trial.FrozenTrial], share: float = 1.0, now: float | None = None
) -> Spent:
    """What ``trials`` (a study's, all of them) spent; imported ones spent nothing here."""
    now = time.time() if now is None else now
    own = [t for t in trials if IMPORTED_ATTR not in t.system_attrs]
    superseded = superseded_numbers(own)
    seconds = sum(running_seconds(t, now) for t in own)
    return Spent(
        trials=sum(1 for t in own if counts(t, superseded)),
        steps=sum(own_steps(t) for t in own),
        device_hours=seconds * share / 3600,
    )


def counted_trials(study: optuna.Study) -> int:
    """Trials that count against the budget: all, in any state, except superseded ones
    (marked stale, or a paused trial a scheduler's continuation promoted)."""
    trials = study.get_trials(deepcopy=False)
    superseded = superseded_numbers(trials)
    return sum(1 for t in trials if counts(t, superseded))


def ask_within_budget(
    study: optuna.Study,
    budget: int | Limits,
    lock: StudyLock,
    heartbeat: Heartbeat | None = None,
    fixed_distributions: dict[str, Any] | None = None,
    owner: str | None = None,
) -> optuna.Trial | None:
    """``study.ask()`` unless the study already holds ``budget`` counted trials, or has
    spent its steps or device-hours (a `Limits`); then None.

    A WAITING (re-queued or enqueued) trial is always taken first, whatever the count. The
    trial's first heartbeat (and its ``owner``, `OWNER_ATTR`) is recorded before the lock is
    released. When the lock was lost
    while held (its database session died), the count is checked again under the lock, and a
    new trial beyond the budget is given back (FAIL, superseded, never run).
    """
    import optuna

    limits = budget if isinstance(budget, Limits) else Limits(trials=budget)
    while True:
        with lock.hold() as held:
            trials = study.get_trials(deepcopy=False)
            waiting = [t for t in trials if t.state == optuna.trial.TrialState.WAITING]
            own = spent_of(trials, limits.share)
            # The trial limit counts the study's imported trials too (`limits.trials` holds
            # them: they are finished trials that never ran here).
            imported = sum(1 for t in trials if IMPORTED_ATTR in t.system_attrs)
            spent = Spent(own.trials + imported, own.steps, own.device_hours)
            if limits.spends and _spent_limit(limits, spent):
                return None  # a WAITING trial too: nothing is left to run it with
            if not waiting and limits.reached(spent) is not None:
                return None
            with warnings.catch_warnings():
                # "Heartbeat of storage is supposed to be used with Study.optimize": this
                # module records the heartbeats that optimize would.
                warnings.filterwarnings("ignore", message="Heartbeat of storage")
                trial = study.ask(fixed_distributions)
            faults.point("claimed-before-heartbeat")
            if owner is not None:
                storage = internals.storage_of(study)
                storage.set_trial_system_attr(internals.trial_id(trial), OWNER_ATTR, owner)
            if heartbeat is not None:
                heartbeat.add(internals.trial_id(trial))
        if not held.lost or trial.number in {t.number for t in waiting}:
            return trial
        # The lock's database session died while it was held (a restart, terminated
        # connections): another controller may have counted and asked at the same time. The
        # first to re-check over the budget gives its new trial back and asks again.
        with lock.hold():
            if limits.trials is None or counted_trials(study) <= limits.trials:
                return trial
            _give_back(study, trial, limits.trials)
        if heartbeat is not None:
            heartbeat.remove(internals.trial_id(trial))


def _spent_limit(limits: Limits, spent: Spent) -> bool:
    reached = limits.reached(spent)
    return reached is not None and reached != "budget.trials"


def _give_back(study: optuna.Study, trial: optuna.Trial, budget: int) -> None:
    """End a trial that was created beyond the budget, before it ran: FAIL and superseded
    (so it does not count), with the reason; no copy is queued."""
    import optuna

    storage, trial_id = internals.storage_of(study), internals.trial_id(trial)
    reason = (
        f"not run: created beyond budget.trials={budget} while the study lock's database "
        "session was lost (another controller asked at the same time)"
    )
    storage.set_trial_user_attr(trial_id, FAIL_ATTR, reason)
    storage.set_trial_system_attr(trial_id, STALE_ATTR, reason)
    storage.set_trial_state_values(trial_id, optuna.trial.TrialState.FAIL)
