"""The one place where decisions about a running attempt take effect.

Schedulers, the pruner and the online diagnosis return decisions (`tuner.schedulers`); the
metric intake passes this module the strongest of one turn's (`tuner.schedulers.strongest`).
Once an attempt is stopping, later decisions are ignored: the first stop applied is final.
A pending pause holds the same rank against later decisions as within one turn: a `Stop`
that comes while it waits for its checkpoint is ignored (the pause takes effect within the
grace period anyway, and the trial is already marked paused in the study). A pause waits here for the attempt's checkpoint of its step (or the grace period) before it
stops the process. An attempt nothing stops is told it may go on past the step just judged:
a trial that waits at a step where it may be paused (`tuner.trial.checkpointed`) then goes on
at once, and one that is paused there stops having computed nothing further.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lineage import checkpoints, faults
from tuner.schedulers import Continue, Decision, Pause, Stop
from tuner.search import PAUSED_ATTR, internals

if TYPE_CHECKING:
    import optuna

    from tuner.campaign._running import RunningTrial

__all__ = ["Decisions"]


class Decisions:
    """Applies decisions to the attempts of one campaign. ``folder``: a trial's chain
    checkpoint folder; ``grace``: how long a pause waits for its checkpoint
    (``trial.grace_period``)."""

    def __init__(
        self,
        study: optuna.Study,
        *,
        folder: Callable[[Any], Path],
        grace: float,
        message: Callable[[str], Any],
    ) -> None:
        self._study = study
        self._folder = folder
        self._grace = grace
        self._message = message

    def apply(self, rt: RunningTrial, decision: Decision, *, judged: int | None = None) -> None:
        """Let ``decision`` take effect on ``rt`` (nothing once ``rt`` is stopping).
        ``judged``: the highest step whose report the decision judged, if it judged a new
        one; when ``rt`` goes on (nothing stops or pauses it), its trial is told it may go on
        past that step (it may be waiting there, `tuner.trial.checkpointed`)."""
        if rt.decided is not None or rt.superseded:
            return
        if rt.pending is not None and decision.rank <= rt.pending.rank:
            return
        if judged is not None and decision.rank == 0 and rt.pending is None:
            rt.handle.go_on(judged)
            return
        if isinstance(decision, Stop | Continue):
            self._stop(rt, decision)
        elif isinstance(decision, Pause) and rt.pending is None:
            rt.pending = decision
            rt.pending_until = time.monotonic() + self._grace
            # Recorded at once: a controller that dies before the pause takes effect leaves
            # a RUNNING trial that the next one pauses instead of re-running.
            internals.storage_of(self._study).set_trial_user_attr(
                internals.trial_id(rt.trial), PAUSED_ATTR, decision.step
            )
            faults.point("asha-pause-recorded-not-told")
            self.tick(rt)

    def tick(self, rt: RunningTrial) -> None:
        """A turn of the loop while ``rt`` runs: a pending pause takes effect once the
        checkpoint of its step is committed, or its grace period passed."""
        pause = rt.pending
        if pause is None or rt.decided is not None:
            return
        found = checkpoints.latest_good(self._folder(rt.trial))
        ready = found is not None and found.step >= pause.step
        if not ready and time.monotonic() < rt.pending_until:
            return
        if not ready:
            held = f"step {found.step}" if found is not None else "none"
            self._message(
                f"trial {rt.number}: no checkpoint of step {pause.step} within "
                f"trial.grace_period={self._grace:g}s (latest: {held}); "
                "a promotion resumes from the latest one"
            )
        reason = f"paused by the {pause.by} scheduler {pause.what}"
        self._stop(rt, Stop(reason, {PAUSED_ATTR: pause.step}))
        self._message(f"trial {rt.number}: paused {pause.what}")

    def _stop(self, rt: RunningTrial, decision: Stop | Continue) -> None:
        rt.decided = decision
        rt.handle.request_prune()
