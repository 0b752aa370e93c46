"""The rules over plain trial records: counting, chains and scheduler marks (the words are
the package's)."""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from lineage.trials._names import (
    ATTEMPT_ATTR,
    EXPLOIT_ATTR,
    EXPLOITED_ATTR,
    FAILED_ATTEMPT,
    FIRST_TRIAL_ATTR,
    IMPORTED_ATTR,
    LAUNCH_ATTR,
    MEMBER_ATTR,
    PARENT_ATTR,
    PAUSED_ATTR,
    PROMOTED_FROM_ATTR,
    RESUMED_STEP_ATTR,
    STALE_ATTR,
    SUPERSEDES_ATTR,
)

__all__ = [
    "FINAL_STATES",
    "MARKS",
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

#: The states a finished trial counts as against the budget.
FINAL_STATES = ("COMPLETE", "PRUNED", "FAIL")

#: What a scheduler did to a trial, as the report marks it on a curve (see the words of `lineage.trials`).
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
    """Another trial took this attempt over (see the words of `lineage.trials`)."""
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
