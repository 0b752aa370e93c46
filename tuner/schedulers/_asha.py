"""Asynchronous successive halving (Li et al. 2018), with pause and promotion.

Rungs sit at ``min_resource * eta**k`` reported steps below ``max_resource``. When a trial
first reports a step at or past a rung, its value there is ranked among every chain's value
at that rung so far (a chain: a trial and the continuations that resume it, counted once).
With ``brackets`` above 1 (Hyperband), each chain belongs to one bracket, whose rungs start
later, and is ranked among its bracket's chains only (``_brackets``).
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

from typing import TYPE_CHECKING, Any

from lineage import faults
from tuner.schedulers._base import Scheduler, SchedulerContext
from tuner.schedulers._brackets import Brackets, continuation, in_top, rung_values
from tuner.schedulers._decision import KEEP, AttemptView, Decision, Pause, Stop
from tuner.search import LAUNCH_ATTR, PAUSED_ATTR, first_trial

if TYPE_CHECKING:
    import optuna

    from tuner.config import AshaConfig

# `in_top` and `rung_values` live with the brackets; named here for the readers of rungs.
__all__ = ["Asha", "in_top", "rung_values"]


class Asha(Scheduler):
    """See the module's text."""

    def __init__(
        self, section: AshaConfig, context: SchedulerContext, study: Any, **kwargs: Any
    ) -> None:
        super().__init__(context, study, **kwargs)
        self.section = section
        self._brackets = Brackets(
            section.min_resource, section.max_resource, section.reduction_factor, section.brackets
        )
        self._maximize = context.target.goal == "maximize"

    def reported(self, rt: AttemptView, before: int, step: int) -> Decision:
        chain = first_trial(rt.trial)
        rung = self._brackets.crossed(chain, before, step)
        if rung is None:
            return KEEP
        trials = self.study.get_trials(deepcopy=False)
        found = self._brackets.cut(trials, chain, rung, self._maximize)
        if found is None:
            return KEEP  # not a finite value there: the diagnosis, or judging, deals with it
        self._dirty = True  # a new value at a rung may lift a paused trial into the top
        ok, rank, n, value = found
        if ok:
            return KEEP
        eta = self.section.reduction_factor
        among = "" if self._brackets.used == 1 else f" in bracket {self._brackets.of(chain)}"
        what = (
            f"at rung step {rung} ({self.context.target.metric}={value:.6g}, rank "
            f"{rank + 1} of {n}{among}; the top 1/{eta} go on)"
        )
        if self.section.mode == "stop":
            return Stop(f"stopped by the asha scheduler {what}")
        return Pause(rung, what)

    def pause_steps(self, trial: optuna.Trial | optuna.trial.FrozenTrial) -> tuple[int, ...]:
        """The rungs of ``trial``'s bracket with ``mode: promote``; none with ``mode: stop``
        (a stop needs no checkpoint of its step)."""
        if self.section.mode != "promote":
            return ()
        return self._brackets.rungs(self._brackets.of(first_trial(trial)))

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
        found = self._brackets.promotable(self.study.get_trials(deepcopy=False), self._maximize)
        if found is None:
            return 0
        p, rank, n = found
        self.study.add_trial(continuation(p))
        faults.point("asha-promoted-not-started")
        self._message(
            f"trial {p.number}: promoted from rung step {p.user_attrs[PAUSED_ATTR]} (now rank "
            f"{rank + 1} of {n}); it resumes from its checkpoint as a new trial"
        )
        return 1
