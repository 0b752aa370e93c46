"""The report of one experiment in a tracking store: read its runs, build a study, draw it,
and optionally record the files as an analysis run."""

from __future__ import annotations

import contextlib
import difflib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lineage import tags, trials
from lineage._errors import NotFoundError, StoreError, UsageError
from lineage.report._render import WARM_START_KEYS, Report, render_report
from lineage.report._study import parse_space, study_from_runs

__all__ = ["ARTIFACT_DIR", "log_report", "report_experiment"]

#: Where a report's files go among a run's artifacts.
ARTIFACT_DIR = "report"
_NOT_TRAINING = frozenset({tags.RUN_TYPE_ANALYSIS, tags.RUN_TYPE_CAMPAIGN, "reserved"})
_OBJECTIVES = "objectives"  # a campaign run's param: metric:goal,metric:goal
_GOALS = {"min": "minimize", "minimize": "minimize", "max": "maximize", "maximize": "maximize"}


def _suggest(name: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _campaign_info(runs: Sequence[Any]) -> tuple[list[tuple[str, str]], dict[str, dict[str, Any]]]:
    """The objectives (metric, goal) and search space of the campaigns among ``runs``."""
    objectives: list[tuple[str, str]] = []
    spaces: dict[str, dict[str, Any]] = {}
    for run in sorted(runs, key=lambda r: r.start_time or 0):
        if run.tags.get(tags.RUN_TYPE) != tags.RUN_TYPE_CAMPAIGN:
            continue
        pairs = run.params.get(_OBJECTIVES) or run.params.get(tags.CAMPAIGN_TARGET) or ""
        for pair in pairs.split(","):
            metric, _, goal = pair.rpartition(":")
            if metric and (metric, goal) not in objectives:
                objectives.append((metric, _GOALS.get(goal, goal)))
        for key, text in run.params.items():
            if key.startswith(tags.CAMPAIGN_SPACE_PREFIX):
                space = parse_space(text)
                if space is not None:
                    spaces[key[len(tags.CAMPAIGN_SPACE_PREFIX) :]] = space
    return objectives, spaces


def _params(kept: Sequence[Any], spaces: dict[str, Any]) -> list[str]:
    if spaces:
        return list(spaces)
    values: dict[str, set[str]] = {}
    for run in kept:
        for k, v in run.params.items():
            values.setdefault(k, set()).add(v)
    chosen = []
    for name, seen in values.items():
        if len(seen) < 2:
            continue
        numeric = all(re.fullmatch(r"\s*[-+]?[\d.]+(e[-+]?\d+)?\s*", v, re.I) for v in seen)
        # A text value unique to nearly every run (a path, an id) is not a hyperparameter.
        if not numeric and len(seen) > 20 and len(seen) > 0.5 * len(kept):
            continue
        chosen.append(name)
    return sorted(chosen)


def report_experiment(
    experiment: str,
    *,
    tracking_uri: str | None = None,
    where: str | None = None,
    targets: Sequence[str] | None = None,
    goals: Sequence[str] | None = None,
    params: Sequence[str] | None = None,
    out: str | Path | None = None,
    log: bool = False,
    best: int = 5,
) -> Report:
    """Draw the report of ``experiment`` (name or id) into ``out`` (default
    ``report-<experiment>`` in the working directory), over its training runs that match
    ``where`` (the ``lineage runs --where`` language).

    ``targets`` default to the objectives of the campaign recorded in the experiment;
    ``goals`` (one, or one per target) to the campaign's, else to the metric's name (``loss``,
    ``error``... minimize, anything else maximize). ``params`` default to the campaign's
    tuned parameters, else every parameter that varies. With ``log=True`` the files are
    recorded as a new analysis run of the experiment (``report.run_id``).

    Raises :class:`~lineage.NotFoundError` (unknown experiment, metric, param) or
    :class:`~lineage.UsageError` (no run with the target, goals that do not match) before
    anything is written, and :class:`~lineage.StoreError` when the store fails.
    """
    from lineage.query import experiment_focus, importance_ranking, search_runs
    from lineage.store import open_store
    from lineage.uri import resolve_tracking_uri

    uri = resolve_tracking_uri(tracking_uri)
    store = open_store(uri)
    try:
        exp = store.resolve_experiments([experiment])[0]
        runs = search_runs(store, experiments=[exp.experiment_id], where=where)
        kept = [
            r
            for r in runs
            if r.tags.get(tags.RUN_TYPE) not in _NOT_TRAINING and r.status != "RUNNING"
        ]
        kept, superseded = _without_superseded(kept)
        # The experiment's target and its campaign's space, whichever runs ``where`` kept.
        focus = experiment_focus(store, [exp.experiment_id])
        objectives, spaces = _campaign_info(focus.records)
        objectives = [(m, _GOALS[g]) for m, g in focus.targets] or objectives
        names, directions, notes = _targets(exp.name, kept, objectives, targets, goals)
        known = sorted({k for r in kept for k in r.params})
        for p in params or ():
            if p not in known:
                raise NotFoundError(
                    f"param {p!r} is not recorded by any run of experiment {exp.name!r}"
                    f"{_suggest(p, known)}"
                )
        chosen = list(params) if params else [p for p in _params(kept, spaces) if p in known]
        # Contours and slices over what the experiment's importance analysis ranked first
        # (as the campaign's own report), not over what fANOVA finds in these trials alone.
        ranked = {
            n: _ranking(importance_ranking(focus.records, [n], fitted_only=False), focus.tuned)
            for n in names
        }
        histories = store.metric_histories if len(names) == 1 else None
        study = study_from_runs(
            kept,
            targets=names,
            goals=directions,
            params=chosen,
            spaces=spaces,
            histories=histories,
            study_name=exp.name,
            # A run's paused/exploited tags travel too: the figures mark such trials apart.
            warm_tags=(*WARM_START_KEYS, trials.PAUSED_ATTR, trials.EXPLOITED_ATTR),
        )
    finally:
        store.close()
    directory = Path(out) if out is not None else Path(f"report-{_safe(exp.name)}")
    report = render_report(
        study,
        directory,
        target_names=names,
        importances={n: r for n, r in ranked.items() if r},
        best=best,
        title=f"{exp.name}: report of {len(kept)} run{'' if len(kept) == 1 else 's'}"
        + (f" where {where}" if where else ""),
        superseded=superseded,
    )
    report.notes[:0] = notes
    if log:
        report.run_id = log_report(
            report, tracking_uri=uri, experiment_id=exp.experiment_id, targets=names
        )
    return report


def _ranking(scores: dict[str, float], tuned: Sequence[str]) -> list[str]:
    """The parameters by importance, most first, ties (and those the analysis did not
    rank) in the campaign's order, as the campaign's own report orders them."""
    if not scores:
        return []
    order = {p: i for i, p in enumerate(tuned)}
    ranked = sorted(scores, key=lambda p: (-scores[p], order.get(p, len(order)), p))
    return ranked + [p for p in tuned if p not in scores]


def _without_superseded(runs: list[Any]) -> tuple[list[Any], int]:
    """The runs less the attempts a later run of the same campaign continues (a retried
    failure, a trial interrupted and resumed) that did not finish themselves: the tuner
    counts the continuation, not the attempt, so the report does too (`tuner status` shows
    them as superseded). A paused or copied-over run that ended PRUNED stays."""
    continued = {
        (r.tags.get(tags.CAMPAIGN), r.tags[trials.PARENT_ATTR])
        for r in runs
        if r.tags.get(trials.PARENT_ATTR)
    }
    keep = [
        r
        for r in runs
        if r.tags.get(tags.TRIAL_STATE) in (None, "COMPLETE", tags.TRIAL_STATE_PRUNED)
        or (r.tags.get(tags.CAMPAIGN), r.tags.get(tags.TRIAL_NUMBER)) not in continued
    ]
    return keep, len(runs) - len(keep)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "experiment"


def _targets(
    experiment: str,
    kept: Sequence[Any],
    objectives: list[tuple[str, str]],
    targets: Sequence[str] | None,
    goals: Sequence[str] | None,
) -> tuple[list[str], list[str], list[str]]:
    recorded = sorted({k for r in kept for k in r.metrics})
    if not kept:
        raise UsageError(f"experiment {experiment!r} has no finished training run to report")
    names = list(targets or [m for m, _ in objectives])
    if not names:
        raise UsageError(
            f"--target is required: experiment {experiment!r} records no campaign target "
            f"(metrics recorded: {', '.join(recorded) or 'none'})"
        )
    for name in names:
        if name not in recorded:
            raise NotFoundError(
                f"--target {name!r} is not recorded by any run of experiment {experiment!r} "
                f"(metrics recorded: {', '.join(recorded) or 'none'}){_suggest(name, recorded)}"
            )
    given = [_GOALS.get(g, g) for g in goals or ()]
    if given and len(given) not in (1, len(names)):
        raise UsageError(
            f"--goal must be given once or once per target ({len(names)}), got {len(given)}"
        )
    if len(given) == 1:
        given = given * len(names)
    campaign = dict(objectives)
    notes: list[str] = []
    directions = []
    for i, name in enumerate(names):
        if given:
            directions.append(given[i])
        elif name in campaign:
            directions.append(campaign[name])
        else:
            from lineage.query import metric_goal

            goal = "minimize" if metric_goal(name) == "min" else "maximize"
            directions.append(goal)
            notes.append(f"goal of {name}: {goal}, guessed from its name (--goal to choose)")
    return names, directions, notes


def log_report(
    report: Report,
    *,
    tracking_uri: str,
    run_id: str | None = None,
    experiment_id: str | None = None,
    targets: Sequence[str] = (),
) -> str:
    """Record ``report``'s folder under the ``report/`` artifacts of ``run_id``, or of a new
    finished run of ``experiment_id`` tagged ``lineage.run_type=analysis`` and
    ``lineage.analysis.kind=report``; return the run id. Raises
    :class:`~lineage.StoreError` when MLflow refuses."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    created = run_id is None
    try:
        if run_id is None:
            if experiment_id is None:
                raise UsageError("log_report needs a run_id or an experiment_id")
            run = client.create_run(
                experiment_id,
                run_name="report" + "".join(f"-{t}" for t in targets[:2]),
                tags={
                    tags.RUN_TYPE: tags.RUN_TYPE_ANALYSIS,
                    "lineage.analysis.kind": "report",
                    "lineage.analysis.target": ",".join(targets),
                    "mlflow.note.content": report_note(report),
                },
            )
            run_id = run.info.run_id
        client.log_artifacts(run_id, str(report.directory), artifact_path=ARTIFACT_DIR)
        if created:
            client.set_terminated(run_id, "FINISHED")
    except UsageError:
        raise
    except Exception as exc:  # MLflow raises its own and driver exceptions alike
        if created and run_id is not None:
            with contextlib.suppress(Exception):  # the first error is the one to report
                client.set_terminated(run_id, "FAILED")
        raise StoreError(f"could not record the report in {tracking_uri}: {exc}") from exc
    return run_id


def report_note(report: Report) -> str:
    """Markdown naming the report's views, for a run's description."""
    views = "; ".join(f"`{ARTIFACT_DIR}/{v['png']}`: {v['title']}" for v in report.views)
    return (
        f"**{report.title}**. One picture per view, shown by MLflow's artifact viewer: "
        f"{views}. `{ARTIFACT_DIR}/report.html` holds every view interactive (zoom, hover; "
        "a few MB with plotly.js inside): the viewer draws it after loading it, or download "
        "it to open it in a browser tab."
    )
