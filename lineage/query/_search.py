"""``search_runs``: filter, sort and cut the runs of a store."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from lineage._errors import NotFoundError, UsageError
from lineage.query._fields import NUMERIC_ATTRIBUTES, Field, parse_field, to_number
from lineage.query._pushdown import exact_prefilter, to_prefilter
from lineage.query._where import parse_where
from lineage.store import RunRecord, RunStore

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def parse_sort(spec: str) -> tuple[Field, bool]:
    """``-metrics.loss`` / ``metrics.loss desc`` -> (field, descending)."""
    text = spec.strip()
    descending = False
    lowered = text.lower()
    for suffix, desc in ((" desc", True), (" asc", False)):
        if lowered.endswith(suffix):
            text, descending = text[: -len(suffix)].strip(), desc
            break
    if text.startswith(("-", "+")):
        descending = text.startswith("-")
        text = text[1:].strip()
    if not text:
        raise UsageError(f"--sort needs a key such as -metrics.accuracy, got {spec!r}")
    return parse_field(text), descending


def check_known(fields: Iterable[Field], runs: Sequence[RunRecord], where: str) -> None:
    """Raise :class:`NotFoundError` for a param or metric that no run has (a typo, usually).

    Tags are exempt: a tag is often a marker that only some runs carry, or none yet.
    """
    if not runs:
        return
    seen: dict[str, set[str]] | None = None
    for field in fields:
        if field.kind not in ("params", "metrics"):
            continue
        if seen is None:
            seen = {"params": set(), "metrics": set()}
            for run in runs:
                seen["params"].update(run.params)
                seen["metrics"].update(run.metrics)
        if field.key not in seen[field.kind]:
            noun = "metric" if field.kind == "metrics" else "param"
            known = sorted(seen[field.kind])
            listed = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
            raise NotFoundError(
                f"unknown {noun} {field.key!r} in {where}: no selected run has it "
                f"(known {noun}s: {listed or 'none'})"
            )


def sort_runs(runs: list[RunRecord], keys: Sequence[tuple[Field, bool]]) -> list[RunRecord]:
    """Stable multi-key sort; runs missing a key (or holding NaN) come last either way."""
    out = list(runs)
    for field, descending in reversed(keys):
        get = field.value

        def key(run: RunRecord, get: Any = get, descending: bool = descending) -> Any:
            value = get(run)
            number = to_number(value)
            if value is None or (isinstance(value, float) and math.isnan(value)):
                rank: tuple[Any, ...] = (1, 0, 0.0, "")
            elif number is not None:
                rank = (0, 0, number, "")
            else:
                rank = (0, 1, 0.0, str(value))
            if descending:  # reverse=True would also move the missing ones to the front
                return (-rank[0], rank[1], rank[2], rank[3])
            return rank

        out.sort(key=key, reverse=descending)
    return out


def search_runs(
    store: RunStore,
    *,
    experiments: Sequence[str] | None = None,
    where: str | None = None,
    sort: Sequence[str] = (),
    limit: int | None = None,
) -> list[RunRecord]:
    """Active runs of ``experiments`` (names or ids; all when ``None``) that satisfy
    ``where``, ordered by ``sort`` (``-`` prefix: descending; default newest first), at most
    ``limit`` of them.

    Raises :class:`~lineage.QuerySyntaxError` for a malformed ``where``,
    :class:`~lineage.NotFoundError` for an unknown experiment, or for a param or metric that
    no selected run has, and :class:`~lineage.UsageError` for a bad sort key or limit.
    """
    if limit is not None and limit < 0:
        raise UsageError(f"limit must be >= 0, got {limit}")
    node = parse_where(where) if where and where.strip() else None
    sort_keys = [parse_sort(s) for s in sort]
    exp_ids: list[str] | None = None
    if experiments:
        exp_ids = [e.experiment_id for e in store.resolve_experiments(experiments)]
    where_fields = list(node.fields()) if node is not None else []
    sort_fields = [f for f, _ in sort_keys]
    prefilter = to_prefilter(node) if node is not None else None
    if prefilter is not None:
        # Selective filters read only the runs that can match; keys are checked by index.
        runs = store.candidates(exp_ids, prefilter)
        # Keys the candidates hold exist; only the others are asked of the store.
        named = [f for f in [*where_fields, *sort_fields] if not _held(runs, f)]
        if named and _missing(store, named, exp_ids):
            everything = store.runs(exp_ids)  # only now: to name the known keys
            check_known(where_fields, everything, "--where")
            check_known(sort_fields, everything, "--sort")
    else:
        runs = store.runs(exp_ids)
        check_known(where_fields, runs, "--where")
        check_known(sort_fields, runs, "--sort")
    if node is not None:
        predicate = node.compile()
        runs = [run for run in runs if predicate(run)]
    if sort_keys:
        runs = sort_runs(runs, sort_keys)
    return runs if limit is None else runs[:limit]


def search_runs_json(
    store: RunStore,
    *,
    experiments: Sequence[str] | None = None,
    where: str | None = None,
    sort: Sequence[str] = (),
    limit: int | None = None,
) -> list[str] | None:
    """The runs :func:`search_runs` returns, in its order, each rendered by the store as the
    JSON object of ``run_to_dict``; ``None`` where the store cannot answer this query
    exactly on its own (then use :func:`search_runs`).

    The store can when ``where`` translates into SQL exactly (metric comparisons, text
    equality of params and tags, presence, status, times; any and/or of those), every sort
    key is a number (a metric, ``start_time``, ``end_time`` or ``duration``), and every key
    named exists. Errors are the ones :func:`search_runs` raises.
    """
    if (limit is not None and limit < 0) or not store.renders_json:
        return None
    node = parse_where(where) if where and where.strip() else None
    prefilter = None
    if node is not None:
        prefilter = exact_prefilter(node)
        if prefilter is None:
            return None
    sort_keys = [parse_sort(s) for s in sort]
    order = []
    for field, descending in sort_keys:
        if field.kind != "metrics" and field.key not in NUMERIC_ATTRIBUTES:
            return None  # text sorts mix numbers and words: the general path orders them
        order.append((field.kind, field.key, descending))
    exp_ids: list[str] | None = None
    if experiments:
        exp_ids = [e.experiment_id for e in store.resolve_experiments(experiments)]
    named = [*(node.fields() if node is not None else ()), *(f for f, _ in sort_keys)]
    if _missing(store, named, exp_ids):
        return None  # the general path names the unknown key
    return store.runs_json(exp_ids, limit, prefilter, order)


def _held(runs: Sequence[RunRecord], field: Field) -> bool:
    if field.kind not in ("params", "metrics"):
        return True
    return any(field.key in getattr(run, field.kind) for run in runs)


def _missing(store: RunStore, fields: Sequence[Field], exp_ids: list[str] | None) -> bool:
    for kind in ("params", "metrics"):
        keys = sorted({f.key for f in fields if f.kind == kind})
        if keys and len(store.keys_present(kind, keys, exp_ids)) < len(keys):
            return True
    return False
