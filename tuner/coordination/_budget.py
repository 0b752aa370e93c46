"""The exact trial budget, shared by every controller of a study.

Every trial of the study counts, whatever its state, except trials *superseded* by a copy
with the same parameters (system attribute ``tuner:stale``): a failed attempt that is
retried, or a trial interrupted by a crash and re-queued. A new trial is created only under
the study lock, after counting; so N controllers end with exactly ``budget.trials``.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from tuner.search import _internals as internals
from tuner.search._attrs import STALE_ATTR

if TYPE_CHECKING:
    import optuna

    from tuner.coordination._heartbeat import Heartbeat
    from tuner.coordination._lock import StudyLock

__all__ = ["ask_within_budget", "counted_trials"]


def counted_trials(study: optuna.Study) -> int:
    """Trials that count against the budget: all, in any state, except superseded ones."""
    trials = study.get_trials(deepcopy=False)
    return sum(1 for t in trials if STALE_ATTR not in t.system_attrs)


def ask_within_budget(
    study: optuna.Study,
    budget: int,
    lock: StudyLock,
    heartbeat: Heartbeat | None = None,
    fixed_distributions: dict[str, Any] | None = None,
) -> optuna.Trial | None:
    """``study.ask()`` unless the study already holds ``budget`` counted trials (then None).

    A WAITING (re-queued or enqueued) trial is always taken first, whatever the count. The
    trial's first heartbeat is recorded before the lock is released.
    """
    import optuna

    with lock.hold():
        waiting = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.WAITING,))
        if not waiting and counted_trials(study) >= budget:
            return None
        with warnings.catch_warnings():
            # "Heartbeat of storage is supposed to be used with Study.optimize": this module
            # records the heartbeats that optimize would.
            warnings.filterwarnings("ignore", message="Heartbeat of storage")
            trial = study.ask(fixed_distributions)
        if heartbeat is not None:
            heartbeat.add(internals.trial_id(trial))
        return trial
