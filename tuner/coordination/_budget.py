"""The exact trial budget, shared by every controller of a study.

Every trial of the study counts, whatever its state, except trials *superseded* by a copy
with the same parameters (system attribute ``tuner:stale``): a failed attempt that is
retried, or a trial interrupted by a crash and re-queued; and a paused trial a scheduler
promoted (its continuation names it in ``tuner:supersedes``). A new trial is created only under
the study lock, after counting; so N controllers end with exactly ``budget.trials``.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from lineage import faults
from tuner.search import FAIL_ATTR, OWNER_ATTR, STALE_ATTR, counts, internals, superseded_numbers

if TYPE_CHECKING:
    import optuna

    from tuner.coordination._heartbeat import Heartbeat
    from tuner.coordination._lock import StudyLock

__all__ = ["ask_within_budget", "counted_trials"]


def counted_trials(study: optuna.Study) -> int:
    """Trials that count against the budget: all, in any state, except superseded ones
    (marked stale, or a paused trial a scheduler's continuation promoted)."""
    trials = study.get_trials(deepcopy=False)
    superseded = superseded_numbers(trials)
    return sum(1 for t in trials if counts(t, superseded))


def ask_within_budget(
    study: optuna.Study,
    budget: int,
    lock: StudyLock,
    heartbeat: Heartbeat | None = None,
    fixed_distributions: dict[str, Any] | None = None,
    owner: str | None = None,
) -> optuna.Trial | None:
    """``study.ask()`` unless the study already holds ``budget`` counted trials (then None).

    A WAITING (re-queued or enqueued) trial is always taken first, whatever the count. The
    trial's first heartbeat (and its ``owner``, `OWNER_ATTR`) is recorded before the lock is
    released. When the lock was lost
    while held (its database session died), the count is checked again under the lock, and a
    new trial beyond the budget is given back (FAIL, superseded, never run).
    """
    import optuna

    while True:
        with lock.hold() as held:
            waiting = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.WAITING,))
            if not waiting and counted_trials(study) >= budget:
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
            if counted_trials(study) <= budget:
                return trial
            _give_back(study, trial, budget)
        if heartbeat is not None:
            heartbeat.remove(internals.trial_id(trial))


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
