"""What a trial of a tuning campaign is: the names of its attributes and the rules over them,
each spelled once.

The tuner writes these attributes on Optuna trials (and the scheduler marks, as tags, on the
trials' MLflow runs); `tuner status`, the controller's bookkeeping, `tuner resume`, ``lineage
runs`` and the reports read them back through the rules here. The rules are pure: they take
`TrialRecord` values (number, state, attributes, parameters, values), which a reader builds
from an Optuna trial (`TrialRecord.of`), from rows of the study's database, or from a run's
tags. ``lineage`` does not import the tuner, so the names live here and the tuner imports them.

One word, one meaning:

- **counted**: the trial counts against the campaign's budget. It is neither *stale* nor
  *superseded* (imported runs are never the campaign's own trials).
- **stale**: an attempt another trial took over while it ran or after it failed (an
  interrupted trial's copy, a retried failure, a PBT segment replaced by a copy); shown as
  ``SUPERSEDED`` when it ended as FAIL.
- **superseded**: a finished trial a scheduler's continuation names in `SUPERSEDES_ATTR`; its
  chain counts once, through the continuation.
- **paused**: a pruned trial an ASHA scheduler stopped at a rung step (`PAUSED_ATTR`), its
  checkpoint kept.
- **promoted**: a paused trial whose chain went on: a continuation (`PROMOTED_FROM_ATTR`)
  resumes it from its checkpoint at the next rung. The continuation itself is **resumed**.
- **exploited**: a pruned PBT segment another member's copy replaced (`EXPLOITED_ATTR`); the
  segment that continues the member from the donor's checkpoint is **copied** (`EXPLOIT_ATTR`).
- **continuation**: a trial that continues another (`PARENT_ATTR`); the trials so linked
  form a **chain** whose first trial (`FIRST_TRIAL_ATTR`) owns the checkpoint folder, and
  whose **attempt** grows by one along it.
"""

from __future__ import annotations

from lineage.trials._names import (
    ATTEMPT_ATTR,
    ENQUEUED_FROM_ATTR,
    EXPLOIT_ATTR,
    EXPLOIT_KEYS,
    EXPLOITED_ATTR,
    EXPLORING_ATTR,
    FAIL_ATTR,
    FAILED_ATTEMPT,
    FIRST_TRIAL_ATTR,
    IMPORTED_ATTR,
    IMPORTED_FROM_ATTR,
    LAUNCH_ATTR,
    MEMBER_ATTR,
    MISSED_ATTR,
    OWNER_ATTR,
    PARENT_ATTR,
    PAUSED_ATTR,
    PLACEMENT_ATTR,
    PROMOTED_FROM_ATTR,
    PRUNE_ATTR,
    RERUN_OF_ATTR,
    RESUMED_STEP_ATTR,
    RETRY_HISTORY_ATTR,
    RETRY_OF_ATTR,
    RETRY_OF_USER_ATTR,
    STALE_ATTR,
    STEERED_ATTR,
    SUPERSEDES_ATTR,
    SYSTEM_PREFIX,
)
from lineage.trials._rules import (
    FINAL_STATES,
    MARKS,
    Mark,
    Tally,
    TrialRecord,
    attempt_of,
    chain_attempts,
    chain_attrs,
    continued,
    counts,
    first_trial,
    is_imported,
    is_stale,
    kind,
    mark,
    mark_step,
    member_of,
    parent_trial,
    promoted_numbers,
    superseded_numbers,
    tally,
)

__all__ = [
    "ATTEMPT_ATTR",
    "ENQUEUED_FROM_ATTR",
    "EXPLOITED_ATTR",
    "EXPLOIT_ATTR",
    "EXPLOIT_KEYS",
    "EXPLORING_ATTR",
    "FAILED_ATTEMPT",
    "FAIL_ATTR",
    "FINAL_STATES",
    "FIRST_TRIAL_ATTR",
    "IMPORTED_ATTR",
    "IMPORTED_FROM_ATTR",
    "LAUNCH_ATTR",
    "MARKS",
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
    "Mark",
    "Tally",
    "TrialRecord",
    "attempt_of",
    "chain_attempts",
    "chain_attrs",
    "continued",
    "counts",
    "first_trial",
    "is_imported",
    "is_stale",
    "kind",
    "mark",
    "mark_step",
    "member_of",
    "parent_trial",
    "promoted_numbers",
    "superseded_numbers",
    "tally",
]
