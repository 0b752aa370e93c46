"""Asynchronous successive halving (Li et al. 2018), with pause and promotion.

Rungs sit at ``min_resource * eta**k`` reported steps below ``max_resource``. When a trial
first reports a step at or past a rung, its value there is ranked among every chain's value
at that rung so far (a chain: a trial and the continuations that resume it, counted once).
In the top ``ceil(n / eta)`` it goes on. Otherwise, ``mode: stop`` stops it for good (PRUNED,
as a pruner would); ``mode: promote`` pauses it: once its checkpoint of the rung step is
committed (or ``trial.grace_period`` passed), its process is stopped and the trial is told
PRUNED with ``tuner.paused_at`` = the rung step; its slot is free at once.

Before each new trial is asked for, a paused trial that now ranks in the top of its rung
(highest rung first) is promoted: a WAITING continuation with its parameters is added, which
resumes its chain's checkpoint (``tuner.promoted_from``, and ``tuner:supersedes`` so the
chain counts once against the budget). The continuation is the record of the promotion: a
paused trial with one is never promoted again, whoever looks (a restarted controller, another
worker), and the decision is made under the study lock.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from lineage import faults
from tuner.schedulers._base import Scheduler, SchedulerContext
from tuner.schedulers._decision import KEEP, AttemptView, Decision, Pause, Stop
from tuner.search import (
    ATTEMPT_ATTR,
    IMPORTED_ATTR,
    LAUNCH_ATTR,
    PAUSED_ATTR,
    PROMOTED_FROM_ATTR,
    SUPERSEDES_ATTR,
    chain_attrs,
    first_trial,
)

if TYPE_CHECKING:
    import optuna

    from tuner.config import AshaConfig

__all__ = ["Asha", "in_top", "rung_values"]


def rung_values(trials: Iterable[optuna.trial.FrozenTrial], rung: int) -> dict[int, float]:
    """``{chain: value}``: each chain's target value at ``rung`` (the first reported step at or
    past it), from its newest trial that reached it; imported trials left out."""
    found: dict[int, tuple[int, float]] = {}
    for t in trials:
        if IMPORTED_ATTR in t.system_attrs:
            continue
        steps = [s for s in t.intermediate_values if s >= rung]
        if not steps:
            continue
        value = t.intermediate_values[min(steps)]
        chain = first_trial(t)
        if math.isfinite(value) and (chain not in found or t.number > found[chain][0]):
            found[chain] = (t.number, value)
    return {chain: value for chain, (_, value) in found.items()}


def in_top(values: dict[int, float], chain: int, eta: int, maximize: bool) -> tuple[bool, int, int]:
    """``(chain ranks in the top ceil(n / eta), its rank from 0, n)``; ties go to the older
    chain."""
    order = sorted(values, key=lambda c: (-values[c] if maximize else values[c], c))
    rank, n = order.index(chain), len(order)
    return rank < math.ceil(n / eta), rank, n


class Asha(Scheduler):
    """See the module's text."""

    def __init__(
        self, section: AshaConfig, context: SchedulerContext, study: Any, **kwargs: Any
    ) -> None:
        super().__init__(context, study, **kwargs)
        self.section = section
        self._rungs = self.section.rungs()
        self._maximize = context.target.goal == "maximize"

    def reported(self, rt: AttemptView, before: int, step: int) -> Decision:
        crossed = [r for r in self._rungs if before < r <= step]
        if not crossed:
            return KEEP
        rung = crossed[-1]
        values = rung_values(self.study.get_trials(deepcopy=False), rung)
        chain = first_trial(rt.trial)
        if chain not in values:
            return KEEP  # not a finite value there: the diagnosis, or judging, deals with it
        self._dirty = True  # a new value at a rung may lift a paused trial into the top
        eta = self.section.reduction_factor
        ok, rank, n = in_top(values, chain, eta, self._maximize)
        if ok:
            return KEEP
        what = (
            f"at rung step {rung} ({self.context.target.metric}={values[chain]:.6g}, rank "
            f"{rank + 1} of {n}; the top 1/{eta} go on)"
        )
        if self.section.mode == "stop":
            return Stop(f"stopped by the asha scheduler {what}")
        return Pause(rung, what)

    def recover(
        self, orphans: list[optuna.trial.FrozenTrial], host: str
    ) -> list[optuna.trial.FrozenTrial]:
        left = []
        for frozen in orphans:
            rung = frozen.user_attrs.get(PAUSED_ATTR)
            if rung is None or not frozen.user_attrs.get(LAUNCH_ATTR):
                left.append(frozen)
                continue
            why = (
                f"paused by the asha scheduler at rung step {rung} (its controller died before "
                "the pause was told; the next controller told it)"
            )
            self._end_pruned(frozen, host, why, {})
        return left

    def _continuations(self) -> int:
        import optuna

        trials = self.study.get_trials(deepcopy=False)
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
        eta = self.section.reduction_factor
        for p in sorted(paused, key=lambda t: (-int(t.user_attrs[PAUSED_ATTR]), t.number)):
            rung = int(p.user_attrs[PAUSED_ATTR])
            values = rung_values(trials, rung)
            if first_trial(p) not in values:
                continue
            ok, rank, n = in_top(values, first_trial(p), eta, self._maximize)
            if not ok:
                continue
            self.study.add_trial(
                optuna.trial.create_trial(
                    state=optuna.trial.TrialState.WAITING,
                    params=p.params,
                    distributions=p.distributions,
                    user_attrs={
                        ATTEMPT_ATTR: int(p.user_attrs.get(ATTEMPT_ATTR, 1)) + 1,
                        PROMOTED_FROM_ATTR: p.number,
                        **chain_attrs(p.user_attrs, p.number),
                    },
                    system_attrs={SUPERSEDES_ATTR: p.number},
                )
            )
            faults.point("asha-promoted-not-started")
            self._message(
                f"trial {p.number}: promoted from rung step {rung} (now rank {rank + 1} of "
                f"{n}); it resumes from its checkpoint as a new trial"
            )
            return 1
        return 0
