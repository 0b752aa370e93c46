"""Names of what the tuner stores on Optuna trials and studies (beside params and values).

`tuner status`, `tuner resume`, workers and notebooks read these back, so each name is
spelled here once. User attributes are meant for people (``study.trials_dataframe()`` shows
them); system attributes (``tuner:`` prefix) are bookkeeping.
"""

from __future__ import annotations

__all__ = [
    "ATTEMPT_ATTR",
    "ENQUEUED_FROM_ATTR",
    "EXPLOITED_ATTR",
    "EXPLOIT_ATTR",
    "EXPLORING_ATTR",
    "FAILED_ATTEMPT",
    "FAIL_ATTR",
    "IMPORTED_ATTR",
    "IMPORTED_FROM_ATTR",
    "LAUNCH_ATTR",
    "MEMBER_ATTR",
    "OWNER_ATTR",
    "PARENT_RUN_ATTR",
    "PAUSED_ATTR",
    "PROMOTED_FROM_ATTR",
    "PRUNE_ATTR",
    "RERUN_OF_ATTR",
    "RETRY_HISTORY_ATTR",
    "RETRY_OF_ATTR",
    "RETRY_OF_USER_ATTR",
    "SAMPLER_STARTS_ATTR",
    "SPACE_ATTR",
    "SPACE_CHANGES_ATTR",
    "STALE_ATTR",
    "SUPERSEDES_ATTR",
    "SYSTEM_PREFIX",
    "WARM_START_ATTR",
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

#: On every copy that continues another trial (a retry, a re-run after an interruption, a
#: re-queued stale trial): the number of the trial it continues.
PARENT_ATTR = "tuner.parent_trial"
#: The first trial of such a chain: it owns the checkpoint folder every attempt shares.
FIRST_TRIAL_ATTR = "tuner.first_trial"
#: On a continuation that resumed from a checkpoint: the step the checkpoint held (the
#: reports up to it are copied from the parent; the attempt reports the steps after it).
RESUMED_STEP_ATTR = "tuner.resumed_step"
#: On a trial a scheduler paused (``scheduler: {name: asha, mode: promote}``): the rung step
#: it reached and was not in the top of; its chain's checkpoint is kept for a promotion.
PAUSED_ATTR = "tuner.paused_at"
#: On the continuation that resumes a paused trial: the number of the paused trial.
PROMOTED_FROM_ATTR = "tuner.promoted_from"
#: On a PBT member's segment that copied another member (exploit): the step it stopped at.
EXPLOITED_ATTR = "tuner.exploited_at"
#: On the segment that continues it: ``{"member", "replaces", "donor", "step", "from_step",
#: "perturbed"}``: whose checkpoint (of which step) it started from (the donor is also its
#: ``tuner.parent_trial``) and which parameters changed.
EXPLOIT_ATTR = "tuner.exploit"
#: The PBT member a trial belongs to: the number of the member's first segment.
MEMBER_ATTR = "tuner.member"
#: On a trial imported by ``warm_start:``: where it came from (``{"run_id", "source",
#: "tracking_uri"}``, the URI's password masked).
IMPORTED_FROM_ATTR = "tuner.imported_from"
#: On a trial enqueued by ``warm_start.enqueue_best``: the run id of the earlier run it re-runs.
ENQUEUED_FROM_ATTR = "tuner.enqueued_from"
#: On a trial a warm start's sampler proposed without the earlier runs (an exploring trial,
#: `tuner.search._view.PriorFree`): ``True``. Reports mark these trials apart.
EXPLORING_ATTR = "tuner.exploring"

# ----- system attributes of a trial ----------------------------------------------------------
#: Every tuner system attribute starts so; a re-queued copy inherits none of them.
SYSTEM_PREFIX = "tuner:"
#: A trial superseded by a copy with the same parameters (value: the reason); it does not
#: count against the budget.
STALE_ATTR = "tuner:stale"
#: On a continuation a scheduler enqueued: the number of the finished trial it supersedes
#: (a promoted paused trial). That trial no longer counts against the budget: its chain
#: counts once, through the continuation. Written with the continuation, in one insert.
SUPERSEDES_ATTR = "tuner:supersedes"
#: A failed attempt (counts against ``budget.max_failures``, whether retried or not).
FAILED_ATTEMPT = "tuner:failed_attempt"
#: On a re-queued stale trial: the number of the trial it replaces, and the whole chain.
RETRY_OF_ATTR = "tuner:retry_of"
RETRY_HISTORY_ATTR = "tuner:retry_history"
#: On a trial asked for by ``tuner run``/``tuner resume`` on a server database: which
#: campaign directory's controller drives it (``<host>:<path>``). The next controller holding
#: that directory's lock knows the trial's driver is dead, whatever its last heartbeat.
OWNER_ATTR = "tuner:owner"
#: A trial imported from an earlier run by ``warm_start:`` (value: the source run id). A
#: finished trial every sampler sees; it does not count against the budget.
IMPORTED_ATTR = "tuner:imported"

# ----- user attributes of the study ----------------------------------------------------------
#: The campaign's parent MLflow run, reused by every later controller of the study.
PARENT_RUN_ATTR = "mlflow_parent_run_id"
#: What ``warm_start:`` imported, once (``{"imported", "skipped", "enqueued"}``): a study
#: that has it is never imported into again (`tuner resume`, a second `tuner run`).
WARM_START_ATTR = "tuner.warm_start"
#: The search space the study was last run with (``{name: parameter as in the YAML}``).
SPACE_ATTR = "tuner.space"
#: Every accepted change of the space (``--allow-space-change``): ``[{"at", "change"}]``.
SPACE_CHANGES_ATTR = "tuner.space_changes"
#: How many controllers have opened the study with a seeded sampler: the first uses
#: ``sampler.seed``, each later one (a resume, another worker) a seed derived from it.
SAMPLER_STARTS_ATTR = "tuner.sampler_starts"
