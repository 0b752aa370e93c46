"""Brackets of successive halving (Hyperband over asynchronous rungs), as pure functions.

A single ladder of rungs that starts at one step bets the whole campaign on the first rung
ranking configurations as the last step does. Hyperband hedges that bet: bracket ``s`` starts
its rungs at ``min_resource * eta**s``, so a chain in a later bracket is first judged after
more training. Each chain (a trial and the continuations that resume it) belongs to one
bracket for its whole life, and is ranked only against the chains of its bracket: a first rung
that misleads costs the brackets that start there, not the campaign.

Chains are dealt to brackets by their first trial's number, round-robin over a weighted
table, so every controller and worker (and a restarted one) agrees without storing anything.
A bracket's weight is inverse to the epochs a chain of it costs on average under halving by
``eta``, so each bracket spends about the same share of the budget.

With one bracket this is the asynchronous successive halving of ``tuner.schedulers._asha``.
Everything here reads plain trial records (``FrozenTrial``); nothing writes to a study.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from tuner.search import (
    ATTEMPT_ATTR,
    PAUSED_ATTR,
    PROMOTED_FROM_ATTR,
    SUPERSEDES_ATTR,
    chain_attrs,
    first_trial,
    rung_values,
)

if TYPE_CHECKING:
    import optuna

__all__ = ["Brackets", "continuation", "in_top", "rung_values"]

#: The least number of entries in the weighted table that deals chains to brackets.
_TABLE = 60


def in_top(values: dict[int, float], chain: int, eta: int, maximize: bool) -> tuple[bool, int, int]:
    """``(chain ranks in the top ceil(n / eta), its rank from 0, n)``; ties go to the older
    chain."""
    order = sorted(values, key=lambda c: (-values[c] if maximize else values[c], c))
    rank, n = order.index(chain), len(order)
    return rank < math.ceil(n / eta), rank, n


@dataclass(frozen=True)
class Brackets:
    """``count`` brackets of rungs at ``min_resource * eta**k`` steps below ``max_resource``;
    bracket ``s`` keeps the rungs from ``min_resource * eta**s`` on. ``count`` is capped at
    the number of rungs (a bracket without a rung would never stop anything)."""

    min_resource: int
    max_resource: int
    eta: int
    count: int = 1

    @cached_property
    def ladder(self) -> tuple[int, ...]:
        """Every rung step of the first bracket."""
        out, step = [], self.min_resource
        while step < self.max_resource:
            out.append(step)
            step *= self.eta
        return tuple(out)

    @property
    def used(self) -> int:
        """Brackets in use: ``count``, at most one per rung."""
        return max(1, min(self.count, len(self.ladder)))

    def rungs(self, bracket: int) -> tuple[int, ...]:
        """The rung steps of ``bracket``."""
        return self.ladder[bracket:]

    def cost(self, bracket: int) -> float:
        """Epochs a chain of ``bracket`` trains on average when each rung lets the top 1/eta
        go on."""
        steps, share, done = 0.0, 1.0, 0
        for rung in self.rungs(bracket):
            steps += share * (rung - done)
            share, done = share / self.eta, rung
        return steps + share * (self.max_resource - done)

    @cached_property
    def table(self) -> tuple[int, ...]:
        """Brackets in the order chains are dealt to them: each about as often as it takes
        for the brackets to spend equal epochs, interleaved."""
        weights = [1.0 / self.cost(s) for s in range(self.used)]
        total = sum(weights)
        size = max(_TABLE, self.used)
        slots = [max(1, round(size * w / total)) for w in weights]
        # Interleave: at each position, the bracket furthest behind its share goes next.
        dealt = [0] * self.used
        out = []
        for i in range(sum(slots)):
            s = max(
                range(self.used), key=lambda b: (slots[b] * (i + 1) / sum(slots) - dealt[b], -b)
            )
            dealt[s] += 1
            out.append(s)
        return tuple(out)

    def of(self, chain: int) -> int:
        """The bracket of the chain whose first trial is number ``chain``."""
        return self.table[chain % len(self.table)]

    def bracket_of(self, trial: optuna.trial.FrozenTrial) -> int:
        """The bracket of ``trial``'s chain."""
        return self.of(first_trial(trial))

    def crossed(self, chain: int, before: int, step: int) -> int | None:
        """The highest rung of ``chain``'s bracket in ``(before, step]``, or None."""
        hit = [r for r in self.rungs(self.of(chain)) if before < r <= step]
        return hit[-1] if hit else None

    def values(
        self, trials: Sequence[optuna.trial.FrozenTrial], bracket: int, rung: int
    ) -> dict[int, float]:
        """`rung_values` of the chains of ``bracket``."""
        chains = {first_trial(t) for t in trials if self.bracket_of(t) == bracket}
        return rung_values(trials, rung, chains)

    def cut(
        self, trials: Sequence[optuna.trial.FrozenTrial], chain: int, rung: int, maximize: bool
    ) -> tuple[bool, int, int, float] | None:
        """Whether ``chain`` goes on at ``rung`` among the chains of its bracket: ``(in the top
        1/eta, its rank from 0, chains ranked, its value)``, or None when it has no finite
        value there."""
        values = self.values(trials, self.of(chain), rung)
        if chain not in values:
            return None
        ok, rank, n = in_top(values, chain, self.eta, maximize)
        return ok, rank, n, values[chain]

    def promotable(
        self, trials: Sequence[optuna.trial.FrozenTrial], maximize: bool
    ) -> tuple[optuna.trial.FrozenTrial, int, int] | None:
        """The paused trial to resume now, with its rank and the chains ranked: the first,
        highest rung first, that ranks in the top of its bracket's rung and was not promoted
        yet (a continuation that names it is the record of its promotion)."""
        import optuna

        promoted = {
            int(t.user_attrs[PROMOTED_FROM_ATTR])
            for t in trials
            if t.user_attrs.get(PROMOTED_FROM_ATTR) is not None
        }
        paused = [
            t
            for t in trials
            if t.state == optuna.trial.TrialState.PRUNED
            and t.user_attrs.get(PAUSED_ATTR) is not None
            and t.number not in promoted
        ]
        members: dict[int, set[int]] = {}
        for t in trials:
            members.setdefault(self.bracket_of(t), set()).add(first_trial(t))
        ranked: dict[tuple[int, int], dict[int, float]] = {}  # (bracket, rung) -> values
        for p in sorted(paused, key=lambda t: (-int(t.user_attrs[PAUSED_ATTR]), t.number)):
            chain, rung = first_trial(p), int(p.user_attrs[PAUSED_ATTR])
            key = (self.of(chain), rung)
            if key not in ranked:
                ranked[key] = rung_values(trials, rung, members.get(key[0], set()))
            if chain not in ranked[key]:
                continue
            ok, rank, n = in_top(ranked[key], chain, self.eta, maximize)
            if ok:
                return p, rank, n
        return None


def continuation(paused: optuna.trial.FrozenTrial) -> optuna.trial.FrozenTrial:
    """The WAITING trial that resumes ``paused`` from its checkpoint (its promotion)."""
    import optuna

    return optuna.trial.create_trial(
        state=optuna.trial.TrialState.WAITING,
        params=paused.params,
        distributions=paused.distributions,
        user_attrs={
            ATTEMPT_ATTR: int(paused.user_attrs.get(ATTEMPT_ATTR, 1)) + 1,
            PROMOTED_FROM_ATTR: paused.number,
            **chain_attrs(paused.user_attrs, paused.number),
        },
        system_attrs={SUPERSEDES_ATTR: paused.number},
    )
