"""Runs as a table: column selection, rows, and the JSON object of one run."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from lineage import tags as T
from lineage._errors import UsageError
from lineage.query._fields import ATTRIBUTES, Field, parse_field
from lineage.store import RunRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Attribute columns of a full export, in order.
EXPORT_ATTRIBUTES = (
    "run_id",
    "experiment_id",
    "experiment",
    "run_name",
    "status",
    "start_time",
    "end_time",
    "duration",
)


def run_kind(run: RunRecord) -> str:
    """``campaign``, ``analysis``, ``reserved`` (a trial number held for a run not started
    yet) or ``training`` (a trial, a script's run): what a run is, for a table or a script."""
    kind = run.tags.get(T.RUN_TYPE, "")
    return kind if kind in T.RUN_KINDS_APART else T.RUN_KIND_TRAINING


def is_training(run: RunRecord) -> bool:
    """A training run (a trial, a script's run), not a campaign's or an analysis's record."""
    return run_kind(run) == T.RUN_KIND_TRAINING


def shown_status(run: RunRecord, continued: Collection[str] = ()) -> str:
    """The run's status as a person reads it: ``PRUNED`` for a pruned trial (MLflow holds
    it as KILLED), ``PAUSED``, ``PROMOTED`` or ``EXPLOITED`` for one a scheduler stopped
    (`lineage.trials.kind`: promoted when its trial number is in ``continued``, the trials
    other runs continue: `continued_trials`), else MLflow's status."""
    if run.status == "KILLED" and run.tags.get(T.TRIAL_STATE) == T.TRIAL_STATE_PRUNED:
        from lineage import trials  # the vocabulary's rules: only for a campaign's trials

        tag = run.tags.get(T.TRIAL_NUMBER) or ""
        record = trials.TrialRecord(int(tag) if tag.isdigit() else -1, "PRUNED", run.tags)
        return trials.kind(record, {int(n) for n in continued if n.isdigit()})
    return run.status


def continued_trials(runs: Iterable[RunRecord]) -> set[str]:
    """The trial numbers (as their tags spell them) that some run of ``runs`` continues."""
    from lineage.trials import PARENT_ATTR as parent  # loaded for tables only

    return {str(r.tags[parent]) for r in runs if r.tags.get(parent) is not None}


def keys_of(runs: Sequence[RunRecord], kind: str) -> list[str]:
    """Every key of ``kind`` (params, metrics, tags) that any of the runs has, sorted."""
    seen: set[str] = set()
    for run in runs:
        seen.update(getattr(run, kind))
    return sorted(seen)


def select_columns(runs: Sequence[RunRecord], spec: Sequence[str] | None) -> list[Field]:
    """Fields for ``--columns`` (comma-separated keys; ``params.*``, ``metrics.*``,
    ``tags.*`` expand to every key the runs have); ``None`` gives the default set."""
    if not spec:
        return default_columns(runs)
    fields: list[Field] = []
    for item in spec:
        for part in split_keys(item):
            head, _, rest = part.partition(".")
            if rest == "*" and head in ("params", "metrics", "tags"):
                fields.extend(Field(head, k) for k in keys_of(runs, head))
            else:
                fields.append(parse_field(part))
    if not fields:
        raise UsageError(f"--columns names no column, got {list(spec)!r}")
    return fields


def split_keys(text: str) -> list[str]:
    """The comma-separated keys of ``--columns`` or ``--sort``; commas inside `back quotes`
    belong to the key."""
    parts: list[str] = []
    buf: list[str] = []
    quoted = False
    for c in text:
        if c == "`":
            quoted = not quoted
        if c == "," and not quoted:
            parts.append("".join(buf).strip())
            buf = []
        else:
            buf.append(c)
    parts.append("".join(buf).strip())
    return [p for p in parts if p]


def default_columns(runs: Sequence[RunRecord]) -> list[Field]:
    base = [Field("attributes", k) for k in ("run_id", "experiment", "run_name", "status")]
    return (
        base
        + [Field("params", k) for k in keys_of(runs, "params")]
        + [Field("metrics", k) for k in keys_of(runs, "metrics")]
    )


def export_columns(runs: Sequence[RunRecord], targets: Sequence[str] = ()) -> list[Field]:
    """Every attribute, param, metric and tag: the full run table; the ``targets`` (the
    experiment's target metrics) first among the metrics."""
    metrics = keys_of(runs, "metrics")
    lead = [k for k in dict.fromkeys(targets) if k in metrics]
    return (
        [Field("attributes", k) for k in EXPORT_ATTRIBUTES]
        + [Field("params", k) for k in keys_of(runs, "params")]
        + [Field("metrics", k) for k in [*lead, *(m for m in metrics if m not in lead)]]
        + [Field("tags", k) for k in keys_of(runs, "tags")]
    )


def rows(runs: Sequence[RunRecord], fields: Sequence[Field]) -> list[list[Any]]:
    getters = [f.value for f in fields]
    return [[get(run) for get in getters] for run in runs]


def run_to_dict(run: RunRecord, fields: Sequence[Field] | None = None) -> dict[str, Any]:
    """The JSON object of a run: attributes, its ``kind`` (:func:`run_kind`), ``params`` (raw
    strings), ``metrics`` (latest values) and ``tags``; with ``fields``, ``run_id`` and
    ``kind`` plus exactly those keys, flat."""
    if fields:
        out: dict[str, Any] = {"run_id": run.run_id, "kind": run_kind(run)}
        for field in fields:
            out[str(field)] = field.value(run)
        return out
    return {
        "run_id": run.run_id,
        "experiment_id": run.experiment_id,
        "experiment": run.experiment,
        "run_name": run.name,
        "status": run.status,
        "start_time": run.start_time,
        "end_time": run.end_time,
        "duration": run.duration,
        "params": run.params,
        "metrics": run.metrics,
        "tags": run.tags,
        "kind": run_kind(run),
    }


assert set(EXPORT_ATTRIBUTES) == set(ATTRIBUTES)
