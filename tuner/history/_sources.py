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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lineage.store import RunRecord, RunStore
    from tuner.config import CampaignConfig, WarmStartSource

__all__ = ["SourceRuns", "read_source", "source_uri"]

_NOT_TRIALS = ("campaign", "analysis", "reserved")  # lineage.run_type values of bookkeeping runs


@dataclass
class SourceRuns:
    """The runs one source selected, and where they were read."""

    index: int
    source: WarmStartSource
    #: The store's URI, its password masked (for messages and the imported trials' marks).
    uri: str
    runs: list[RunRecord]


def source_uri(config: CampaignConfig, source: WarmStartSource) -> str:
    """The tracking URI a source reads: its own (relative SQLite paths against the config
    file's directory) or the campaign's."""
    if source.tracking_uri:
        from tuner.config import absolute_uri

        return absolute_uri(source.tracking_uri, config.base_dir)
    return config.tracking_uri()


def read_source(config: CampaignConfig, index: int, source: WarmStartSource) -> SourceRuns:
    """The runs ``source`` (``warm_start.from[index]``) selects; `ConfigError` (exit 2) when
    it cannot be read or names something its store does not hold. It takes the whole config
    for the campaign's tracking URI, base directory, name and target metric, and for
    `tuner.config.CampaignConfig.error`, which phrases the one-line error at the source's key."""
    from lineage import LineageError
    from lineage.masking import mask_uri
    from lineage.store import open_store

    uri = source_uri(config, source)
    shown = mask_uri(uri)
    at = ("warm_start", "from", index)
    where_key = (*at, "tracking_uri") if source.tracking_uri else at
    try:
        store = open_store(uri)
    except LineageError as exc:
        raise config.error(where_key, f"cannot be read from {shown} ({_first_line(exc)})") from None
    try:
        with store:
            if source.experiment is not None:
                runs = _experiment_runs(config, store, source, at, shown)
            else:
                runs = _campaign_runs(config, store, source, at, shown)
            runs = [r for r in runs if r.tags.get(_CAMPAIGN) != config.name]
            _check_mapped(config, source, at, runs)
    except LineageError as exc:
        raise config.error(where_key, f"cannot be read from {shown} ({_first_line(exc)})") from None
    return SourceRuns(index, source, shown, runs)


_CAMPAIGN = "tuner.campaign"
_RUN_TYPE = "lineage.run_type"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return " ".join(text[0].split()) if text else type(exc).__name__


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _experiment_runs(
    config: CampaignConfig, store: RunStore, source: WarmStartSource, at: tuple[Any, ...], uri: str
) -> list[RunRecord]:
    from lineage import NotFoundError
    from lineage.query import search_runs

    name = str(source.experiment)
    known = store.experiments()
    if not any(e.name == name or e.experiment_id == name for e in known):
        names = sorted(e.name for e in known)
        from tuner.config import suggest

        hint = suggest(name, names) or f" (known: {', '.join(names[:20]) or 'none'})"
        raise config.error((*at, "experiment"), f"names no experiment in {uri}{hint}", name)
    try:
        runs = search_runs(store, experiments=[name], where=source.where)
    except NotFoundError as exc:  # a key in `where` that no run has
        raise config.error((*at, "where"), _first_line(exc), source.where) from None
    return [r for r in runs if r.tags.get(_RUN_TYPE) not in _NOT_TRIALS]


def _campaign_runs(
    config: CampaignConfig, store: RunStore, source: WarmStartSource, at: tuple[Any, ...], uri: str
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
        raise config.error((*at, "campaign"), f"names no campaign in {uri}{hint}", name)
    experiments = sorted({r.experiment_id for r in mine})
    where = f"tags.`{_CAMPAIGN}` = {_quote(name)} and tags.`{_RUN_TYPE}` = 'trial'"
    if source.where:
        where += f" and ({source.where})"
    try:
        return search_runs(store, experiments=experiments, where=where)
    except NotFoundError as exc:
        raise config.error((*at, "where"), _first_line(exc), source.where) from None


def _check_mapped(
    config: CampaignConfig,
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
        mapped_targets = {config.target.metric: source.target}
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
            raise config.error(
                path,
                f"names {noun} {recorded!r}, which no selected run of {source.label} recorded"
                + _hint(recorded, seen, noun),
            )


def _hint(name: str, known: Iterable[str], noun: str) -> str:
    from tuner.config import suggest

    names = sorted(known)
    return suggest(name, names) or f" (recorded {noun}s: {', '.join(names[:15]) or 'none'})"
