"""What a campaign's stored study says about its search, for `tuner run`'s last lines,
`tuner status` and the campaign's MLflow run: the warm start's decision per source
(`tuner.search._transfer`), the parameters whose best trials sit at a bound
(`tuner.search._bounds`) and where each ``focus`` stands (`tuner.search._focus`).

The ``*_of`` functions read trials the caller holds; the others load the stored study of a
`tuner.search.StudyPlan` afresh. A note is never worth an error, so a study that cannot be
read gives none (and a warning on the log naming why)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tuner.search._bounds import at_bounds
from tuner.search._transfer import SourceTransfer, line, measure

if TYPE_CHECKING:
    from tuner.search._shapes import ParameterShape as Parameter
    from tuner.search._shapes import WarmStartShape as WarmStartConfig
    from tuner.search._study import StudyPlan

_log = logging.getLogger(__name__)

__all__ = [
    "bound_notes",
    "bounds_of",
    "decisions_of",
    "focus_lines",
    "focus_notes_of",
    "stored_decisions",
    "transfer_notes",
]


def _stored(plan: StudyPlan) -> tuple[list[Any], list[Any]] | None:
    import optuna

    from tuner.search._study import create_rdb

    try:
        storage = create_rdb(plan.storage_url)
    except Exception as exc:  # a note is never worth an error: said on the log, not raised
        _log.warning("search notes not read: study storage: %s: %s", type(exc).__name__, exc)
        return None
    try:
        study = optuna.load_study(study_name=plan.name, storage=storage)
        return list(study.get_trials(deepcopy=False)), list(study.directions)
    except Exception as exc:  # as above
        _log.warning("search notes not read: study %s: %s: %s", plan.name, type(exc).__name__, exc)
        return None
    finally:
        storage.engine.dispose()  # no database session outlives the note


def _auto(section: WarmStartConfig | None) -> bool:
    return section is not None and section.compare == "auto"


def decisions_of(
    warm_start: WarmStartConfig | None, trials: Any, directions: Any
) -> list[SourceTransfer]:
    """`measure` on ``trials`` under ``compare: auto`` (the ``warm_start:`` section; empty
    for any other campaign)."""
    return measure(trials, directions) if _auto(warm_start) else []


def bounds_of(trials: Any, directions: Any) -> list[str]:
    """One ``at a bound: ...`` line per parameter whose best trials sit at a bound."""
    return [f"at a bound: {hit.line()}" for hit in at_bounds(trials, directions)]


def focus_notes_of(parameters: Mapping[str, Parameter], trials: Any, directions: Any) -> list[str]:
    """One ``focus on ...`` line per parameter (``parameters:``) with a ``focus``: held, or
    widened and why."""
    from tuner.search._focus import focus_of, focus_state

    focus = focus_of(parameters)
    if not focus:
        return []
    return [s.line() for s in focus_state(trials, directions, focus).values()]


def stored_decisions(plan: StudyPlan) -> list[SourceTransfer]:
    """`decisions_of` the campaign's stored study (empty when it cannot be read)."""
    warm_start = plan.sampler.warm_start
    if not _auto(warm_start):
        return []
    stored = _stored(plan)
    return decisions_of(warm_start, *stored) if stored is not None else []


def transfer_notes(plan: StudyPlan) -> list[str]:
    """`line` per source for the campaign's stored study (see `stored_decisions`)."""
    return [line(d) for d in stored_decisions(plan)]


def focus_lines(plan: StudyPlan) -> list[str]:
    """`focus_notes_of` the campaign's stored study (empty when it cannot be read)."""
    stored = _stored(plan)
    return focus_notes_of(plan.sampler.parameters, *stored) if stored is not None else []


def bound_notes(plan: StudyPlan) -> list[str]:
    """`bounds_of` and `focus_notes_of` the campaign's stored study."""
    stored = _stored(plan)
    if stored is None:
        return []
    return [*bounds_of(*stored), *focus_notes_of(plan.sampler.parameters, *stored)]
