"""Values at a rung, and the sampler that fits them (the BOHB recipe).

A chain (a trial and the continuations that resume it) has one value at a rung: the first
step it reported at or past the rung, read from its newest trial that reached it. A scheduler
ranks chains by it (`rung_values`); `RungModel` hands the campaign's sampler the chains'
values at the highest rung that enough chains reached, as if they were finished trials, so
TPE is fitted on one fidelity at a time (Falkner et al. 2018) instead of on trials stopped
at different steps.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from tuner.search._attrs import IMPORTED_ATTR
from tuner.search._continuation import first_trial
from tuner.search._view import Narrow, StudyView, ViewSampler, hidden

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

__all__ = ["RungModel", "rung_points", "rung_values"]


def rung_points(
    trials: Iterable[FrozenTrial], rung: int, chains: set[int] | None = None
) -> dict[int, tuple[int, float]]:
    """``{chain: (trial number, value)}``: each chain's target value at ``rung`` and the
    newest trial it was read from; imported trials left out, and only the chains in
    ``chains`` when given."""
    found: dict[int, tuple[int, float]] = {}
    for t in trials:
        if IMPORTED_ATTR in t.system_attrs:
            continue
        chain = first_trial(t)
        if chains is not None and chain not in chains:
            continue
        steps = [s for s in t.intermediate_values if s >= rung]
        if not steps:
            continue
        value = t.intermediate_values[min(steps)]
        if math.isfinite(value) and (chain not in found or t.number > found[chain][0]):
            found[chain] = (t.number, value)
    return found


def rung_values(
    trials: Iterable[FrozenTrial], rung: int, chains: set[int] | None = None
) -> dict[int, float]:
    """``{chain: value}`` of `rung_points`."""
    return {chain: value for chain, (_, value) in rung_points(trials, rung, chains).items()}


def at_highest_rung(
    trials: list[FrozenTrial], levels: Sequence[int], points: int
) -> list[FrozenTrial]:
    """``trials`` as the sampler sees them under ``model: rung``: at the highest of ``levels``
    (steps) that at least ``points`` chains reached, the trial each chain's value there comes
    from, finished with that value; every other finished trial hidden. Running and waiting
    trials stay (a constant liar reads them). Below ``points`` anywhere: unchanged."""
    import optuna

    for level in sorted(levels, reverse=True):
        found = rung_points(trials, level)
        if len(found) >= points:
            break
    else:
        return trials
    values = {number: value for number, value in found.values()}
    live = (optuna.trial.TrialState.RUNNING, optuna.trial.TrialState.WAITING)
    out = []
    for t in trials:
        if t.number in values:
            seen = copy.copy(t)
            seen.state = optuna.trial.TrialState.COMPLETE
            seen.values = [values[t.number]]
            out.append(seen)
        else:
            out.append(t if t.state in live else hidden(t))
    return out


class RungModel(ViewSampler):
    """``sampler``, fitted on the chains' values at the highest of ``levels`` (rung steps and
    the last step) that ``points`` chains reached (`at_highest_rung`)."""

    def __init__(self, sampler: optuna.samplers.BaseSampler, levels: Sequence[int], points: int):
        super().__init__(sampler)
        self.levels, self.points = tuple(levels), points

    def __str__(self) -> str:
        return f"{self.sampler} (fitted at the highest rung with {self.points} values)"

    def plan(self, study: optuna.Study, trial: FrozenTrial) -> tuple[Any, Narrow | None]:
        return StudyView(study, lambda ts: at_highest_rung(ts, self.levels, self.points)), None
