"""What a campaign's stored study says about its search, for `tuner run`'s last lines,
`tuner status` and the campaign's MLflow run: the warm start's decision per source
(`tuner.search._transfer`), the parameters whose best trials sit at a bound
(`tuner.search._bounds`) and where each ``focus`` stands (`tuner.search._focus`). Each loads the study afresh; a note is never worth an error, so a
study that cannot be read gives none."""

from __future__ import annotations

from typing import Any

from tuner.search._bounds import at_bounds
from tuner.search._transfer import SourceTransfer, line, measure

__all__ = [
    "bound_notes",
    "bounds_of",
    "decisions_of",
    "focus_lines",
    "focus_notes_of",
    "stored_decisions",
    "transfer_notes",
]


def _stored(config: Any) -> tuple[list[Any], list[Any]] | None:
    import optuna

    from tuner.search._study import create_rdb

    try:
        storage = create_rdb(config.optuna_storage_url())
    except Exception:
        return None
    try:
        study = optuna.load_study(study_name=config.study_name, storage=storage)
        return list(study.get_trials(deepcopy=False)), list(study.directions)
    except Exception:
        return None
    finally:
        storage.engine.dispose()  # no database session outlives the note


def _auto(config: Any) -> bool:
    section = getattr(config, "warm_start", None)
    return section is not None and section.compare == "auto"


def decisions_of(config: Any, trials: Any, directions: Any) -> list[SourceTransfer]:
    """`measure` on ``trials`` under ``compare: auto`` (empty for any other campaign)."""
    return measure(trials, directions) if _auto(config) else []


def bounds_of(trials: Any, directions: Any) -> list[str]:
    """One ``at a bound: ...`` line per parameter whose best trials sit at a bound."""
    return [f"at a bound: {hit.line()}" for hit in at_bounds(trials, directions)]


def focus_notes_of(config: Any, trials: Any, directions: Any) -> list[str]:
    """One ``focus on ...`` line per parameter with a ``focus``: held, or widened and why."""
    from tuner.search._focus import focus_of, focus_state

    focus = focus_of(config.parameters)
    if not focus:
        return []
    return [s.line() for s in focus_state(trials, directions, focus).values()]


def stored_decisions(config: Any) -> list[SourceTransfer]:
    """`decisions_of` the campaign's stored study (empty when it cannot be read)."""
    if not _auto(config):
        return []
    stored = _stored(config)
    return decisions_of(config, *stored) if stored is not None else []


def transfer_notes(config: Any) -> list[str]:
    """`line` per source for the campaign's stored study (see `stored_decisions`)."""
    return [line(d) for d in stored_decisions(config)]


def focus_lines(config: Any) -> list[str]:
    """`focus_notes_of` the campaign's stored study (empty when it cannot be read)."""
    stored = _stored(config)
    return focus_notes_of(config, *stored) if stored is not None else []


def bound_notes(config: Any) -> list[str]:
    """`bounds_of` and `focus_notes_of` the campaign's stored study."""
    stored = _stored(config)
    if stored is None:
        return []
    return [*bounds_of(*stored), *focus_notes_of(config, *stored)]
