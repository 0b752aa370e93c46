"""``warm_start.compare: rank``: warm-started samplers compare imported and new trials by rank.

Imported runs come from a related task: fewer epochs, another data subsample, a smaller
model, an older version of the code. Their metric sits at another level. When the old task
scored better (an RMSE of 52 against the new task's 54), a sampler that ranks raw values
across both sets has a best group of imported trials only, for the whole campaign: it keeps
proposing around the old optimum and never refines the new one. (When the old task scored
worse, the campaign's trials lead at once and raw values work; that is the common case, so
``compare: value`` is the default and this module is opt-in.)

`RankedWarmStart` wraps the campaign's sampler. Before the sampler reads the trials, each
objective of every COMPLETE trial is replaced by its normal score within its own group (the
imported runs of one source, or the campaign's own trials): ``Phi^-1((rank + 0.5) / n)``, the
Gaussian-copula transform of Salinas, Shen and Perrone, "A quantile-based approach for
hyperparameter transfer learning" (ICML 2020). The best tenth of each group then counts as the
best tenth, whatever its level. This is done for an objective only while an imported run
holds a better value than the campaign's best so far: once the campaign's own best beats
every imported value, raw values let its trials lead and the imported runs still tell the
sampler where results were poor, and ranking would only promote old configurations the new
task has already outdone (measured: `benchmarks/bench_outcome.py`, the docs' benchmarks
page). Only the sampler's view changes: the study, ``tuner status``, the report and MLflow
keep every recorded value. Until the campaign has a finished trial of its own, the sampler
sees the imported values as they are.

Imports Optuna: `tuner.search._registry.make_sampler` imports this module only when it wraps.
The sampler reads the study through `tuner.search._view.StudyView`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

from tuner.search._attrs import IMPORTED_ATTR, IMPORTED_FROM_ATTR
from tuner.search._internals import sampler_trials
from tuner.search._view import Narrow, StudyView, ViewSampler

if TYPE_CHECKING:
    import optuna
    from optuna.distributions import BaseDistribution
    from optuna.study import StudyDirection
    from optuna.trial import FrozenTrial

__all__ = ["RankedWarmStart", "ranked_view"]


def _group(trial: FrozenTrial) -> str | None:
    """``None`` for the campaign's own trials; the source of an imported one."""
    if IMPORTED_ATTR not in trial.system_attrs:
        return None
    mark = trial.user_attrs.get(IMPORTED_FROM_ATTR)
    if isinstance(mark, dict):
        return f"{mark.get('tracking_uri')}\n{mark.get('source')}"
    return ""


def ranked_view(
    trials: Sequence[FrozenTrial], directions: Sequence[StudyDirection]
) -> list[FrozenTrial]:
    """``trials`` with each objective of every COMPLETE trial replaced by its normal score
    within its group, for the objectives on which an imported group holds a better value
    than the campaign's best so far. Unchanged (the same objects) otherwise: when there are
    not both imported and own finished trials, or when the campaign's own best already beats
    every imported value (then raw values let its trials lead, and the imported runs still
    tell the sampler where results were poor)."""
    from optuna.study import StudyDirection
    from optuna.trial import TrialState

    groups: dict[str | None, list[FrozenTrial]] = {}
    for t in trials:
        if t.state == TrialState.COMPLETE and t.values is not None:
            groups.setdefault(_group(t), []).append(t)
    if None not in groups or len(groups) < 2:
        return list(trials)
    signs = [-1.0 if d == StudyDirection.MAXIMIZE else 1.0 for d in directions]
    own_best = [min(sign * t.values[k] for t in groups[None]) for k, sign in enumerate(signs)]
    ranked = [
        k
        for k, sign in enumerate(signs)
        if any(
            sign * t.values[k] < own_best[k]
            for group, members in groups.items()
            if group is not None
            for t in members
        )
    ]
    if not ranked:
        return list(trials)
    normal = NormalDist()
    scores: dict[int, list[float]] = {}
    for members in groups.values():
        n = len(members)
        for k in ranked:
            # Ties get the mean of their ranks, so equal values stay equal.
            ordered = sorted(members, key=lambda t: signs[k] * t.values[k])
            i = 0
            while i < n:
                j = i
                while j + 1 < n and ordered[j + 1].values[k] == ordered[i].values[k]:
                    j += 1
                z = signs[k] * normal.inv_cdf(((i + j) / 2 + 0.5) / n)
                for t in ordered[i : j + 1]:
                    scores.setdefault(t.number, list(t.values))[k] = z
                i = j + 1
    out = []
    for t in trials:
        if t.number in scores:
            t = copy.copy(t)
            t.values = scores[t.number]
        out.append(t)
    return out


_View = Callable[..., list["FrozenTrial"]]
_Apart = Callable[[Sequence["FrozenTrial"], Sequence["StudyDirection"]], set[str]]


class RankedWarmStart(ViewSampler):
    """``sampler``, reading a warm-started study through ``view`` (`ranked_view`, or
    `tuner.search._transfer.transfer_view` for ``compare: auto``). With ``apart``
    (`tuner.search._transfer.apart`: the parameters some shown source says nothing of),
    those parameters are sampled apart from the others, reading the study through
    ``view(trials, directions, names)``, which leaves such sources out."""

    def __init__(
        self,
        sampler: optuna.samplers.BaseSampler,
        view: _View = ranked_view,
        how: str = "rank",
        *,
        apart: _Apart | None = None,
    ) -> None:
        super().__init__(sampler)
        self.view = view
        self.how = how
        self.apart = apart

    def __str__(self) -> str:
        return f"{type(self.sampler).__name__} (warm start compared by {self.how})"

    def plan(self, study: optuna.Study, trial: FrozenTrial) -> tuple[Any, Narrow | None]:
        directions = study.directions
        return StudyView(study, lambda trials: self.view(trials, directions)), None

    def _apart(self, study: optuna.Study, names: Iterable[str]) -> set[str]:
        if self.apart is None:
            return set()
        return self.apart(sampler_trials(study, False, None, True), study.directions) & set(names)

    def sample_relative(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        search_space: dict[str, BaseDistribution],
    ) -> dict[str, Any]:
        apart = self._apart(study, search_space)
        if not apart:
            return super().sample_relative(study, trial, search_space)
        directions = study.directions
        together = {n: d for n, d in search_space.items() if n not in apart}
        out: dict[str, Any] = {}
        if together:
            whole: Any = StudyView(study, lambda trials: self.view(trials, directions))
            out = self.sampler.sample_relative(whole, trial, together)
        alone = {n: d for n, d in search_space.items() if n in apart}
        view: Any = StudyView(study, lambda trials: self.view(trials, directions, apart))
        return {**out, **self.sampler.sample_relative(view, trial, alone)}

    def sample_independent(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        apart = self._apart(study, [param_name])
        if not apart:
            return super().sample_independent(study, trial, param_name, param_distribution)
        directions = study.directions
        view: Any = StudyView(study, lambda trials: self.view(trials, directions, apart))
        return self.sampler.sample_independent(view, trial, param_name, param_distribution)
