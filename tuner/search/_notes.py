"""What a campaign's stored study says about its search, for `tuner run`'s last lines,
`tuner status` and the campaign's MLflow run: the warm start's decision per source
(`tuner.search._transfer`) and the parameters whose best trials sit at a bound
(`tuner.search._bounds`). Each loads the study afresh; a note is never worth an error, so a
study that cannot be read gives none."""

from __future__ import annotations

from typing import Any

from tuner.search._bounds import at_bounds
from tuner.search._transfer import SourceTransfer, line, measure

__all__ = ["bound_notes", "stored_decisions", "transfer_notes"]


def _stored(config: Any) -> tuple[list[Any], list[Any]] | None:
    import optuna

    from tuner.search._study import create_rdb

    try:
        study = optuna.load_study(
            study_name=config.study_name, storage=create_rdb(config.optuna_storage_url())
        )
        return list(study.get_trials(deepcopy=False)), list(study.directions)
    except Exception:
        return None


def stored_decisions(config: Any) -> list[SourceTransfer]:
    """`measure` on the campaign's stored study under ``compare: auto`` (empty otherwise)."""
    section = getattr(config, "warm_start", None)
    if section is None or section.compare != "auto":
        return []
    stored = _stored(config)
    return measure(*stored) if stored is not None else []


def transfer_notes(config: Any) -> list[str]:
    """`line` per source for the campaign's stored study (see `stored_decisions`)."""
    return [line(d) for d in stored_decisions(config)]


def bound_notes(config: Any) -> list[str]:
    """`AtBound.line` for the campaign's stored study."""
    stored = _stored(config)
    if stored is None:
        return []
    return [f"at a bound: {hit.line()}" for hit in at_bounds(*stored)]
