"""Ranking the hyperparameters that vary over an experiment's runs, for `derive_campaign`:
lineage's importance analysis over every run, then over the runs near the best
(`NEAR_TOP`: what still matters once the dominant parameters are right)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tuner.history._derive_params import NEAR_TOP

if TYPE_CHECKING:
    from lineage.importance import ImportanceResult, ParamImportance
    from lineage.store import RunRecord

__all__ = ["Ranking", "rank_parameters"]


@dataclass
class Ranking:
    """What lineage's importance analysis said of the varying parameters."""

    #: Over every run; None when there are too few runs or the analysis failed.
    result: ImportanceResult | None
    #: Over the runs near the best (`NEAR_TOP`), by name; empty when not computed.
    near: dict[str, ParamImportance]
    #: The one line the campaign's comment shows.
    analysis: str

    @property
    def ranked(self) -> dict[str, ParamImportance]:
        return {p.name: p for p in self.result.params} if self.result else {}

    @property
    def significant(self) -> set[str]:
        return {n for n, p in self.ranked.items() if p.significant}

    @property
    def decided(self) -> bool:
        """Whether the analysis is confident enough to fix the negligible parameters."""
        return bool(self.significant)


def rank_parameters(
    rows: Sequence[RunRecord],
    varying: list[str],
    *,
    target: str,
    goal: str,
    experiment: str,
    method: str,
) -> Ranking:
    """Rank the ``varying`` parameters over every run, then over the runs near the best."""
    from lineage import LineageError
    from lineage.importance import MIN_RUNS, evaluator_for, get_param_importances

    result: ImportanceResult | None = None
    analysis = f"importance not ranked: {len(rows)} runs, it needs at least {MIN_RUNS}"
    if len(rows) >= MIN_RUNS:
        try:
            result = get_param_importances(
                rows,
                target=target,
                goal=goal,
                params=varying,
                experiment=experiment,
                evaluator=evaluator_for(method),
            )
        except LineageError as exc:  # a constant target, say: fall back to tuning all
            analysis = f"importance not ranked ({' '.join(str(exc).split())})"
    near: dict[str, ParamImportance] = {}
    if result is not None and len(rows) >= MIN_RUNS / NEAR_TOP:
        try:  # what still matters once the dominant parameters are right
            close = get_param_importances(
                rows,
                target=target,
                goal=goal,
                params=varying,
                top=NEAR_TOP,
                experiment=experiment,
                evaluator=evaluator_for(method),
            )
            near = {p.name: p for p in close.params}
        except LineageError:  # the best runs agree on the target: nothing to tell apart
            pass
    if result is not None:
        analysis = (
            f"lineage importance ({result.model}; {result.model_reason}) over "
            f"{result.n_runs} runs, * = significant: " + result.summary(k=8)
        )
        if not result.params or not any(p.significant for p in result.params):
            analysis += "; no parameter is significant, so every one is tuned"
    return Ranking(result, near, analysis)
