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

from collections import ChainMap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

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

#: The states a finished trial counts as against the budget.
FINAL_STATES = ("COMPLETE", "PRUNED", "FAIL")

#: What a scheduler did to a trial, as the report marks it on a curve (see the module's words).
Mark = Literal["paused", "resumed", "exploited", "copied"]
MARKS: tuple[Mark, ...] = ("paused", "resumed", "exploited", "copied")


@dataclass(frozen=True)
class TrialRecord:
    """One trial as the rules see it. ``attrs`` holds its user and system attributes in one
    mapping (the tuner's system attributes start with `SYSTEM_PREFIX`, so the two never
    clash); a reader may leave out what it did not read (``params`` of finished trials)."""

    number: int
    #: Optuna's state name: COMPLETE, PRUNED, FAIL, RUNNING or WAITING.
    state: str
    attrs: Mapping[str, Any] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)
    #: The objective values in objective order (``None`` where one is missing).
    values: tuple[float | None, ...] = ()
    #: When the trial started (a datetime, an ISO string or None), as its store holds it.
    start: Any = None

    @classmethod
    def of(cls, trial: Any) -> TrialRecord:
        """The record of an Optuna trial (a `FrozenTrial`, or a live `Trial` taken as
        RUNNING); its attributes are read through, not copied."""
        state = getattr(trial, "state", None)
        # A live trial has no state, and reading its ``system_attrs`` is deprecated: its
        # record carries its user attributes only.
        system = trial.system_attrs if state is not None else {}
        return cls(
            number=int(trial.number),
            state=state.name if state is not None else "RUNNING",
            attrs=ChainMap(trial.user_attrs, system),
            params=getattr(trial, "params", None) or {},
            values=tuple(getattr(trial, "values", None) or ()),
            start=getattr(trial, "datetime_start", None),
        )


# ----- counting -----------------------------------------------------------------------------
def is_imported(record: TrialRecord) -> bool:
    """An earlier run ``warm_start:`` imported, not one of the campaign's trials."""
    return IMPORTED_ATTR in record.attrs


def is_stale(record: TrialRecord) -> bool:
    """Another trial took this attempt over (see the module's words)."""
    return STALE_ATTR in record.attrs


def superseded_numbers(records: Iterable[TrialRecord]) -> set[int]:
    """The numbers of the trials a continuation supersedes (`SUPERSEDES_ATTR`)."""
    return {int(r.attrs[SUPERSEDES_ATTR]) for r in records if SUPERSEDES_ATTR in r.attrs}


def counts(record: TrialRecord, superseded: set[int]) -> bool:
    """Whether ``record`` counts against the budget: not stale, and not superseded
    (``superseded``: `superseded_numbers` of the study's trials)."""
    return not is_stale(record) and record.number not in superseded


def promoted_numbers(records: Iterable[TrialRecord]) -> set[int]:
    """The numbers of the promoted trials: those a continuation resumes (`PROMOTED_FROM_ATTR`)."""
    return {
        int(r.attrs[PROMOTED_FROM_ATTR])
        for r in records
        if r.attrs.get(PROMOTED_FROM_ATTR) is not None
    }


def kind(record: TrialRecord, promoted: set[int]) -> str:
    """The word `tuner status` and ``lineage runs`` show for a trial: ``IMPORTED``,
    ``SUPERSEDED`` (a stale attempt that ended as FAIL), ``EXPLOITED``, ``PROMOTED`` or
    ``PAUSED`` for a pruned trial a scheduler stopped (``promoted``: `promoted_numbers`),
    else its state."""
    if is_imported(record):
        return "IMPORTED"
    if record.state == "FAIL" and is_stale(record):
        return "SUPERSEDED"
    if record.state == "PRUNED":
        if record.attrs.get(EXPLOITED_ATTR) is not None:
            return "EXPLOITED"
        if record.attrs.get(PAUSED_ATTR) is not None:
            return "PROMOTED" if record.number in promoted else "PAUSED"
    return record.state


@dataclass
class Tally:
    """A study's trials counted: what `tally` returns."""

    #: Every campaign trial by the word `kind` gives it.
    shown: dict[str, int]
    #: The counted trials by final state (`FINAL_STATES`): what the budget has spent.
    counted: dict[str, int]
    #: The failed attempts, retried ones too: what ``budget.max_failures`` has spent.
    failed_attempts: int = 0
    #: The earlier runs ``warm_start:`` imported.
    imported: int = 0

    @property
    def finished(self) -> int:
        """How many counted trials have finished."""
        return sum(self.counted.values())


def tally(records: Iterable[TrialRecord], *, scheduled: bool = False) -> Tally:
    """Count a study's trials. ``shown`` starts with every state at 0 (with a scheduler, the
    words of its trials too), so that a reader sees what is not there yet."""
    records = list(records)
    shown = dict.fromkeys(("COMPLETE", "PRUNED", "FAIL", "SUPERSEDED", "RUNNING", "WAITING"), 0)
    if scheduled:
        shown.update(dict.fromkeys(("PAUSED", "PROMOTED", "EXPLOITED"), 0))
    out = Tally(shown=shown, counted=dict.fromkeys(FINAL_STATES, 0))
    superseded, promoted = superseded_numbers(records), promoted_numbers(records)
    for r in records:
        if is_imported(r):
            out.imported += 1
            continue
        word = kind(r, promoted)
        out.shown[word] = out.shown.get(word, 0) + 1
        if r.state in out.counted and counts(r, superseded):
            out.counted[r.state] += 1
        if r.state == "FAIL" and r.attrs.get(FAILED_ATTEMPT):
            out.failed_attempts += 1
    return out


# ----- chains -------------------------------------------------------------------------------
def parent_trial(record: TrialRecord) -> int | None:
    """The number of the trial ``record`` continues, or None for a fresh trial."""
    value = record.attrs.get(PARENT_ATTR)
    return None if value is None else int(value)


def first_trial(record: TrialRecord) -> int:
    """The number of the first trial of ``record``'s chain (its own for a fresh trial)."""
    return int(record.attrs.get(FIRST_TRIAL_ATTR, record.number))


def member_of(record: TrialRecord) -> int:
    """The PBT member ``record`` belongs to: its member, else its chain's first trial."""
    for key in (MEMBER_ATTR, FIRST_TRIAL_ATTR):
        value = _int(record.attrs.get(key))
        if value is not None:
            return value
    return record.number


def chain_attrs(attrs: Mapping[str, Any], number: int) -> dict[str, int]:
    """The attributes of a copy that continues trial ``number`` (whose attributes are
    ``attrs``): its parent and its chain's first trial; a PBT member's copy stays that member."""
    out = {PARENT_ATTR: number, FIRST_TRIAL_ATTR: int(attrs.get(FIRST_TRIAL_ATTR, number))}
    if attrs.get(MEMBER_ATTR) is not None:
        out[MEMBER_ATTR] = int(attrs[MEMBER_ATTR])
    return out


def attempt_of(record: TrialRecord) -> int:
    """The attempt ``record``'s own attributes say (its launch record's, else its own)."""
    launch = record.attrs.get(LAUNCH_ATTR) or {}
    return int(launch.get("attempt", record.attrs.get(ATTEMPT_ATTR, 1)) or 1)


def chain_attempts(records: Iterable[TrialRecord]) -> dict[int, int]:
    """Each trial's attempt in its chain: a continuation is one attempt after the trial it
    continues, whatever its own record says (a continuation `tuner resume` started records
    attempt 1)."""
    by_number = {r.number: r for r in records}
    out: dict[int, int] = {}

    def attempt(number: int, depth: int = 0) -> int:
        if number in out:
            return out[number]
        own = by_number.get(number)
        if own is None:
            return 1
        value = attempt_of(own)
        parent = parent_trial(own)
        if parent is not None and depth < len(by_number):
            value = max(value, attempt(parent, depth + 1) + 1)
        out[number] = value
        return value

    for number in by_number:
        attempt(number)
    return out


def continued(records: Iterable[TrialRecord]) -> list[TrialRecord]:
    """The continuations among ``records``, in their order."""
    return [r for r in records if parent_trial(r) is not None]


# ----- scheduler marks ----------------------------------------------------------------------
def mark(record: TrialRecord) -> Mark | None:
    """What a scheduler did to ``record``, whatever its state: ``exploited``, ``paused``
    (promoted later or not), ``resumed`` (it resumes a promoted trial), ``copied`` (a PBT
    segment from a donor's checkpoint), or None."""
    attrs = record.attrs
    if EXPLOITED_ATTR in attrs:
        return "exploited"
    if PAUSED_ATTR in attrs:
        return "paused"
    if PROMOTED_FROM_ATTR in attrs:
        return "resumed"
    if isinstance(attrs.get(EXPLOIT_ATTR), dict):
        return "copied"
    return None


def mark_step(record: TrialRecord, what: Mark) -> int | None:
    """The step at which ``what`` happened to ``record``: where it was paused or exploited,
    or where a resumed or copied segment started."""
    attrs = record.attrs
    if what == "paused":
        return _int(attrs.get(PAUSED_ATTR))
    if what == "exploited":
        return _int(attrs.get(EXPLOITED_ATTR))
    if what == "copied":
        return _int(attrs[EXPLOIT_ATTR].get("from_step"))
    return _int(attrs.get(RESUMED_STEP_ATTR))


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
