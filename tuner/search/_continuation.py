"""Trials that continue other trials: the chain a retry or a re-run belongs to, and the
history a continuation takes over from the trial it continues.

Optuna cannot re-open a finished trial, so an attempt that continues an interrupted or
failed one is a new trial with the same parameters. It carries the number of the trial it
continues (``tuner.parent_trial``) and of the first trial of the chain
(``tuner.first_trial``, which names the checkpoint folder every attempt shares). When it
resumes from a checkpoint of step N, the parent's intermediate values up to N are copied into
it, so the pruner judges it on the same curve it would have seen without the interruption.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from lineage import trials as vocab
from lineage.trials import RESUMED_STEP_ATTR, TrialRecord, chain_attrs
from tuner.search import _internals as internals

if TYPE_CHECKING:
    import optuna

__all__ = [
    "chain_attrs",
    "continue_history",
    "counts",
    "first_trial",
    "parent_trial",
    "superseded_numbers",
]


def superseded_numbers(trials: Iterable[optuna.trial.FrozenTrial]) -> set[int]:
    """Numbers of the finished trials a scheduler's continuation supersedes
    (`lineage.trials.superseded_numbers` over Optuna trials)."""
    return vocab.superseded_numbers(TrialRecord.of(t) for t in trials)


def counts(trial: optuna.trial.FrozenTrial, superseded: set[int]) -> bool:
    """Whether ``trial`` counts against the budget (`lineage.trials.counts`; ``superseded``:
    `superseded_numbers` of the study's trials)."""
    return vocab.counts(TrialRecord.of(trial), superseded)


def first_trial(trial: optuna.Trial | optuna.trial.FrozenTrial) -> int:
    """The number of the first trial of ``trial``'s chain (its own for a fresh trial)."""
    return vocab.first_trial(TrialRecord.of(trial))


def parent_trial(trial: optuna.Trial | optuna.trial.FrozenTrial) -> int | None:
    """The number of the trial ``trial`` continues, or None for a fresh trial."""
    return vocab.parent_trial(TrialRecord.of(trial))


def continue_history(
    study: optuna.Study,
    trial: optuna.Trial,
    parent: int,
    step: int,
    reported: Mapping[int, float] | None = None,
) -> int:
    """Copy the parent's intermediate values up to ``step`` into ``trial``, completed by
    ``reported`` (target values the parent's attempt reported that never reached the study,
    its controller having died first), and record the resumed step; the number copied."""
    storage, trial_id = internals.storage_of(study), internals.trial_id(trial)
    frozen = study.get_trials(deepcopy=False)[parent]
    values = {**(reported or {}), **frozen.intermediate_values}
    copied = 0
    for at, value in sorted(values.items()):
        if at <= step:
            storage.set_trial_intermediate_value(trial_id, at, value)
            copied += 1
    storage.set_trial_user_attr(trial_id, RESUMED_STEP_ATTR, step)
    return copied
