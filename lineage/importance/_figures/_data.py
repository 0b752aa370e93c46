"""What a scatter plot of one parameter shows, computed once for both renderers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from lineage.importance._result import format_bound
from lineage.importance._types import ParamSpec, category_labels, numeric_values

if TYPE_CHECKING:
    from lineage.importance._result import ImportanceResult, ParamImportance

__all__ = ["ScatterData", "headline", "scatter_data"]


def headline(p: ParamImportance) -> str:
    """A parameter's figure title: importance, interval, verdict. The verdict is the
    interval's own: significant exactly when its lower end, printed non-zero, is above 0."""
    verdict = "significant" if p.significant else "no detectable effect"
    return (
        f"{p.label}: importance {p.importance:.3f} "
        f"[{format_bound(p.ci[0], 3)}, {format_bound(p.ci[1], 3)}], {verdict}"
    )


@dataclass
class ScatterData:
    """Values on the parameter's natural scale (not log10: the axis is made logarithmic)."""

    name: str
    kind: str
    log: bool
    y: np.ndarray
    x: np.ndarray
    codes: np.ndarray
    categories: list[str]
    best_y: float
    best_x: float | None
    best_code: int | None
    n_missing: int
    trend: tuple[np.ndarray, np.ndarray] | None


def scatter_data(result: ImportanceResult, name: str) -> ScatterData:
    p = next((p for p in result.params if p.name == name), None)
    if p is None:
        raise KeyError(f"{name!r} is not a ranked parameter of this result")
    spec, column, y = p.spec, result.values[name], result.target_values
    best = result.best_index
    if spec.kind == "categorical":
        labels = category_labels(column)
        present = [c for c in spec.categories if (labels == c).any()]
        index = {c: i for i, c in enumerate(present)}
        codes = np.array([index.get(str(v), -1) for v in labels])
        return ScatterData(
            name,
            "categorical",
            False,
            y,
            np.empty(0),
            codes,
            present,
            float(y[best]),
            None,
            int(codes[best]),
            0,
            None,
        )
    x = numeric_values(ParamSpec(name, "numeric"), column)
    missing = np.isnan(x)
    return ScatterData(
        name,
        "numeric",
        spec.log,
        y,
        x,
        np.empty(0, dtype=int),
        [],
        float(y[best]),
        None if missing[best] else float(x[best]),
        None,
        int(missing.sum()),
        _trend(x[~missing], y[~missing], spec.log),
    )


def _trend(x: np.ndarray, y: np.ndarray, log: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """Median target per quantile bin of the parameter: the shape of the effect at a glance."""
    distinct = np.unique(x)
    if len(x) < 16:
        return None
    if len(distinct) <= 12:
        med = np.array([np.median(y[x == v]) for v in distinct])
        return distinct, med
    n_bins = int(np.clip(len(x) // 12, 4, 20))
    edges = np.unique(np.quantile(x, np.linspace(0, 1, n_bins + 1)))
    which = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, len(edges) - 2)
    centers, medians = [], []
    for b in range(len(edges) - 1):
        sel = which == b
        if sel.sum() >= 3:
            centers.append(
                float(np.exp(np.mean(np.log(x[sel])))) if log else float(np.mean(x[sel]))
            )
            medians.append(float(np.median(y[sel])))
    if len(centers) < 3:
        return None
    return np.array(centers), np.array(medians)
