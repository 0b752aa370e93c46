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
from typing import TYPE_CHECKING, Any

from tuner.search import _internals as internals
from tuner.search._attrs import (
    FIRST_TRIAL_ATTR,
    MEMBER_ATTR,
    PARENT_ATTR,
    RESUMED_STEP_ATTR,
    STALE_ATTR,
    SUPERSEDES_ATTR,
)

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


def chain_attrs(user_attrs: Mapping[str, Any], number: int) -> dict[str, int]:
    """The user attributes of a copy that continues trial ``number`` (whose user attributes
    are ``user_attrs``); a PBT member's copy stays that member."""
    out = {PARENT_ATTR: number, FIRST_TRIAL_ATTR: int(user_attrs.get(FIRST_TRIAL_ATTR, number))}
    if user_attrs.get(MEMBER_ATTR) is not None:
        out[MEMBER_ATTR] = int(user_attrs[MEMBER_ATTR])
    return out


def superseded_numbers(trials: Iterable[optuna.trial.FrozenTrial]) -> set[int]:
    """Numbers of the finished trials a scheduler's continuation supersedes (`SUPERSEDES_ATTR`)."""
    return {
        int(t.system_attrs[SUPERSEDES_ATTR]) for t in trials if SUPERSEDES_ATTR in t.system_attrs
    }


def counts(trial: optuna.trial.FrozenTrial, superseded: set[int]) -> bool:
    """Whether ``trial`` counts against the budget: not marked stale, and not superseded by a
    continuation (``superseded``: `superseded_numbers` of the study's trials)."""
    return STALE_ATTR not in trial.system_attrs and trial.number not in superseded


def first_trial(trial: optuna.Trial | optuna.trial.FrozenTrial) -> int:
    """The number of the first trial of ``trial``'s chain (its own for a fresh trial)."""
    return int(trial.user_attrs.get(FIRST_TRIAL_ATTR, trial.number))


def parent_trial(trial: optuna.Trial | optuna.trial.FrozenTrial) -> int | None:
    """The number of the trial ``trial`` continues, or None for a fresh trial."""
    value = trial.user_attrs.get(PARENT_ATTR)
    return None if value is None else int(value)


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
