"""Draw a study's report into a folder: one PNG per view, one interactive HTML page holding
them all (plotly.js inlined once, so it opens offline and inside the MLflow UI), and
``report.json`` listing what was drawn."""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lineage import trials as trials_vocab
from lineage._errors import UsageError
from lineage.report import _figures as F
from lineage.report import _schedule as S

if TYPE_CHECKING:
    from optuna import Study
    from optuna.trial import FrozenTrial

__all__ = ["EXPLORING_KEY", "WARM_START_KEYS", "Report", "is_warm_started", "render_report"]

#: System or user attributes (or, for runs read from MLflow, tags) that mark a trial as
#: warm-started: imported from earlier runs rather than sampled by this study. The tuner's
#: ``warm_start:`` sets both.
WARM_START_KEYS = (trials_vocab.IMPORTED_ATTR, trials_vocab.IMPORTED_FROM_ATTR)
#: The user attribute of an exploring trial: one a warm start's sampler proposed without the
#: earlier runs (the tuner's ``compare: auto`` sets it on one trial in five).
EXPLORING_KEY = trials_vocab.EXPLORING_ATTR
PAGE = "report.html"
INDEX = "report.json"
#: A PBT study's hyperparameter schedule: one row per member's segment.
SCHEDULE = "schedule.csv"
_MAX_PARALLEL_PARAMS = 10


def is_warm_started(trial: FrozenTrial) -> bool:
    """Whether ``trial`` carries one of `WARM_START_KEYS` with a true value."""
    for attrs in (trial.user_attrs, trial.system_attrs):
        for key in WARM_START_KEYS:
            value = attrs.get(key)
            if value not in (None, False, "", "false", "False", "0"):
                return True
    return False


@dataclass
class Report:
    """What `render_report` wrote: ``files`` (paths under ``directory``, PNGs and the page),
    the views drawn, and notes on views left out and why."""

    directory: Path
    title: str
    files: list[Path] = field(default_factory=list)
    views: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    run_id: str | None = None
    #: The numbers of the exploring trials (`EXPLORING_KEY`).
    exploring: list[int] = field(default_factory=list)
    #: What the search decided, one line each (a warm start's measurement and choice per
    #: source, parameters at a bound, where each focus stands), as the caller gives them.
    search: list[str] = field(default_factory=list)

    @property
    def page(self) -> Path:
        return self.directory / PAGE

    def to_dict(self, *, relative: bool = False) -> dict[str, Any]:
        """The report as JSON; ``relative``: the directory as ``.`` and the files by their
        path inside it, as ``report.json`` keeps them, so they hold wherever the folder is
        moved (the MLflow artifacts a campaign logs it to)."""
        files = [p.relative_to(self.directory) if relative else p for p in self.files]
        return {
            "title": self.title,
            "directory": "." if relative else str(self.directory),
            "files": [str(p) for p in files],
            "views": self.views,
            "notes": self.notes,
            "trials": self.counts,
            "exploring": self.exploring,
            "search": self.search,
            "run_id": self.run_id,
        }


def _importances(study: Study, index: int, params: list[str]) -> list[str]:
    """``params`` by importance for objective ``index`` (Optuna's fANOVA), most first; in
    their own order when it cannot be computed (one parameter, too few trials)."""
    import optuna

    if len(params) < 2:
        return params
    several = len(study.directions) > 1
    try:
        ranked = F._quiet(
            optuna.importance.get_param_importances,
            study,
            evaluator=optuna.importance.FanovaImportanceEvaluator(seed=0),
            params=params,
            target=(lambda t: t.values[index]) if several else None,
        )
    except Exception:  # ordering is a nicety; the report goes on
        return params
    return list(ranked)


def _varying(trials: Sequence[FrozenTrial]) -> list[str]:
    seen: dict[str, set[str]] = {}
    for t in trials:
        for k, v in t.params.items():
            seen.setdefault(k, set()).add(repr(v))
    return [k for k, values in seen.items() if len(values) > 1]


def render_report(
    study: Study,
    directory: str | Path,
    *,
    target_names: Sequence[str] | None = None,
    importances: Mapping[str, Sequence[str]] | None = None,
    best: int = 5,
    warm_started: Callable[[FrozenTrial], bool] = is_warm_started,
    title: str | None = None,
    search: Sequence[str] = (),
    superseded: int = 0,
) -> Report:
    """Draw the report of ``study`` into ``directory`` (created if needed).

    Per objective: the optimization history with the best-so-far line (warm-started trials
    as diamonds), parallel coordinates of the parameters and the objective with the
    ``best`` best trials in red, a contour of the two most important parameters and a slice
    of each. Then the intermediate values (pruned trials dotted, an x where each stopped)
    when trials reported any, and the Pareto front for two or three objectives. Trials a
    scheduler paused, promoted or copied over (PBT) are marked apart in the history and the
    intermediate values; a PBT study adds its population's lineage and ``schedule.csv``.

    ``importances`` maps an objective name to its parameters, most important first (e.g. from
    a ``lineage importance`` analysis); otherwise Optuna's fANOVA orders them. ``search``:
    lines on what the search decided (a campaign gives its warm start's measurement and
    choice), shown under the counts and kept in ``report.json``. ``superseded``: how many
    attempts were left out of ``study`` because a later trial continues them (counted apart
    in the page and ``report.json``, as `tuner status` does). Raises
    :class:`~lineage.UsageError` when the study has no complete trial.
    """
    import matplotlib
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False)
    done = [t for t in trials if t.state == TrialState.COMPLETE]
    counts = {s.name: sum(t.state == s for t in trials) for s in TrialState}
    counts = {k: v for k, v in counts.items() if v}
    if superseded:
        counts["superseded"] = superseded
    if not done:
        raise UsageError(
            f"a report needs at least one complete trial with a value, got none of {len(trials)}"
        )
    n_obj = len(study.directions)
    names = list(
        target_names or ([f"objective{i}" for i in range(n_obj)] if n_obj > 1 else ["value"])
    )
    if len(names) != n_obj:
        raise UsageError(f"target_names must name {n_obj} objective(s), got {names}")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    report = Report(out, title or f"{study.study_name}: report of {len(trials)} trial(s)")
    report.counts = counts
    report.search = list(search)
    warm = [t.number for t in trials if warm_started(t)]
    report.exploring = [t.number for t in trials if t.user_attrs.get(EXPLORING_KEY)]
    pruned = [t.number for t in trials if t.state == TrialState.PRUNED]
    params = _varying(done)
    if not params:
        report.notes.append("no parameter varies across the complete trials: history only")
    with matplotlib.rc_context():  # Optuna's matplotlib plots set a global style
        figures: list[F.Figure] = []
        for i, name in enumerate(names):
            ranked = list((importances or {}).get(name) or _importances(study, i, params))
            ranked = [p for p in ranked if p in params] + [p for p in params if p not in ranked]
            figures += _objective_figures(study, i, name, ranked, best, warm, done, report)
        figures += _study_figures(study, names, trials, pruned, report)
        for fig in figures:
            report.files.append(_save_png(fig, out / f"{fig.stem}.png"))
            report.views.append(
                {
                    "name": fig.stem,
                    "title": fig.title,
                    "caption": fig.caption,
                    "png": f"{fig.stem}.png",
                }
            )
    report.files.append(_save_page(report, figures, out / PAGE))
    report.files.append(out / INDEX)
    index = json.dumps(report.to_dict(relative=True), indent=2, default=str)
    (out / INDEX).write_text(index, encoding="utf-8")
    return report


def _objective_figures(
    study: Study,
    index: int,
    name: str,
    ranked: Sequence[str],
    best: int,
    warm: Sequence[int],
    done: Sequence[FrozenTrial],
    report: Report,
) -> list[F.Figure]:
    """One objective's figures: its history, and over its ``ranked`` parameters (most
    important first) the parallel coordinates, a contour of the first two and the slices."""
    figures = [_history(study, index, name, warm, done, report.exploring)]
    if ranked:
        figures.append(F.parallel(study, index, name, ranked[:_MAX_PARALLEL_PARAMS], best))
        if len(ranked) >= 2:
            figures.append(F.contour(study, index, name, ranked[:2]))
        else:
            report.notes.append(f"contour of {name}: only one parameter varies")
        figures.append(F.slices(study, index, name, ranked[:2]))
    return figures


def _study_figures(
    study: Study,
    names: Sequence[str],
    trials: Sequence[FrozenTrial],
    pruned: Sequence[int],
    report: Report,
) -> list[F.Figure]:
    """The study's figures across objectives: the intermediate values (one objective), the
    Pareto front (two or three) and a PBT population's lineage (its schedule written too)."""
    figures: list[F.Figure] = []
    n_obj = len(names)
    if n_obj == 1 and any(t.intermediate_values for t in trials):
        figures.append(_intermediate(study, pruned, trials))
    elif n_obj == 1:
        report.notes.append("intermediate values: no trial reported any")
    if 2 <= n_obj <= 3:
        figures.append(F.pareto(study, names))
    elif n_obj > 3:
        report.notes.append(f"Pareto front: {n_obj} objectives cannot be drawn (2 or 3 can)")
    segments = S.segments(study)
    if segments:
        figures.append(S.lineage_figure(segments))
        report.files.append(S.write_schedule(segments, report.directory / SCHEDULE))
    return figures


def _history(
    study: Study,
    index: int,
    name: str,
    warm: Sequence[int],
    done: Sequence[FrozenTrial],
    exploring: Sequence[int] = (),
) -> F.Figure:
    """The history, promoted trials and PBT segments that started from a donor marked."""
    fig = F.history(study, index, name, warm, exploring)
    points: dict[str, list[tuple[float, float]]] = {}
    for t in done:
        kind = trials_vocab.mark(trials_vocab.TrialRecord.of(t))
        if kind is not None:
            points.setdefault(kind, []).append((t.number, t.values[index]))
    fig.caption += S.add_marks(fig.plotly, fig.axes, points)
    return fig


def _intermediate(study: Study, pruned: Sequence[int], trials: Sequence[FrozenTrial]) -> F.Figure:
    """The curves, with a mark where each trial was paused, promoted or copied over."""
    fig = F.intermediate(study, pruned)
    points = {k: [(x, y) for _, x, y in v] for k, v in S.marks(trials).items()}
    fig.caption += S.add_marks(fig.plotly, fig.axes, points)
    return fig


def _save_png(fig: F.Figure, path: Path) -> Path:
    import matplotlib.pyplot as plt

    single = hasattr(fig.axes, "figure")
    canvas = fig.axes.figure if single else fig.axes.flat[0].figure
    try:
        if single:
            fig.axes.set_title(fig.title, y=1.03 if fig.stem.startswith("parallel") else None)
        else:
            canvas.suptitle(fig.title)
        canvas.set_size_inches(9, 5.5)
        canvas.savefig(path, dpi=100, bbox_inches="tight", facecolor="white")
    finally:
        plt.close(canvas)
    return path


def _save_page(report: Report, figures: Sequence[F.Figure], path: Path) -> Path:
    parts = []
    for i, fig in enumerate(figures):
        fig.plotly.update_layout(title={"text": fig.title}, height=520, template="plotly_white")
        body = fig.plotly.to_html(
            full_html=False, include_plotlyjs=(i == 0), config={"displaylogo": False}
        )
        parts.append(
            # No link to the PNG beside it: inside the MLflow UI the page is an iframe's
            # srcdoc, where a relative link leads nowhere.
            f"<section id='{fig.stem}'><p>{html.escape(fig.caption)}</p>{body}</section>"
        )
    counts = ", ".join(f"{k} {v}" for k, v in report.counts.items())
    toc = " · ".join(f"<a href='#{f.stem}'>{html.escape(f.title)}</a>" for f in figures)
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in report.notes)
    search = "".join(f"<li>{html.escape(n)}</li>" for n in report.search)
    title = html.escape(report.title)
    page = (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>"
        "<style>body{font-family:sans-serif;margin:16px 24px}section{margin-bottom:28px}"
        "p{color:#444}</style></head><body>"
        f"<h2>{title}</h2><p>Trials: {html.escape(counts)}.</p>"
        + (f"<p>What the search decided:</p><ul>{search}</ul>" if search else "")
        + f"<p>{toc}</p>"
        + (f"<ul>{notes}</ul>" if notes else "")
        + "".join(parts)
        + "</body></html>"
    )
    path.write_text(page, encoding="utf-8")
    return path
