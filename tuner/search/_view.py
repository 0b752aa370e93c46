"""What a wrapped sampler sees of the study: one study view and one delegating sampler.

The warm start's samplers (``compare: rank`` and ``auto``, `tuner.search._ranked` and
`tuner.search._transfer`), a parameter's ``focus`` (`tuner.search._focus`) and a warm start's
exploring trials (`PriorFree`) change only what the campaign's sampler reads: some trials
hidden, some values replaced by scores. `StudyView` is the study read through such a change;
`ViewSampler` is a sampler that hands the wrapped sampler a view (and, per trial, narrower
distributions) and passes every other call through unchanged.

The view answers Optuna's private ``Study._get_trials`` (the call every built-in sampler reads
trials through), reading through `tuner.search._internals.sampler_trials`, and the public
``get_trials``; every other attribute is the study's own.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from optuna.samplers import BaseSampler

from tuner.search._attrs import ENQUEUED_FROM_ATTR, EXPLORING_ATTR, IMPORTED_ATTR, STEERED_ATTR
from tuner.search._internals import sampler_trials

if TYPE_CHECKING:
    import optuna
    from optuna.distributions import BaseDistribution
    from optuna.trial import FrozenTrial, TrialState

__all__ = [
    "EXPLORE_EVERY",
    "PriorFree",
    "StudyView",
    "ViewSampler",
    "cold_only",
    "exploring",
    "hidden",
    "in_states",
]

#: One trial in this many is an exploring trial (trial numbers ``k * EXPLORE_EVERY - 1``).
EXPLORE_EVERY = 5

#: A change of what a sampler reads: the trials (one per number, in order) as it sees them.
Transform = Callable[[list["FrozenTrial"]], list["FrozenTrial"]]
#: A trial's distributions as the sampler samples them (a focus narrows some).
Narrow = Callable[[str, "BaseDistribution"], "BaseDistribution"]


def exploring(trial: FrozenTrial) -> bool:
    """Whether ``trial`` is one of the exploring trials, by its number (so every controller
    and worker of a shared study agrees)."""
    return (trial.number + 1) % EXPLORE_EVERY == 0


def hidden(trial: FrozenTrial) -> FrozenTrial:
    """``trial`` as a view hides it from a sampler: a FAIL copy without values. Hidden rather
    than left out, so the view keeps one trial per number (NSGA-II finds trials by number)."""
    from optuna.trial import TrialState

    out = copy.copy(trial)
    out.state = TrialState.FAIL
    out.values = None
    return out


def in_states(trials: list[FrozenTrial], states: Sequence[TrialState] | None) -> list[FrozenTrial]:
    """``trials`` in ``states`` (all when ``None``): a hidden trial is no longer COMPLETE."""
    return trials if states is None else [t for t in trials if t.state in states]


def cold_only(trials: list[FrozenTrial]) -> list[FrozenTrial]:
    """``trials`` as a cold campaign would have them: every imported run, every re-run of
    one (`ENQUEUED_FROM_ATTR`) and every trial proposed while earlier runs steered the sampler
    (`STEERED_ATTR`) hidden."""
    return [hidden(t) if _from_earlier_runs(t) else t for t in trials]


def _from_earlier_runs(trial: FrozenTrial) -> bool:
    return (
        IMPORTED_ATTR in trial.system_attrs
        or STEERED_ATTR in trial.system_attrs
        or ENQUEUED_FROM_ATTR in trial.user_attrs
    )


class StudyView:
    """``study`` as a sampler sees it: its trials read through ``transform``."""

    def __init__(self, study: optuna.Study | StudyView, transform: Transform) -> None:
        self._study = study
        self._transform = transform

    def __getattr__(self, name: str) -> Any:
        return getattr(self._study, name)

    def _get_trials(
        self,
        deepcopy: bool = True,
        states: Sequence[TrialState] | None = None,
        use_cache: bool = False,
    ) -> list[FrozenTrial]:
        # Every trial is read, then filtered: a hidden trial is no longer in the state asked.
        trials = sampler_trials(self._study, deepcopy, None, use_cache)  # type: ignore[arg-type]
        return in_states(self._transform(trials), states)

    def get_trials(
        self, deepcopy: bool = True, states: Sequence[TrialState] | None = None
    ) -> list[FrozenTrial]:
        trials = self._study.get_trials(deepcopy=deepcopy, states=None)
        return in_states(self._transform(trials), states)


class ViewSampler(BaseSampler):
    """``sampler``, reading the study through the view `plan` gives for each trial, and
    sampling each parameter over the distribution it gives. Subclasses fill in `plan`; the
    calls that do not read trials (``before_trial``, ``after_trial``, ``reseed_rng``) go to
    ``sampler`` unchanged."""

    def __init__(self, sampler: optuna.samplers.BaseSampler) -> None:
        self.sampler = sampler

    def plan(self, study: optuna.Study, trial: FrozenTrial) -> tuple[Any, Narrow | None]:
        """The study as ``sampler`` sees it for ``trial``, and how that trial's distributions
        narrow (``None``: not at all)."""
        raise NotImplementedError

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        view, _ = self.plan(study, trial)
        return self.sampler.infer_relative_search_space(view, trial)

    def sample_relative(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        search_space: dict[str, BaseDistribution],
    ) -> dict[str, Any]:
        view, narrow = self.plan(study, trial)
        if narrow is not None:
            search_space = {n: narrow(n, d) for n, d in search_space.items()}
        return self.sampler.sample_relative(view, trial, search_space)

    def sample_independent(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        view, narrow = self.plan(study, trial)
        if narrow is not None:
            param_distribution = narrow(param_name, param_distribution)
        return self.sampler.sample_independent(view, trial, param_name, param_distribution)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self.sampler.before_trial(study, trial)

    def after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        self.sampler.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.sampler.reseed_rng()


class PriorFree(ViewSampler):
    """``sampler``, with its exploring trials (`exploring`) proposed as a cold campaign's
    would be: from the campaign's own trials that no earlier run chose or steered
    (`cold_only`). A trial proposed while the sampler's view showed earlier runs is marked
    steered (`STEERED_ATTR`, when ``steers`` says so before it is sampled); the exploring trials see
    neither the earlier runs nor those trials, so they go on as a cold campaign of their own
    and earlier runs that mislead can slow the campaign by at most that share of its trials,
    never keep it from where a cold campaign goes. While no earlier run is shown, no trial is
    steered and the campaign is a cold one, trial for trial. Every other trial sees the study
    as it is."""

    def __init__(
        self,
        sampler: optuna.samplers.BaseSampler,
        steers: Callable[[optuna.Study], bool] | None = None,
    ) -> None:
        super().__init__(sampler)
        self.steers = steers

    def __str__(self) -> str:
        return f"{self.sampler} (every {EXPLORE_EVERY}th trial without the earlier runs)"

    def plan(self, study: optuna.Study, trial: FrozenTrial) -> tuple[Any, Narrow | None]:
        if exploring(trial):
            return StudyView(study, cold_only), None
        return study, None

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        # An enqueued trial (a re-run of an earlier configuration) is not proposed here.
        from tuner.search._internals import enqueued, storage_of, trial_id

        if not enqueued(trial):
            if exploring(trial):
                storage_of(study).set_trial_user_attr(trial_id(trial), EXPLORING_ATTR, True)
            elif self.steers is not None and self.steers(study):
                storage_of(study).set_trial_system_attr(trial_id(trial), STEERED_ATTR, True)
        super().before_trial(study, trial)
