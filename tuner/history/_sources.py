"""Reading the runs of one ``warm_start.from`` entry, through lineage's public store API.

An ``experiment:`` source is every run of that MLflow experiment (a run recorded by
``LineageCallback``, ``lineage.start_run`` or plain ``mlflow``, or a trial of any campaign
recorded there) except the bookkeeping runs of a campaign (its parent run, reserved runs) and
importance analyses. A ``campaign:`` source is the trial runs of that campaign, in whatever
experiment it recorded them. Neither ever holds the importing campaign's own trials.

Whatever stops a source from being read is one :class:`~tuner.ConfigError` line naming the
config key: an unknown experiment or campaign, a store that cannot be opened, a ``where``
naming a key no run has, a ``params:``/``target:`` mapping to a name no run recorded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lineage import tags

if TYPE_CHECKING:
    from lineage.store import RunRecord, RunStore
    from tuner._errors import ErrorAt
    from tuner.config import CampaignConfig, Parameter, WarmStartConfig, WarmStartSource

__all__ = ["HistoryContext", "SourceRuns", "read_source", "source_uri"]

_NOT_TRIALS = ("campaign", "analysis", "reserved")  # lineage.run_type values of bookkeeping runs


@dataclass(frozen=True)
class HistoryContext:
    """What reading a campaign's history reads of its config: the ``warm_start:`` section
    and the campaign it imports into (its name, store, space, objectives and budget)."""

    #: The ``warm_start:`` section (None: the campaign does not warm-start).
    warm_start: WarmStartConfig | None
    #: The campaign's ``name``: its own trial runs are never imported.
    campaign: str
    #: The campaign's lineage store, read by a source that names none.
    tracking_uri: str
    #: The folder a source's relative SQLite path resolves against (the config file's).
    base_dir: Path
    #: The new search space (``parameters:``): imported runs are trials of it.
    parameters: Mapping[str, Parameter]
    #: The objectives' metrics (``target`` first) and Optuna directions, one each.
    metric_names: Sequence[str]
    directions: Sequence[str]
    #: ``budget.trials`` (None: no trial limit): ``enqueue_best`` never enqueues more.
    budget: int | None
    #: Phrases the one-line error at a source's key (`tuner.config.CampaignConfig.error`).
    error: ErrorAt

    @classmethod
    def of(cls, config: CampaignConfig) -> HistoryContext:
        """The context of ``config``'s campaign. It takes the whole config because this is
        where what a warm start reads is cut out of it; nothing past it does."""
        return cls(
            warm_start=config.warm_start,
            campaign=config.name,
            tracking_uri=config.tracking_uri(),
            base_dir=config.base_dir,
            parameters=config.parameters,
            metric_names=config.metric_names,
            directions=config.directions,
            budget=config.trial_limit,
            error=config.error,
        )


@dataclass
class SourceRuns:
    """The runs one source selected, and where they were read."""

    index: int
    source: WarmStartSource
    #: The store's URI, its password masked (for messages and the imported trials' marks).
    uri: str
    runs: list[RunRecord]


def source_uri(context: HistoryContext, source: WarmStartSource) -> str:
    """The tracking URI a source reads: its own (relative SQLite paths against the config
    file's directory) or the campaign's."""
    if source.tracking_uri:
        from tuner.config import absolute_uri

        return absolute_uri(source.tracking_uri, context.base_dir)
    return context.tracking_uri


def read_source(context: HistoryContext, index: int, source: WarmStartSource) -> SourceRuns:
    """The runs ``source`` (``warm_start.from[index]``) selects; `ConfigError` (exit 2), at
    the source's key, when it cannot be read or names something its store does not hold."""
    from lineage import LineageError
    from lineage.masking import mask_uri
    from lineage.store import open_store

    uri = source_uri(context, source)
    shown = mask_uri(uri)
    at = ("warm_start", "from", index)
    where_key = (*at, "tracking_uri") if source.tracking_uri else at
    try:
        store = open_store(uri)
    except LineageError as exc:
        raise context.error(
            where_key, f"cannot be read from {shown} ({_first_line(exc)})"
        ) from None
    try:
        with store:
            if source.experiment is not None:
                runs = _experiment_runs(context, store, source, at, shown)
            else:
                runs = _campaign_runs(context, store, source, at, shown)
            runs = [r for r in runs if r.tags.get(_CAMPAIGN) != context.campaign]
            _check_mapped(context, source, at, runs)
    except LineageError as exc:
        raise context.error(
            where_key, f"cannot be read from {shown} ({_first_line(exc)})"
        ) from None
    return SourceRuns(index, source, shown, runs)


_CAMPAIGN = tags.CAMPAIGN
_RUN_TYPE = tags.RUN_TYPE


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return " ".join(text[0].split()) if text else type(exc).__name__


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _experiment_runs(
    context: HistoryContext,
    store: RunStore,
    source: WarmStartSource,
    at: tuple[Any, ...],
    uri: str,
) -> list[RunRecord]:
    from lineage import NotFoundError
    from lineage.query import search_runs

    name = str(source.experiment)
    known = store.experiments()
    if not any(e.name == name or e.experiment_id == name for e in known):
        names = sorted(e.name for e in known)
        from tuner.config import suggest

        hint = suggest(name, names) or f" (known: {', '.join(names[:20]) or 'none'})"
        raise context.error((*at, "experiment"), f"names no experiment in {uri}{hint}", name)
    try:
        runs = search_runs(store, experiments=[name], where=source.where)
    except NotFoundError as exc:  # a key in `where` that no run has
        raise context.error((*at, "where"), _first_line(exc), source.where) from None
    return [r for r in runs if r.tags.get(_RUN_TYPE) not in _NOT_TRIALS]


def _campaign_runs(
    context: HistoryContext,
    store: RunStore,
    source: WarmStartSource,
    at: tuple[Any, ...],
    uri: str,
) -> list[RunRecord]:
    from lineage import NotFoundError
    from lineage.query import search_runs

    name = str(source.campaign)
    parents = search_runs(store, where=f"tags.`{_RUN_TYPE}` = 'campaign'")
    mine = [r for r in parents if r.tags.get(_CAMPAIGN) == name]
    if not mine:
        names = sorted({str(r.tags.get(_CAMPAIGN)) for r in parents if r.tags.get(_CAMPAIGN)})
        from tuner.config import suggest

        hint = suggest(name, names) or f" (known: {', '.join(names[:20]) or 'none'})"
        raise context.error((*at, "campaign"), f"names no campaign in {uri}{hint}", name)
    experiments = sorted({r.experiment_id for r in mine})
    where = f"tags.`{_CAMPAIGN}` = {_quote(name)} and tags.`{_RUN_TYPE}` = 'trial'"
    if source.where:
        where += f" and ({source.where})"
    try:
        return search_runs(store, experiments=experiments, where=where)
    except NotFoundError as exc:
        raise context.error((*at, "where"), _first_line(exc), source.where) from None


def _check_mapped(
    context: HistoryContext,
    source: WarmStartSource,
    at: tuple[Any, ...],
    runs: Sequence[RunRecord],
) -> None:
    """A name written in ``params:`` or ``target:`` must be one some selected run recorded
    (a typo would otherwise skip every run as "missing")."""
    if not runs:
        return
    mapped_targets: dict[str, str] = {}
    if isinstance(source.target, dict):
        mapped_targets = dict(source.target)
    elif source.target is not None:
        mapped_targets = {context.metric_names[0]: source.target}
    for kind, mapping, noun in (
        ("params", source.params, "param"),
        ("metrics", mapped_targets, "metric"),
    ):
        if not mapping:
            continue
        seen: set[str] = set()
        for run in runs:
            seen.update(getattr(run, kind))
        for name, recorded in mapping.items():
            if recorded in seen:
                continue
            key = "params" if kind == "params" else "target"
            path = (
                (*at, key, name)
                if kind == "params" or isinstance(source.target, dict)
                else (*at, key)
            )
            raise context.error(
                path,
                f"names {noun} {recorded!r}, which no selected run of {source.label} recorded"
                + _hint(recorded, seen, noun),
            )


def _hint(name: str, known: Iterable[str], noun: str) -> str:
    from tuner.config import suggest

    names = sorted(known)
    return suggest(name, names) or f" (recorded {noun}s: {', '.join(names[:15]) or 'none'})"
