"""Names of what the tuner stores on Optuna trials and studies (beside params and values).

`tuner status`, `tuner resume`, workers and notebooks read these back, so each name is
spelled here once. User attributes are meant for people (``study.trials_dataframe()`` shows
them); system attributes (``tuner:`` prefix) are bookkeeping.
"""

from __future__ import annotations

__all__ = [
    "ATTEMPT_ATTR",
    "FAILED_ATTEMPT",
    "FAIL_ATTR",
    "LAUNCH_ATTR",
    "PARENT_RUN_ATTR",
    "PRUNE_ATTR",
    "RERUN_OF_ATTR",
    "RETRY_HISTORY_ATTR",
    "RETRY_OF_ATTR",
    "RETRY_OF_USER_ATTR",
    "STALE_ATTR",
    "SYSTEM_PREFIX",
]

# ----- user attributes of a trial ------------------------------------------------------------
#: Where and how the attempt was launched: pid/pgid/start ticks, host, device, run id, attempt.
LAUNCH_ATTR = "tuner.launch"
#: The attempt number of the trial (1 for a first run; a retry of a failure adds one).
ATTEMPT_ATTR = "tuner.attempt"
#: Why the trial failed / was pruned (shown by `tuner status` and in the study's dataframe).
FAIL_ATTR = "fail_reason"
PRUNE_ATTR = "prune_reason"
#: On a retry of a failed attempt: the number of the failed trial.
RETRY_OF_USER_ATTR = "tuner.retry_of"
#: On the copy of an interrupted trial: the number of the interrupted trial.
RERUN_OF_ATTR = "tuner.rerun_of"

# ----- system attributes of a trial ----------------------------------------------------------
#: Every tuner system attribute starts so; a re-queued copy inherits none of them.
SYSTEM_PREFIX = "tuner:"
#: A trial superseded by a copy with the same parameters (value: the reason); it does not
#: count against the budget.
STALE_ATTR = "tuner:stale"
#: A failed attempt (counts against ``budget.max_failures``, whether retried or not).
FAILED_ATTEMPT = "tuner:failed_attempt"
#: On a re-queued stale trial: the number of the trial it replaces, and the whole chain.
RETRY_OF_ATTR = "tuner:retry_of"
RETRY_HISTORY_ATTR = "tuner:retry_history"

# ----- user attributes of the study ----------------------------------------------------------
#: The campaign's parent MLflow run, reused by every later controller of the study.
PARENT_RUN_ATTR = "mlflow_parent_run_id"
