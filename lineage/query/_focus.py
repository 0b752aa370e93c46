"""What an experiment optimises, whichever of its runs a query selects.

A tuning campaign records its target (``metric:goal``, several for several objectives) and
its tuned parameters on its experiment (``lineage.tags.EXPERIMENT_TARGET`` and
``EXPERIMENT_TUNED``). Experiments recorded before those tags existed are read from their
campaign run, found among all the experiment's runs, not only the selected ones. The
campaign and importance-analysis runs are kept (``records``): the run table ranks the tuned
parameters by the newest analysis even when a filter left it out.
"""

from __future__ import annotations

from collections.abc import Sequence

from lineage import tags as T
from lineage._values import Value
from lineage.store import RunRecord, RunStore

#: Goals as a campaign spells them (``minimize``) or short (``min``), to ``min``/``max``.
_GOALS = {"min": "min", "minimize": "min", "max": "max", "maximize": "max"}


class Focus(Value):
    """``targets``: ``(metric, goal)`` pairs, goal ``min`` or ``max``, the first the main
    target; ``tuned``: the tuned parameters' names; ``records``: the campaign and analysis
    runs of the experiments."""

    _fields = ("targets", "tuned", "records")
    __slots__ = _fields
    __hash__ = None  # type: ignore[assignment]

    def __init__(
        self,
        targets: list[tuple[str, str]] | None = None,
        tuned: list[str] | None = None,
        records: list[RunRecord] | None = None,
    ) -> None:
        self.targets: list[tuple[str, str]] = targets or []
        self.tuned: list[str] = tuned or []
        self.records: list[RunRecord] = records or []

    @property
    def metrics(self) -> list[str]:
        return [m for m, _ in self.targets]

    def goal(self, metric: str) -> str | None:
        """``min`` or ``max`` where ``metric`` is a target, else None."""
        return next((g for m, g in self.targets if m == metric), None)


def importance_ranking(
    runs: Sequence[RunRecord], targets: Sequence[str] = (), *, fitted_only: bool = True
) -> dict[str, float]:
    """``{param: importance}``, most important first, of the newest importance analysis
    among ``runs`` (of one of ``targets`` where given); empty without one, and with
    ``fitted_only`` where its model predicted held-out runs no better than their mean
    (``r2.<model>`` <= 0: such a ranking orders nothing a table should follow; a report's
    figures follow it as the campaign's own report does)."""
    import math

    analyses = [
        r
        for r in runs
        if r.tags.get(T.RUN_TYPE) == T.RUN_TYPE_ANALYSIS
        and r.tags.get("lineage.analysis.kind") == "importance"
        and (not targets or r.tags.get("lineage.analysis.target") in targets)
    ]
    if not analyses:
        return {}
    newest = max(analyses, key=lambda r: r.start_time or 0)
    model = newest.tags.get("lineage.analysis.model", "").replace(" ", "_")
    r2 = newest.metrics.get(f"r2.{model}")
    if fitted_only and r2 is not None and not r2 > 0:
        return {}
    prefix = "importance."
    found = {
        k[len(prefix) :]: v
        for k, v in newest.metrics.items()
        if k.startswith(prefix) and math.isfinite(v)
    }
    return dict(sorted(found.items(), key=lambda kv: -kv[1]))


def parse_targets(text: str) -> list[tuple[str, str]]:
    """``"acc:maximize,loss:min"`` -> ``[("acc", "max"), ("loss", "min")]``; a pair
    without a known goal is skipped."""
    out: list[tuple[str, str]] = []
    for pair in text.split(","):
        metric, _, goal = pair.strip().rpartition(":")
        short = _GOALS.get(goal.strip().lower())
        if metric.strip() and short and (metric.strip(), short) not in out:
            out.append((metric.strip(), short))
    return out


def focus_of(runs: Sequence[RunRecord]) -> Focus:
    """The targets and tuned parameters the campaign runs among ``runs`` name (their
    ``target``, ``objectives`` and ``space.*`` params), oldest campaign first."""
    targets: list[tuple[str, str]] = []
    tuned: list[str] = []
    records = [
        r for r in runs if r.tags.get(T.RUN_TYPE) in (T.RUN_TYPE_CAMPAIGN, T.RUN_TYPE_ANALYSIS)
    ]
    for run in sorted(records, key=lambda r: r.start_time or 0):
        if run.tags.get(T.RUN_TYPE) != T.RUN_TYPE_CAMPAIGN:
            continue
        for key in sorted(run.params):
            if key.startswith(T.CAMPAIGN_SPACE_PREFIX):
                name = key[len(T.CAMPAIGN_SPACE_PREFIX) :]
                if name not in tuned:
                    tuned.append(name)
        named = run.params.get(T.CAMPAIGN_OBJECTIVES) or run.params.get(T.CAMPAIGN_TARGET, "")
        targets += [t for t in parse_targets(named) if t not in targets]
    return Focus(targets, tuned, records)


def experiment_focus(store: RunStore, experiment_ids: Sequence[str]) -> Focus:
    """The focus of the experiments ``experiment_ids``: their tags where a campaign wrote
    them, else their campaign runs; the campaign and analysis runs either way."""
    from lineage.query._pushdown import to_prefilter
    from lineage.query._where import parse_where

    ids = list(dict.fromkeys(experiment_ids))
    if not ids:
        return Focus()
    kinds = f"'{T.RUN_TYPE_CAMPAIGN}', '{T.RUN_TYPE_ANALYSIS}'"
    prefilter = to_prefilter(parse_where(f"tags.`{T.RUN_TYPE}` in ({kinds})"))
    records = [
        r
        for r in store.candidates(ids, prefilter)
        if r.tags.get(T.RUN_TYPE) in (T.RUN_TYPE_CAMPAIGN, T.RUN_TYPE_ANALYSIS)
    ]
    found = focus_of(records)
    targets: list[tuple[str, str]] = []
    tuned: list[str] = []
    for eid in ids:
        tags = store.experiment_tags(eid)
        targets += [t for t in parse_targets(tags.get(T.EXPERIMENT_TARGET, "")) if t not in targets]
        names = [n.strip() for n in tags.get(T.EXPERIMENT_TUNED, "").split(",") if n.strip()]
        tuned += [n for n in names if n not in tuned]
    targets += [t for t in found.targets if t not in targets]
    tuned += [n for n in found.tuned if n not in tuned]
    return Focus(targets, tuned, records)


def ui_links(store: RunStore, base: str, experiment_id: str) -> list[tuple[str, str]]:
    """The MLflow UI addresses to print for an experiment, as ``(label, url)``: its runs
    (``trials`` when a campaign recorded its trials view: the trials best first, target
    and tuned parameters as columns; else ``runs``), and with trials, ``compare``: MLflow's
    parallel coordinates, scatter and contour plots of them (``lineage.uri``)."""
    from lineage.query._pushdown import to_prefilter
    from lineage.query._where import parse_where
    from lineage.uri import TRIALS_VIEW, compare_link, trials_link, ui_link

    tags = store.experiment_tags(experiment_id)
    if T.MLFLOW_SHARED_VIEW_PREFIX + TRIALS_VIEW not in tags:
        return [("runs", ui_link(base, experiment_id=experiment_id))]
    links = [("trials", trials_link(base, experiment_id, tags))]
    prefilter = to_prefilter(parse_where(f"tags.`{T.RUN_TYPE}` = '{T.RUN_TYPE_TRIAL}'"))
    trials = [
        r.run_id
        for r in store.candidates([experiment_id], prefilter)
        if r.tags.get(T.RUN_TYPE) == T.RUN_TYPE_TRIAL
    ]
    if trials:
        links.append(("compare", compare_link(base, experiment_id, trials[::-1])))
    return links
