"""What an importance analysis hands back: plain data, ready for a table, JSON or plots."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from lineage.importance._types import Column, ParamSpec

if TYPE_CHECKING:
    from lineage.importance._advice import Advice

__all__ = ["ImportanceResult", "ParamImportance", "format_bound"]


def format_bound(value: float, digits: int = 2) -> str:
    """An interval end with ``digits`` decimals, except that a positive value never reads as
    zero (``0.004``, not ``0.00``): significance is "the lower end is above 0", and the text
    must show it.

    Args:
        value: an interval's end (a share of the explained variance).
        digits: decimals shown.

    Returns:
        The text, e.g. ``0.12``, ``0.004``.
    """
    if value == 0.0 or value >= 10.0**-digits:
        return f"{value:.{digits}f}"
    return f"{value:.1g}"


def _plain(value: Any) -> Any:
    """A parameter value as JSON shows it: None when missing, ints without a ``.0``."""
    if isinstance(value, float | np.floating):
        number = float(value)
        if math.isnan(number):
            return None
        return int(number) if number.is_integer() and abs(number) < 2**53 else number
    return value


@dataclass(frozen=True)
class ParamImportance:
    """One parameter's share of the explained variation, and which way it points.

    ``importance`` and ``ci`` are on the normalized scale (importances of one analysis sum to
    one). ``correlation`` is Spearman's rank correlation with the target for a numeric
    parameter (``None`` for a categorical). ``best`` is the category with the best mean target
    for a categorical, and the value in the best run for a numeric parameter.
    """

    name: str
    importance: float
    ci: tuple[float, float]
    significant: bool
    correlation: float | None
    best: Any
    spec: ParamSpec
    aliases: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """The name as tables show it: ``lr (= optimizer.lr)`` when it has aliases."""
        return f"{self.name} (= {', '.join(self.aliases)})" if self.aliases else self.name

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "importance": self.importance,
            "ci": [self.ci[0], self.ci[1]],
            "correlation": self.correlation,
            "significant": self.significant,
            "type": self.spec.kind,
            "log_scale": self.spec.log,
            "best": self.best,
            "missing": self.spec.n_missing,
            "aliases": list(self.aliases),
        }


@dataclass
class ImportanceResult:
    """The outcome of :func:`lineage.importance.get_param_importances`.

    ``params`` are sorted by importance, most important first. ``dropped`` names the
    parameters not ranked and why (``constant``, ``never active in the 24 runs``, ...);
    ``never_active`` lists the asked-for parameters no analysed run had; ``aliases`` maps a
    ranked parameter to the others with identical values in every run; ``param_source`` says
    where the default parameter list came from (e.g. a campaign's search space). ``values``, ``target_values``,
    ``model`` names the model that ran (``"random forest"``, ``"gaussian process"``),
    ``model_reason`` says why, ``r2`` holds each candidate's R² on held-out runs; ``evaluator``
    is the evaluator's repr, with all its settings; ``confidence`` the level at which the
    intervals hold together (each one's is ``interval_level``).
    ``run_ids`` and ``run_names`` keep the analysed runs (after ``top`` selection) so that plots
    can be drawn without reading the store again.
    """

    target: str
    goal: str
    n_runs: int
    params: list[ParamImportance]
    evaluator: str
    model: str = ""
    model_reason: str = ""
    r2: dict[str, float] = field(default_factory=dict)
    top: float | None = None
    experiment: str | None = None
    dropped: dict[str, str] = field(default_factory=dict)
    excluded: dict[str, int] = field(default_factory=dict)
    never_active: list[str] = field(default_factory=list)
    aliases: dict[str, list[str]] = field(default_factory=dict)
    param_source: str | None = None
    analysis_run_id: str | None = None
    confidence: float = 0.95
    values: dict[str, Column] = field(default_factory=dict, repr=False)
    target_values: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)
    run_ids: list[str] = field(default_factory=list, repr=False)
    run_names: list[str] = field(default_factory=list, repr=False)
    #: The runs' start times (ms), where known: among equal target values the earliest run
    #: is the best (`best_index`).
    run_starts: list[int | None] = field(default_factory=list, repr=False)

    @property
    def best_index(self) -> int:
        """Position of the best run in ``run_ids`` / ``target_values``; among equal values
        the earliest run (``lineage.query.best_position``: the tuner's rule)."""
        from lineage.query import best_position

        return best_position(list(self.target_values), self.goal, self.run_starts or None)

    def advice(self) -> Advice:
        """Which parameters to tune, which did not matter, which cannot be told yet and about
        how many more runs would tell (see :mod:`lineage.importance._advice`)."""
        from lineage.importance._advice import advise

        return advise(self.params, self.n_runs, self.interval_level)

    @property
    def interval_level(self) -> float:
        """The level of each parameter's interval: ``confidence`` shared by the ranked
        parameters (Bonferroni), so that the intervals hold together at ``confidence``."""
        return 1.0 - (1.0 - self.confidence) / max(len(self.params), 1)

    def rank_ranges(self) -> list[tuple[int, int]]:
        """Each parameter's ``(best, worst)`` possible rank, in ``params`` order: a range
        wider than one place is a tie its intervals cannot break."""
        from lineage.importance._advice import rank_ranges

        return rank_ranges(self.params)

    def importances(self) -> dict[str, float]:
        """``{name: importance}`` in ranking order, summing to one."""
        return {p.name: p.importance for p in self.params}

    def summary(self, k: int = 5) -> str:
        """One line: the ``k`` most important (``*`` = significant), then what was not ranked
        for want of runs, e.g. ``lr=0.98*, optimizer=0.02; momentum: never active in the 24
        runs``."""
        ranked = ", ".join(
            f"{p.name}={p.importance:.2f}{'*' if p.significant else ''}" for p in self.params[:k]
        )
        parts = [ranked] if ranked else []
        parts += [f"{name}: {self.dropped[name]}" for name in self.never_active]
        parts += [f"{name} = {', '.join(same)}" for name, same in self.aliases.items()]
        return "; ".join(parts)

    def target_summary(self, bins: int = 10) -> dict[str, Any]:
        """The target's distribution: count, moments, quantiles and a histogram."""
        y = self.target_values
        q = np.quantile(y, [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])
        counts, edges = np.histogram(y, bins=min(bins, max(1, len(np.unique(y)))))
        return {
            "count": len(y),
            "mean": float(y.mean()),
            "std": float(y.std(ddof=1)) if len(y) > 1 else 0.0,
            "min": float(q[0]),
            "p10": float(q[1]),
            "p25": float(q[2]),
            "median": float(q[3]),
            "p75": float(q[4]),
            "p90": float(q[5]),
            "max": float(q[6]),
            "histogram": {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts]},
        }

    def top_runs(self, k: int = 10) -> list[dict[str, Any]]:
        """The ``k`` best runs: id, name, target value and the ranked parameters' values."""
        order = np.argsort(self.target_values, kind="stable")
        if self.goal == "maximize":
            order = order[::-1]
        names = [p.name for p in self.params]
        rows = []
        for rank, i in enumerate(order[:k], start=1):
            rows.append(
                {
                    "rank": rank,
                    "run_id": self.run_ids[i] if self.run_ids else None,
                    "run_name": self.run_names[i] if self.run_names else None,
                    self.target: float(self.target_values[i]),
                    "params": {n: _plain(self.values[n][i]) for n in names if n in self.values},
                }
            )
        return rows

    def to_dict(self, *, top_runs: int = 10) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "target": self.target,
            "goal": self.goal,
            "n_runs": self.n_runs,
            "top": self.top,
            "model": self.model,
            "model_reason": self.model_reason,
            "r2": {k: round(v, 4) for k, v in self.r2.items()},
            "evaluator": self.evaluator,
            "confidence": self.confidence,
            "interval_level": self.interval_level,
            "params": self._param_dicts(),
            "advice": self.advice().to_dict(),
            "dropped": dict(self.dropped),
            "never_active": list(self.never_active),
            "aliases": {k: list(v) for k, v in self.aliases.items()},
            "param_source": self.param_source,
            "excluded_runs": dict(self.excluded),
            "analysis_run_id": self.analysis_run_id,
            "target_summary": self.target_summary(),
            "top_runs": self.top_runs(top_runs),
        }

    def _param_dicts(self) -> list[dict[str, Any]]:
        from lineage.importance._advice import runs_to_decide, verdict

        out = []
        for p, (best, worst) in zip(self.params, self.rank_ranges(), strict=True):
            row = p.to_dict()
            row["rank"] = [best, worst]
            row["verdict"] = verdict(p)
            row["runs_to_decide"] = runs_to_decide(p, self.n_runs, self.interval_level)
            out.append(row)
        return out


def model_line(result: ImportanceResult) -> str:
    """One line: the model that ranked the parameters, why, and the held-out R².

    Args:
        result: a fitted ranking.

    Returns:
        The line ``lineage importance`` prints under its table.
    """
    scores = ", ".join(f"{k} {v:.3f}" for k, v in result.r2.items())
    return f"model: {result.model} ({result.model_reason}; held-out R²: {scores or 'n/a'})"
