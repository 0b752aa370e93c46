"""Rank the parameters of one experiment in a tracking store, and optionally record the
analysis there as a run of its own."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from lineage import tags
from lineage.importance._analysis import get_param_importances
from lineage.importance._base import ImportanceEvaluator
from lineage.importance._result import ImportanceResult

__all__ = ["ANALYSIS_RUN_TYPE", "RUN_TYPE_TAG", "analyze_experiment", "training_runs"]

RUN_TYPE_TAG = tags.RUN_TYPE
ANALYSIS_RUN_TYPE = tags.RUN_TYPE_ANALYSIS
"""The ``lineage.run_type`` tag value of an importance analysis run (left out of rankings)."""
CAMPAIGN_TAG = tags.CAMPAIGN
SPACE_PREFIX = "space."  # the campaign run's params: one per tuned parameter
_NOT_TRAINING = frozenset({"analysis", "campaign", "reserved"})


def training_runs(runs: Iterable[Any]) -> tuple[list[Any], dict[str, int]]:
    """The finished training runs among ``runs``, and how many of the others were left out
    for which reason. Analysis and campaign runs (tag ``lineage.run_type``) are never
    training runs; unfinished, failed, pruned and killed runs have no final value to
    explain. A trial the tuner pruned (MLflow's KILLED) is counted as pruned.

    Args:
        runs: run records (``lineage.store.RunRecord`` or anything with ``status`` and ``tags``).

    Returns:
        ``(kept, left_out)``: the training runs, and a count per reason for the others.
    """
    kept: list[Any] = []
    excluded: dict[str, int] = {}
    for run in runs:
        kind = run.tags.get(RUN_TYPE_TAG)
        if kind in _NOT_TRAINING:
            reason = f"{kind} runs"
        elif run.status == "KILLED" and run.tags.get(tags.TRIAL_STATE) == tags.TRIAL_STATE_PRUNED:
            reason = "pruned runs"
        elif run.status != "FINISHED":
            reason = f"{run.status.lower()} runs"
        else:
            kept.append(run)
            continue
        excluded[reason] = excluded.get(reason, 0) + 1
    return kept, excluded


def analyze_experiment(
    experiment: str,
    *,
    target: str,
    goal: str,
    tracking_uri: str | None = None,
    where: str | None = None,
    params: Sequence[str] | None = None,
    top: float | None = None,
    evaluator: ImportanceEvaluator | None = None,
    log: bool = False,
) -> ImportanceResult:
    """:func:`get_param_importances` over the finished training runs of ``experiment`` (a
    name or id) that match ``where`` (the ``lineage runs --where`` language).

    With ``log=True`` the analysis is recorded as a run in the same experiment, tagged
    ``lineage.run_type=analysis``: an importance bar chart with intervals and one scatter
    plot per parameter (PNG and interactive HTML), the target's distribution and the top
    runs (CSV and JSON), and each importance as a metric ``importance.<param>``. Its id is
    ``result.analysis_run_id``. This is what the tuner calls at the end of a campaign.

    On a campaign's runs (trials tagged ``tuner.campaign``) the default ``params`` are the
    campaign's tuned parameters, read from its campaign run's ``space.<name>`` params (so a
    trial's recorded lineage, ``optimizer.*`` or dataset sizes, does not compete with them);
    ``result.param_source`` says so. A tuned parameter that no analysed run has (a
    conditional one whose condition never held) is reported in ``result.never_active``, not
    refused; so is a name that other runs of the experiment have.

    Raises :class:`~lineage.NotFoundError` for an unknown experiment, target or parameter,
    :class:`~lineage.UsageError` for too few runs or a constant target (both exit 2), and
    :class:`~lineage.StoreError` when the store cannot be read.

    Args:
        experiment: the experiment's name or id.
        target: the metric to explain.
        goal: ``minimize`` or ``maximize``.
        tracking_uri: the store; None: ``MLFLOW_TRACKING_URI``, else ``sqlite:///mlflow.db``.
        where: a filter in the ``lineage runs --where`` language.
        params: the parameters to rank; None: the campaign's tuned ones, else every one that varies.
        top: analyse only this best fraction of runs.
        evaluator: the model that ranks; None: ``AutoImportance``.
        log: record the analysis and its figures as a run of the experiment.

    Returns:
        An :class:`ImportanceResult`.
    """
    from lineage.query import search_runs
    from lineage.store import open_store
    from lineage.uri import resolve_tracking_uri

    uri = resolve_tracking_uri(tracking_uri)
    store = open_store(uri)
    source = None
    known: set[str] = set()
    try:
        exp = store.resolve_experiments([experiment])[0]
        runs = search_runs(store, experiments=[exp.experiment_id], where=where)
        kept, excluded = training_runs(runs)
        spaces = _campaign_spaces(store, exp.experiment_id, runs, kept)
        tuned = list(dict.fromkeys(n for names in spaces.values() for n in names))
        known.update(tuned)
        if params is None and tuned:
            params = tuned
            which = ", ".join(sorted(spaces))
            source = f"the {len(tuned)} parameters tuned by campaign {which}"
        elif params:
            seen = {k for r in kept for k in r.params}
            if any(p not in seen and p not in known for p in params):
                # Only now read the whole experiment: which names does any run know?
                everything = search_runs(store, experiments=[exp.experiment_id])
                known.update(k for r in everything for k in r.params)
    finally:
        store.close()
    result = get_param_importances(
        kept,
        target=target,
        goal=goal,
        params=params,
        top=top,
        evaluator=evaluator,
        experiment=exp.name,
        known_params=known,
    )
    result.excluded = excluded
    result.param_source = source
    if log:
        from lineage.importance._logging import log_analysis

        result.analysis_run_id = log_analysis(
            result, tracking_uri=uri, experiment_id=exp.experiment_id
        )
    return result


def _campaign_spaces(
    store: Any, experiment_id: str, runs: Sequence[Any], kept: Sequence[Any]
) -> dict[str, list[str]]:
    """``{campaign: tuned parameter names}`` for the campaigns whose trials are in ``kept``."""
    wanted = {r.tags[CAMPAIGN_TAG] for r in kept if r.tags.get(CAMPAIGN_TAG)}
    if not wanted:
        return {}
    parents = [r for r in runs if r.tags.get(RUN_TYPE_TAG) == tags.RUN_TYPE_CAMPAIGN]
    if not wanted <= {r.tags.get(CAMPAIGN_TAG) for r in parents}:
        from lineage._errors import NotFoundError
        from lineage.query import search_runs

        # A --where that selected trials only: read their campaign runs on their own.
        try:
            parents = search_runs(
                store,
                experiments=[experiment_id],
                where=f"tags.`{RUN_TYPE_TAG}` = 'campaign'",
            )
        except NotFoundError:
            parents = []
    spaces: dict[str, list[str]] = {}
    for run in sorted(parents, key=lambda r: r.start_time or 0):
        name = run.tags.get(CAMPAIGN_TAG)
        if name in wanted:
            names = [k[len(SPACE_PREFIX) :] for k in run.params if k.startswith(SPACE_PREFIX)]
            if names:
                spaces.setdefault(name, [])
                spaces[name] += [n for n in names if n not in spaces[name]]
    return spaces
