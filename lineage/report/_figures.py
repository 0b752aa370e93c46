"""Each figure of a report, drawn by Optuna's own visualization module: plotly for the
interactive page, ``optuna.visualization.matplotlib`` for the PNG. What Optuna does not draw
(the best runs highlighted, pruned and warm-started trials set apart) is added on top of the
figure it returns, never redrawn."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from optuna import Study
    from optuna.trial import FrozenTrial

__all__ = ["BEST", "PRUNED", "WARM", "Figure"]

BEST = "#d62728"  # the best runs, in every figure
PRUNED = "#7f7f7f"
WARM = "#ff7f0e"
EXPLORE = "#bcbd22"  # exploring trials of a warm start


@dataclass
class Figure:
    """One view of the report: a file stem, a title, what it shows, and both drawings."""

    stem: str
    title: str
    caption: str
    plotly: Any = None
    axes: Any = None
    notes: list[str] = field(default_factory=list)


def _quiet(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    import optuna

    with warnings.catch_warnings():
        # optuna.visualization.matplotlib is marked experimental; the figures are what we want.
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return fn(*args, **kwargs)


def _complete(study: Study) -> list[FrozenTrial]:
    from optuna.trial import TrialState

    return study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))


def best_numbers(study: Study, k: int, index: int = 0) -> list[int]:
    """The ``k`` best complete trials on objective ``index`` (Pareto front when several)."""
    from optuna.study import StudyDirection

    if len(study.directions) > 1 and index < 0:
        return sorted(t.number for t in study.best_trials)
    sign = -1.0 if study.directions[index] == StudyDirection.MAXIMIZE else 1.0
    done = sorted(_complete(study), key=lambda t: sign * t.values[index])
    return [t.number for t in done[:k]]


def history(
    study: Study, index: int, name: str, warm: Sequence[int], exploring: Sequence[int] = ()
) -> Figure:
    import optuna.visualization as pv
    import optuna.visualization.matplotlib as pm

    target = (lambda t: t.values[index]) if len(study.directions) > 1 else None
    fig = _quiet(pv.plot_optimization_history, study, target=target, target_name=name)
    ax = _quiet(pm.plot_optimization_history, study, target=target, target_name=name)
    out = Figure(
        f"history-{name}" if len(study.directions) > 1 else "history",
        f"Optimization history of {name}",
        f"{name} of every complete trial in the order they ran, and the best so far (line).",
        fig,
        ax,
    )
    points = [t for t in _complete(study) if t.number in set(warm)]
    if points:
        xs = [t.number for t in points]
        ys = [t.values[index] for t in points]
        label = f"warm-started ({len(points)}, from earlier runs)"
        fig.add_scatter(
            x=xs, y=ys, mode="markers", name=label,
            marker={"symbol": "diamond", "size": 10, "color": WARM, "line": {"width": 1}},
        )  # fmt: skip
        ax.scatter(xs, ys, marker="D", s=40, color=WARM, zorder=5, label=label)
        ax.legend()
        out.caption += " Diamonds: trials warm-started from earlier runs, not sampled here."
    points = [t for t in _complete(study) if t.number in set(exploring)]
    if points:
        xs = [t.number for t in points]
        ys = [t.values[index] for t in points]
        label = f"exploring ({len(points)}, proposed without the earlier runs)"
        fig.add_scatter(
            x=xs, y=ys, mode="markers", name=label,
            marker={"symbol": "star", "size": 11, "color": EXPLORE, "line": {"width": 1}},
        )  # fmt: skip
        ax.scatter(xs, ys, marker="*", s=80, color=EXPLORE, zorder=5, label=label)
        ax.legend()
        out.caption += (
            " Stars: exploring trials, proposed without the earlier runs (one in five of a"
            " warm start's)."
        )
    return out


def parallel(study: Study, index: int, name: str, params: Sequence[str], k: int) -> Figure:
    """Parallel coordinates; the ``k`` best trials drawn on top in red."""
    import optuna.visualization as pv
    import optuna.visualization.matplotlib as pm

    several = len(study.directions) > 1
    target = (lambda t: t.values[index]) if several else None
    fig = _quiet(pv.plot_parallel_coordinate, study, list(params), target=target, target_name=name)
    ax = _quiet(pm.plot_parallel_coordinate, study, list(params), target=target, target_name=name)
    maximize = study.directions[index].name == "MAXIMIZE"
    # The count ``--best`` asks for (every complete trial when there are fewer).
    shown = min(k, len(_complete(study)))
    out = Figure(
        f"parallel-{name}" if several else "parallel",
        f"Parallel coordinates: {', '.join(params)} and {name}",
        f"One line per complete trial through its parameter values and {name} (first axis); "
        f"the {shown} best in red.",
        fig,
        ax,
    )
    _highlight_plotly_lines(fig, shown, maximize)
    _highlight_mpl_lines(ax, shown, maximize)
    return out


def _highlight_plotly_lines(fig: Any, k: int, maximize: bool) -> None:
    # Optuna draws one line trace per trial; x=0 is the objective, normalised to [0, 1].
    lines = [t for t in fig.data if t.mode == "lines" and t.y is not None and len(t.y) > 1]
    order = sorted(lines, key=lambda t: t.y[0], reverse=maximize)
    best = order[:k]
    for trace in best:
        trace.line.color = BEST
        trace.line.width = 3
        trace.opacity = 1.0
    rest = [t for t in fig.data if not any(t is b for b in best)]
    fig.data = (*rest, *best)  # on top
    if best:
        fig.add_scatter(
            x=[None], y=[None], mode="lines", name=f"best {len(best)}",
            line={"color": BEST, "width": 3}, showlegend=True,
        )  # fmt: skip
        fig.update_layout(showlegend=True)


def _highlight_mpl_lines(ax: Any, k: int, maximize: bool) -> None:
    from matplotlib.collections import LineCollection

    collections = [c for c in ax.collections if isinstance(c, LineCollection)]
    if not collections or k == 0:
        return
    segments = collections[0].get_segments()  # first column: the objective's own value
    best = sorted(segments, key=lambda s: s[0][1], reverse=maximize)[:k]
    ax.add_collection(LineCollection(best, colors=BEST, linewidths=2.5, zorder=5))
    from matplotlib.lines import Line2D

    ax.legend(
        handles=[Line2D([0], [0], color=BEST, lw=2.5, label=f"best {len(best)}")],
        loc="upper right", bbox_to_anchor=(1.0, -0.12), frameon=False,
    )  # fmt: skip


def contour(study: Study, index: int, name: str, pair: Sequence[str]) -> Figure:
    import optuna.visualization as pv
    import optuna.visualization.matplotlib as pm

    several = len(study.directions) > 1
    target = (lambda t: t.values[index]) if several else None
    fig = _quiet(pv.plot_contour, study, list(pair), target=target, target_name=name)
    ax = _quiet(pm.plot_contour, study, list(pair), target=target, target_name=name)
    return Figure(
        f"contour-{name}" if several else "contour",
        f"Contour of {name} over {pair[0]} and {pair[1]}",
        f"{name} interpolated over the two most important parameters; dots are trials.",
        fig,
        ax,
    )


def slices(study: Study, index: int, name: str, params: Sequence[str]) -> Figure:
    import optuna.visualization as pv
    import optuna.visualization.matplotlib as pm

    several = len(study.directions) > 1
    target = (lambda t: t.values[index]) if several else None
    fig = _quiet(pv.plot_slice, study, list(params), target=target, target_name=name)
    ax = _quiet(pm.plot_slice, study, list(params), target=target, target_name=name)
    return Figure(
        f"slice-{name}" if several else "slice",
        f"{name} against {' and '.join(params)}",
        f"{name} of each trial against each of the most important parameters (colour: trial "
        "number, later trials darker).",
        fig,
        ax,
    )


def intermediate(study: Study, pruned: Sequence[int]) -> Figure:
    """Every trial's reported curve; pruned ones grey and dotted, an x where each stopped."""
    import optuna.visualization as pv
    import optuna.visualization.matplotlib as pm

    fig = _quiet(pv.plot_intermediate_values, study)
    ax = _quiet(pm.plot_intermediate_values, study)
    cut = {f"Trial{n}" for n in pruned}
    ends_x: list[float] = []
    ends_y: list[float] = []
    for trace in fig.data:
        if trace.name in cut and trace.x:
            trace.line = {"color": PRUNED, "dash": "dot"}
            trace.marker = {"color": PRUNED, "maxdisplayed": 10}
            ends_x.append(trace.x[-1])
            ends_y.append(trace.y[-1])
    if ends_x:
        fig.add_scatter(
            x=ends_x, y=ends_y, mode="markers", name="pruned here",
            marker={"symbol": "x", "size": 10, "color": BEST}, showlegend=True,
        )  # fmt: skip
        fig.update_layout(showlegend=True)
    for line in ax.get_lines():
        if line.get_label() in cut:
            line.set_color(PRUNED)
            line.set_linestyle(":")
            ax.scatter(line.get_xdata()[-1:], line.get_ydata()[-1:], marker="x", color=BEST, s=50, zorder=5)  # fmt: skip
    legend = ax.get_legend()
    if legend is not None:
        legend.remove()  # one entry per trial: unreadable past a dozen
    from matplotlib.lines import Line2D

    handles = [Line2D([0], [0], color="#348abd", marker=".", label="complete")]
    if ends_x:
        handles += [
            Line2D([0], [0], color=PRUNED, ls=":", label="pruned"),
            Line2D([0], [0], color=BEST, marker="x", ls="", label="pruned here"),
        ]
    ax.legend(handles=handles, loc="best")
    n = len([t for t in fig.data if t.name and str(t.name).startswith("Trial")])
    return Figure(
        "intermediate",
        "Intermediate values",
        f"The target as each of {n} trials reported it, step by step"
        + (
            f"; {len(ends_x)} pruned trial(s) dotted grey, an x where each was stopped."
            if ends_x
            else "."
        ),
        fig,
        ax,
    )


def pareto(study: Study, names: Sequence[str]) -> Figure:
    import optuna.visualization as pv
    import optuna.visualization.matplotlib as pm

    fig = _quiet(pv.plot_pareto_front, study, target_names=list(names))
    ax = _quiet(pm.plot_pareto_front, study, target_names=list(names))
    front = len(study.best_trials)
    return Figure(
        "pareto",
        f"Pareto front of {' and '.join(names)}",
        f"Every complete trial; the {front} on the Pareto front (none better on every "
        "objective) in red.",
        fig,
        ax,
    )
