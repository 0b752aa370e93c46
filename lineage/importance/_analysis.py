"""From runs to a ranked, normalized :class:`ImportanceResult`: the one public entry point."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from lineage._errors import NotFoundError, UsageError
from lineage.importance._auto import model_of
from lineage.importance._base import ImportanceEvaluator
from lineage.importance._result import ImportanceResult, ParamImportance
from lineage.importance._types import (
    MISSING,
    Column,
    ParamSpec,
    as_numbers,
    category_labels,
    encode,
    infer_spec,
    numeric_values,
)
from lineage.query import best_position

__all__ = ["MIN_RUNS", "get_param_importances", "normalize_goal"]

MIN_RUNS = 8
"""Fewer runs than this cannot support a forest, a held-out score and an interval."""

_GOALS = {"minimize": "minimize", "min": "minimize", "maximize": "maximize", "max": "maximize"}


def normalize_goal(goal: str) -> str:
    try:
        return _GOALS[str(goal).lower()]
    except KeyError:
        raise UsageError(f"goal must be 'minimize' or 'maximize', got {goal!r}") from None


#: A run as the analysis reads it: (run_id, name, params, metrics).
_Row = tuple[str, str, dict[str, Any], dict[str, float], int | None]


def _rows(runs: Any) -> list[_Row]:
    """``(run_id, name, params, metrics, start_time)`` from RunRecords or an
    ``mlflow.search_runs`` frame (start time in ms, None where unknown)."""
    if hasattr(runs, "columns") and hasattr(runs, "to_dict"):  # a pandas DataFrame
        out = []
        for rec in runs.to_dict("records"):
            params = {k[7:]: v for k, v in rec.items() if k.startswith("params.")}
            metrics = {k[8:]: v for k, v in rec.items() if k.startswith("metrics.")}
            name = rec.get("tags.mlflow.runName") or ""
            start = _ms(rec.get("start_time"))
            out.append((str(rec.get("run_id", "")), str(name), params, metrics, start))
        return out
    return [
        (r.run_id, r.name, dict(r.params), dict(r.metrics), getattr(r, "start_time", None))
        for r in runs
    ]


def _ms(when: Any) -> int | None:
    try:
        return int(when.timestamp() * 1000)  # a pandas Timestamp (NaT raises)
    except (AttributeError, TypeError, ValueError):
        return None


def get_param_importances(
    runs: Any,
    *,
    target: str,
    goal: str = "minimize",
    params: Sequence[str] | None = None,
    top: float | None = None,
    evaluator: ImportanceEvaluator | None = None,
    experiment: str | None = None,
    known_params: Iterable[str] | None = None,
) -> ImportanceResult:
    """Rank the parameters of ``runs`` by how much of ``target``'s variation each explains.

    ``runs`` is a sequence of :class:`lineage.store.RunRecord` (or anything with ``run_id``,
    ``name``, ``params`` and ``metrics``) or a DataFrame as ``mlflow.search_runs`` returns it.
    Runs without a finite ``target`` value are left out. ``params`` restricts the analysis to
    those names (default: every parameter that varies); a named parameter that no analysed
    run has is reported in ``result.never_active`` (a conditional parameter whose condition
    never held) when some run passed in, or ``known_params`` (e.g. a campaign's search
    space), knows it, and refused as unknown (with a did-you-mean) otherwise. Parameters whose
    values are identical in every analysed run (``lr`` and ``optimizer.lr``; for categoricals,
    labels that correspond one to one: ``sgd``/``SGD``) are ranked once,
    under the first of them in ``params`` (else the shortest name), the others listed in
    ``result.aliases``. ``top`` (0 < top <= 1) analyses only
    the best ``top`` fraction of runs: what still matters once you are close to the optimum.
    ``evaluator`` defaults to :class:`~lineage.importance.AutoImportance` (a Gaussian process or
    a random forest, whichever predicts held-out runs better).

    The importances of the result sum to one (equal shares when no parameter has any
    measurable effect); ``params`` are sorted most important first.

    Raises :class:`~lineage.NotFoundError` when no run has ``target`` or a named parameter
    is known to no run nor to ``known_params``,
    and :class:`~lineage.UsageError` with fewer than 8 usable runs, a constant target, a bad
    ``goal`` or ``top``, or no parameter that varies.

    Args:
        runs: the runs to explain (records, or a DataFrame from ``mlflow.search_runs``).
        target: the metric to explain, e.g. ``val_accuracy``.
        goal: ``minimize`` or ``maximize``: the direction ``top`` and the best run follow.
        params: the parameters to rank; None: every parameter that varies.
        top: analyse only this best fraction of runs (0 < top <= 1).
        evaluator: the model that ranks; None: ``AutoImportance``.
        experiment: the experiment's name, recorded in the result.
        known_params: names a run may lack without being unknown (a campaign's space).

    Returns:
        An :class:`ImportanceResult`, parameters most important first.
    """
    goal = normalize_goal(goal)
    if top is not None and not (isinstance(top, int | float) and 0.0 < top <= 1.0):
        raise UsageError(f"top must be a fraction in (0, 1], got {top!r}")
    evaluator = _checked_evaluator(evaluator)
    rows = _rows(runs)
    where = f" in experiment {experiment!r}" if experiment else ""
    usable, y = _usable(rows, target, goal, top, where)
    names_known = {k for r in rows for k in r[2]} | set(known_params or ())
    names, never = _param_names(usable, params, where, names_known)
    values: dict[str, Column] = {n: as_numbers([r[2].get(n) for r in usable]) for n in names}
    specs, dropped, aliases = _to_rank(names, never, values, params or (), len(y), where)
    evaluator.fit(encode(specs, values), y)
    model, reason, r2 = model_of(evaluator)
    return ImportanceResult(
        target=target,
        goal=goal,
        n_runs=len(y),
        params=_ranked(evaluator, specs, values, y, goal, aliases, [r[4] for r in usable]),
        evaluator=repr(evaluator),
        model=model,
        model_reason=reason,
        r2=r2,
        top=top,
        experiment=experiment,
        dropped=dropped,
        never_active=list(never),
        aliases=aliases,
        confidence=float(getattr(evaluator, "confidence", 0.95)),
        values={s.name: values[s.name] for s in specs},
        target_values=y,
        run_ids=[r[0] for r in usable],
        run_names=[r[1] for r in usable],
        run_starts=[r[4] for r in usable],
    )


def _checked_evaluator(evaluator: ImportanceEvaluator | None) -> ImportanceEvaluator:
    """``evaluator``, or the default (`AutoImportance`) for None; anything else is refused."""
    if evaluator is None:
        from lineage.importance._auto import AutoImportance

        return AutoImportance()
    if not isinstance(evaluator, ImportanceEvaluator):
        raise UsageError(
            f"evaluator must be an ImportanceEvaluator, got {type(evaluator).__name__}"
        )
    return evaluator


def _to_rank(
    names: list[str],
    never: Sequence[str],
    values: dict[str, Column],
    asked: Sequence[str],
    n_runs: int,
    where: str,
) -> tuple[list[ParamSpec], dict[str, str], dict[str, list[str]]]:
    """``(the parameters to rank, why each other one is not, aliases)``: constant and
    unusable parameters are dropped, identical ones merged; `UsageError` when none is left."""
    specs, dropped = _analysable(names, values)
    specs, aliases = _merge_aliases(specs, values, asked)
    for name in never:
        dropped[name] = f"never active in the {n_runs} runs"
    if not specs and never and not [n for n in names if n not in never]:
        raise UsageError(
            f"none of the parameters asked for is active in the {n_runs} runs{where} "
            f"({', '.join(never)}: never active)"
        )
    if not specs:
        raise UsageError(
            f"no parameter varies over the {n_runs} runs{where} (checked {len(names)}: "
            f"{', '.join(names[:10]) or 'none'})"
        )
    return specs, dropped, aliases


def _usable(
    rows: list[_Row], target: str, goal: str, top: float | None, where: str
) -> tuple[list[_Row], np.ndarray]:
    """The runs with a finite ``target`` (the best ``top`` fraction of them when ``top`` is
    set) and their target values; refused when too few remain or the target is constant."""
    with_target = [r for r in rows if target in r[3]]
    if not with_target:
        seen = sorted({k for r in rows for k in r[3]})
        known = ", ".join(seen[:20]) + (" ..." if len(seen) > 20 else "") if seen else "none"
        raise NotFoundError(
            f"target metric {target!r} is not logged by any of the {len(rows)} runs{where} "
            f"(metrics seen: {known})"
        )
    usable = [r for r in with_target if _finite(r[3][target])]
    if len(usable) < MIN_RUNS:
        raise UsageError(
            f"importance needs at least {MIN_RUNS} runs with a finite {target!r}{where}, "
            f"got {len(usable)}"
        )
    y = np.array([float(r[3][target]) for r in usable])
    if top is not None:
        keep = max(1, math.ceil(top * len(usable)))
        order = np.argsort(y if goal == "minimize" else -y, kind="stable")[:keep]
        order.sort()
        if keep < MIN_RUNS:
            raise UsageError(
                f"--top {top} keeps {keep} of {len(usable)} runs{where}; importance needs at "
                f"least {MIN_RUNS}"
            )
        usable = [usable[i] for i in order]
        y = y[order]
    if float(np.ptp(y)) == 0.0:
        raise UsageError(
            f"target {target!r} is constant ({y[0]:g}) over the {len(y)} runs{where}; "
            "nothing to explain"
        )
    return usable, y


def _ranked(
    evaluator: ImportanceEvaluator,
    specs: Sequence[ParamSpec],
    values: dict[str, Column],
    y: np.ndarray,
    goal: str,
    aliases: dict[str, list[str]],
    starts: Sequence[int | None],
) -> list[ParamImportance]:
    """The fitted ``evaluator``'s scores as shares that sum to one (equal shares when no
    parameter has a measurable effect), most important first."""
    scores, intervals = evaluator.scores_, evaluator.intervals_
    total = float(scores.sum())
    if total > 0:
        shares, bounds = scores / total, intervals / total
    else:  # no detectable effect anywhere: equal shares, wide open intervals
        shares = np.full(len(specs), 1.0 / len(specs))
        bounds = np.tile([0.0, 1.0], (len(specs), 1))
    best_i = best_position(list(y), goal, starts)
    ranked = [
        ParamImportance(
            name=spec.name,
            importance=float(shares[j]),
            ci=(
                float(np.clip(min(bounds[j, 0], shares[j]), 0.0, 1.0)),
                float(np.clip(max(bounds[j, 1], shares[j]), 0.0, 1.0)),
            ),
            significant=bool(evaluator.significant_[j]),
            correlation=_spearman(numeric_values(spec, values[spec.name]), y)
            if spec.kind == "numeric"
            else None,
            best=_best(spec, values[spec.name], y, goal, best_i),
            spec=spec,
            aliases=tuple(aliases.get(spec.name, ())),
        )
        for j, spec in enumerate(specs)
    ]
    ranked.sort(key=lambda p: (-p.importance, p.name))
    return ranked


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _param_names(
    rows: Sequence[_Row],
    params: Sequence[str] | None,
    where: str,
    known: set[str],
) -> tuple[list[str], list[str]]:
    """The names to analyse, and those of them that no analysed run has (never active)."""
    seen: dict[str, None] = {}
    for r in rows:
        seen.update(dict.fromkeys(r[2]))
    if not params:
        return sorted(seen), []
    wanted = list(dict.fromkeys(params))
    unknown = [p for p in wanted if p not in seen and p not in known]
    if unknown:
        import difflib

        pool = sorted(set(seen) | known)
        close = difflib.get_close_matches(unknown[0], pool, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        shown = ", ".join(pool[:20]) + (" ..." if len(pool) > 20 else "") if pool else "none"
        raise NotFoundError(
            f"param {unknown[0]!r} is not logged by any run{where} and is not in a campaign's "
            f"search space{hint} (params seen: {shown})"
        )
    return wanted, [p for p in wanted if p not in seen]


def _column_key(spec: ParamSpec, column: Column) -> bytes:
    """Equal for two columns exactly when they hold the same values in every run (numbers), or
    categories that correspond one to one (``sgd``/``SGD``: the same partition of the runs)."""
    if spec.kind == "numeric":
        numbers = numeric_values(ParamSpec(spec.name, "numeric"), column)
        # A float32 read back as a double (0.0010000000474974513) is the value 0.001 typed.
        return b"n" + numbers.astype(np.float32).tobytes()
    _, first, codes = np.unique(
        category_labels(column).astype(str), return_index=True, return_inverse=True
    )
    # Number the categories in order of first appearance: a relabelling gives the same codes.
    order = np.argsort(np.argsort(first))
    return b"c" + order[codes.ravel()].astype(np.int64).tobytes()


def _merge_aliases(
    specs: list[ParamSpec], values: dict[str, Column], preferred: Sequence[str]
) -> tuple[list[ParamSpec], dict[str, list[str]]]:
    """One spec per set of parameters with identical values in every run, and the aliases."""
    rank = {name: i for i, name in enumerate(preferred)}
    groups: dict[bytes, list[ParamSpec]] = {}
    for spec in specs:
        groups.setdefault(_column_key(spec, values[spec.name]), []).append(spec)
    kept: list[ParamSpec] = []
    aliases: dict[str, list[str]] = {}
    for members in groups.values():
        members.sort(key=lambda s: (rank.get(s.name, len(rank)), len(s.name), s.name))
        kept.append(members[0])
        if len(members) > 1:
            aliases[members[0].name] = [m.name for m in members[1:]]
    order = {s.name: i for i, s in enumerate(specs)}
    kept.sort(key=lambda s: order[s.name])
    return kept, aliases


def _analysable(
    names: Iterable[str], values: dict[str, Column]
) -> tuple[list[ParamSpec], dict[str, str]]:
    specs: list[ParamSpec] = []
    dropped: dict[str, str] = {}
    for name in names:
        column = values[name]
        spec = infer_spec(name, column)
        if spec.kind == "numeric":
            numbers = numeric_values(spec, column)
            n_distinct = len(np.unique(numbers[~np.isnan(numbers)])) + (1 if spec.n_missing else 0)
        else:
            n_distinct = len(set(category_labels(column).tolist()))
        if n_distinct < 2:
            dropped[name] = "constant"
        elif spec.kind == "categorical" and n_distinct >= len(column) > MIN_RUNS:
            # A label unique to each run (a path, an id) cannot generalize to any other run.
            dropped[name] = "a different value in every run"
        else:
            specs.append(spec)
    return specs, dropped


def _spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    ok = ~np.isnan(x)
    if ok.sum() < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return None
    rx, ry = _average_ranks(x[ok]), _average_ranks(y[ok])
    return float(np.corrcoef(rx, ry)[0, 1])


def _average_ranks(values: np.ndarray) -> np.ndarray:
    # scipy.stats.rankdata's "average" ranks; importing scipy.stats cost 0.7 s of a CLI call.
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    upper = np.cumsum(counts)
    return ((upper - (counts - 1) / 2.0)[inverse.ravel()]).astype(float)


def _best(spec: ParamSpec, column: Column, y: np.ndarray, goal: str, best_i: int) -> Any:
    if spec.kind == "numeric":
        value = numeric_values(ParamSpec(spec.name, "numeric"), [column[best_i]])[0]
        return None if np.isnan(value) else float(value)
    labels = category_labels(column)
    means = {str(c): float(y[labels == c].mean()) for c in set(labels.tolist())}
    pick = min if goal == "minimize" else max
    best = pick(means, key=lambda c: means[c])
    return None if best == MISSING else best
