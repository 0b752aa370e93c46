"""The names of the attributes the tuner stores on a campaign's Optuna trials, each spelled
once (several are also the tags of the trials' MLflow runs)."""

from __future__ import annotations

__all__ = [
    "ATTEMPT_ATTR",
    "ENQUEUED_FROM_ATTR",
    "EXPLOITED_ATTR",
    "EXPLOIT_ATTR",
    "EXPLOIT_KEYS",
    "EXPLORING_ATTR",
    "FAILED_ATTEMPT",
    "FAIL_ATTR",
    "FIRST_TRIAL_ATTR",
    "IMPORTED_ATTR",
    "IMPORTED_FROM_ATTR",
    "LAUNCH_ATTR",
    "MEMBER_ATTR",
    "MISSED_ATTR",
    "OWNER_ATTR",
    "PARENT_ATTR",
    "PAUSED_ATTR",
    "PLACEMENT_ATTR",
    "PROMOTED_FROM_ATTR",
    "PRUNE_ATTR",
    "RERUN_OF_ATTR",
    "RESUMED_STEP_ATTR",
    "RETRY_HISTORY_ATTR",
    "RETRY_OF_ATTR",
    "RETRY_OF_USER_ATTR",
    "STALE_ATTR",
    "STEERED_ATTR",
    "SUPERSEDES_ATTR",
    "SYSTEM_PREFIX",
]

# ----- user attributes of a trial ------------------------------------------------------------
#: Where and how the attempt was launched: pid/pgid/start ticks, host, device, run id, attempt.
LAUNCH_ATTR = "tuner.launch"
#: The attempt number of the trial (1 for a first run; a retry of a failure adds one). Also
#: the tag of the trial's MLflow run.
ATTEMPT_ATTR = "tuner.attempt"
#: Why the trial failed / was pruned (shown by `tuner status` and in the study's dataframe).
FAIL_ATTR = "fail_reason"
PRUNE_ATTR = "prune_reason"
#: Where the trial ran, beside how many others, its peak device memory and times:
#: ``{"device", "neighbours", "peak_memory_mib", "started", "duration"}``.
PLACEMENT_ATTR = "tuner.placement"
#: On a retry of a failed attempt: the number of the failed trial.
RETRY_OF_USER_ATTR = "tuner.retry_of"
#: On the copy of an interrupted trial: the number of the interrupted trial.
RERUN_OF_ATTR = "tuner.rerun_of"
#: On every continuation (a retry, a re-run after an interruption, a re-queued stale trial, a
#: promoted trial's or a PBT member's next segment): the number of the trial it continues.
#: Also the tag of the trial's MLflow run.
PARENT_ATTR = "tuner.parent_trial"
#: The first trial of a chain: it owns the checkpoint folder every attempt shares.
FIRST_TRIAL_ATTR = "tuner.first_trial"
#: On a continuation that resumed from a checkpoint: the step the checkpoint held (the
#: reports up to it are copied from the parent; the attempt reports the steps after it).
RESUMED_STEP_ATTR = "tuner.resumed_step"
#: On a paused trial (``scheduler: {name: asha, mode: promote}``): the rung step it reached and
#: was not in the top of. Also the tag of its MLflow run.
PAUSED_ATTR = "tuner.paused_at"
#: On the continuation that resumes a promoted trial: the number of the promoted trial.
PROMOTED_FROM_ATTR = "tuner.promoted_from"
#: On an exploited PBT segment: the step at which another member's copy replaced it. Also the
#: tag of its MLflow run.
EXPLOITED_ATTR = "tuner.exploited_at"
#: On the copied segment that continues a member: a mapping with the keys `EXPLOIT_KEYS`.
EXPLOIT_ATTR = "tuner.exploit"
#: The keys of `EXPLOIT_ATTR`: the member; the trial it replaces (the exploited segment); the
#: donor trial whose checkpoint it starts from (also its `PARENT_ATTR`); the step at which the
#: member copied the donor; the step of the donor's checkpoint it took (``from_step``, at most
#: ``step``); and ``perturbed``: ``{name: [donor's value, the segment's value]}``.
EXPLOIT_KEYS = ("member", "replaces", "donor", "step", "from_step", "perturbed")
#: The PBT member a trial belongs to: the number of the member's first segment.
MEMBER_ATTR = "tuner.member"
#: On a trial imported by ``warm_start:``: where it came from (``{"run_id", "source",
#: "tracking_uri"}``, the URI's password masked).
IMPORTED_FROM_ATTR = "tuner.imported_from"
#: On a trial enqueued by ``warm_start.enqueue_best``: the run id of the earlier run it re-runs.
ENQUEUED_FROM_ATTR = "tuner.enqueued_from"
#: On a trial a warm start's sampler proposed without the earlier runs (an exploring trial):
#: ``True``. Reports mark these trials apart.
EXPLORING_ATTR = "tuner.exploring"

# ----- system attributes of a trial ----------------------------------------------------------
#: Every tuner system attribute starts so; a re-queued copy inherits none of them.
SYSTEM_PREFIX = "tuner:"
#: A stale trial (value: the reason): another trial took it over. It does not count.
STALE_ATTR = "tuner:stale"
#: On a continuation a scheduler enqueued: the number of the finished trial it supersedes (a
#: promoted trial). Written with the continuation, in one insert.
SUPERSEDES_ATTR = "tuner:supersedes"
#: A failed attempt (counts against ``budget.max_failures``, whether retried or not).
FAILED_ATTEMPT = "tuner:failed_attempt"
#: On a re-queued stale trial: the number of the trial it replaces, and the whole chain.
RETRY_OF_ATTR = "tuner:retry_of"
RETRY_HISTORY_ATTR = "tuner:retry_history"
#: On a trial asked for by a controller on a server database: which campaign directory's
#: controller drives it (``<host>:<path>``).
OWNER_ATTR = "tuner:owner"
#: A trial imported from an earlier run by ``warm_start:`` (value: the source run id): a
#: finished trial every sampler sees, never one of the campaign's own.
IMPORTED_ATTR = "tuner:imported"
#: On a trial a warm start's sampler proposed while it showed earlier runs (``True``): the
#: exploring trials, which go on as a cold campaign would, do not see it.
STEERED_ATTR = "tuner:steered"

# ----- system attributes of the study --------------------------------------------------------
#: Heartbeat writes a controller could not make, one attribute per controller
#: (``<this>:<host>:<pid>``): ``{"count", "last", "at"}``, written once the storage takes
#: writes again; ``tuner status`` shows them.
MISSED_ATTR = "tuner.heartbeat_missed"
