"""PNG figures of an importance analysis, drawn on the shared canvas of :mod:`lineage.plots`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lineage.importance._figures._data import ScatterData, headline, scatter_data
from lineage.plots import figure, save, tidy

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from lineage.importance._result import ImportanceResult

__all__ = ["save_importance_bars", "save_scatter", "save_target_distribution"]

SIGNIFICANT = "#2a6fb0"
NOT_SIGNIFICANT = "#b8bec6"
POINTS = "#4c72b0"
BEST = "#d62728"


def save_importance_bars(result: ImportanceResult, path: Path) -> Path:
    """Horizontal bars, most important on top, with the 95% interval as error bars."""
    params = result.params
    fig = figure(7.5, 1.2 + 0.42 * len(params))
    ax = fig.add_subplot()
    names = [p.label for p in params][::-1]
    values = np.array([p.importance for p in params][::-1])
    lo = np.array([p.ci[0] for p in params][::-1])
    hi = np.array([p.ci[1] for p in params][::-1])
    colors = [SIGNIFICANT if p.significant else NOT_SIGNIFICANT for p in params][::-1]
    ypos = np.arange(len(params))
    ax.barh(ypos, values, color=colors, height=0.62, zorder=2)
    ax.errorbar(
        values,
        ypos,
        xerr=np.vstack([values - lo, hi - values]).clip(min=0),
        fmt="none",
        ecolor="#333333",
        elinewidth=1.1,
        capsize=3,
        zorder=3,
    )
    right = min(1.0, max(float(hi.max(initial=0.0)), float(values.max(initial=0.0))))
    right = right * 1.14 + 0.02
    for y, v, h in zip(ypos, values, hi, strict=True):
        ax.text(
            float(min(max(v, h) + 0.01 * right, right * 0.93)),
            float(y),
            f"{v:.3f}",
            va="center",
            fontsize=8.5,
            color="#333333",
        )
    ax.set_yticks(ypos, labels=names)
    ax.set_xlim(0, right)
    ax.set_xlabel(
        "importance: share of held-out error, with 95% interval (significant = interval excludes 0)"
    )
    scope = f", best {result.top:g} of runs" if result.top else ""
    ax.set_title(
        f"Which parameters matter for {result.target} ({result.goal}, {result.n_runs} runs{scope})",
        fontsize=11,
        loc="left",
    )
    tidy(ax)
    ax.grid(False, axis="y")
    from matplotlib.patches import Patch

    ax.legend(
        handles=[
            Patch(color=SIGNIFICANT, label="significant"),
            Patch(color=NOT_SIGNIFICANT, label="no detectable effect"),
        ],
        loc="lower right",
        fontsize=8.5,
        frameon=False,
    )
    return save(fig, path)


def save_scatter(result: ImportanceResult, name: str, path: Path) -> Path:
    """The target against one parameter: points (log x for log-scale parameters) or, for a
    categorical, a box and jittered strip per category; the best run as a red star."""
    data = scatter_data(result, name)
    fig = figure(6.4, 4.2)
    ax = fig.add_subplot()
    if data.kind == "categorical":
        _draw_categorical(ax, data)
    else:
        _draw_numeric(ax, data)
    ax.set_ylabel(result.target)
    p = next(p for p in result.params if p.name == name)
    if p.spec.kind == "numeric":
        parts = [] if p.correlation is None else [f"Spearman {p.correlation:+.2f}"]
        if data.best_x is not None:
            parts.append(f"best run at {data.best_x:.4g}")
    else:
        parts = [] if p.best is None else [f"best mean: {p.best}"]
    ax.set_title(
        headline(p) + "\n" + "   ".join(parts),
        fontsize=10,
        loc="left",
    )
    tidy(ax)
    fig.legend(loc="outside lower center", ncol=3, fontsize=8, frameon=False)
    return save(fig, path)


def _draw_numeric(ax: Axes, data: ScatterData) -> None:
    x, y = data.x, data.y
    ok = ~np.isnan(x)
    alpha = float(np.clip(30.0 / np.sqrt(max(ok.sum(), 1)), 0.15, 0.8))
    ax.scatter(x[ok], y[ok], s=16, color=POINTS, alpha=alpha, linewidths=0, label="runs")
    if data.log:
        ax.set_xscale("log")
    if data.trend is not None:
        tx, ty = data.trend
        ax.plot(tx, ty, color="#333333", linewidth=1.4, label="median by bin")
    if data.best_x is not None:
        _mark_best(ax, data.best_x, data.best_y)
    label = f"{data.name}{' (log scale)' if data.log else ''}"
    if data.n_missing:
        label += f"   ({data.n_missing} runs without {data.name} not shown)"
    ax.set_xlabel(label)


def _draw_categorical(ax: Axes, data: ScatterData) -> None:
    rng = np.random.default_rng(0)
    groups = [data.y[data.codes == i] for i in range(len(data.categories))]
    positions = np.arange(len(data.categories))
    ax.boxplot(
        [g if len(g) else [np.nan] for g in groups],
        positions=positions,
        widths=0.5,
        showfliers=False,
        medianprops={"color": "#333333"},
        boxprops={"color": "#777777"},
        whiskerprops={"color": "#777777"},
        capprops={"color": "#777777"},
    )
    alpha = float(np.clip(30.0 / np.sqrt(max(len(data.y), 1)), 0.15, 0.8))
    jitter = rng.uniform(-0.18, 0.18, size=len(data.y))
    ax.scatter(
        data.codes + jitter,
        data.y,
        s=14,
        color=POINTS,
        alpha=alpha,
        linewidths=0,
        label="runs",
        zorder=3,
    )
    if data.best_code is not None:
        _mark_best(ax, data.best_code, data.best_y)
    labels = [f"{c}\n(n={len(g)})" for c, g in zip(data.categories, groups, strict=True)]
    ax.set_xticks(positions, labels=labels, fontsize=8.5)
    ax.set_xlabel(data.name)


def save_target_distribution(result: ImportanceResult, path: Path) -> Path:
    """Histogram of the target over the analysed runs, the best value marked."""
    y = result.target_values
    fig = figure(6.4, 3.6)
    ax = fig.add_subplot()
    bins: Any = min(40, max(5, int(np.sqrt(len(y)))))
    ax.hist(y, bins=bins, color=POINTS, alpha=0.85, edgecolor="white")
    best = float(y[result.best_index])
    ax.axvline(best, color=BEST, linewidth=1.5, label=f"best {best:.4g}")
    ax.axvline(
        float(np.median(y)),
        color="#333333",
        linestyle="--",
        linewidth=1.2,
        label=f"median {np.median(y):.4g}",
    )
    ax.set_xlabel(result.target)
    ax.set_ylabel("runs")
    ax.set_title(f"Distribution of {result.target} over {len(y)} runs", fontsize=11, loc="left")
    tidy(ax)
    ax.legend(fontsize=8.5, frameon=False)
    return save(fig, path)


def _mark_best(ax: Any, x: Any, y: Any) -> None:
    ax.scatter(
        [x],
        [y],
        marker="*",
        s=180,
        color=BEST,
        zorder=5,
        edgecolors="white",
        linewidths=0.6,
        label="best run",
    )
