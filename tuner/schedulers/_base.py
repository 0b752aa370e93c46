"""The scheduler interface: what the controller asks a scheduler, and when."""

from __future__ import annotations

import abc
import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna

    from tuner.config import Objective, Parameter
    from tuner.schedulers._decision import AttemptView, Decision

__all__ = ["Scheduler", "SchedulerContext"]


@dataclass(frozen=True)
class SchedulerContext:
    """What a scheduler reads of the campaign besides its own ``scheduler:`` section."""

    #: The objective whose values rank the trials (``target``).
    target: Objective
    #: Seconds between SIGTERM and SIGKILL when it stops a process (``trial.grace_period``).
    grace_period: float
    #: The search space, for the parameters PBT perturbs (``parameters``).
    parameters: Mapping[str, Parameter]
    #: ``sampler.seed``: PBT's choices are reproducible with it.
    seed: int | None


class Scheduler(abc.ABC):
    """Decides, from the target values trials report, which attempts go on, which stop, and
    which continuations (another trial resumed from a checkpoint) join the study.

    Contract. The controller calls it from its own thread only:

    - `reported` after a running attempt's new target values reached the study (``before``:
      the highest step it had reported before them). It returns a decision (`Keep`, `Stop`,
      `Pause` at a step, `Continue` as another trial) over a read-only view of the attempt;
      the controller applies it, with the pruner's and the diagnosis's, in one place
      (`strongest` says which wins). It is not asked about an attempt already stopping.
    - `pause_steps` and `pause_every` when an attempt of a trial is launched: where it may
      be paused.
    - `recover` once, before the coordination re-runs the trials a dead controller left.
    - `before_ask` before the controller asks for a new trial: it may enqueue continuations
      (WAITING trials, which the next ask takes first, whatever the budget count); the number
      of trials it made stop counting is returned.

    Every study-wide decision is made under ``locked`` (the coordination's study lock), from
    what the study holds, so that a restarted controller or a second worker reaches the same
    state and never enqueues one continuation twice.
    """

    #: How often `before_ask` reads the whole study when nothing changed here (seconds).
    poll_every = 1.0

    def __init__(
        self,
        context: SchedulerContext,
        study: optuna.Study,
        *,
        locked: Callable[[], contextlib.AbstractContextManager[Any]],
        folder: Callable[[Any], Path],
        message: Callable[[str], Any],
    ) -> None:
        self.context = context
        self.study = study
        self._locked = locked
        self._folder = folder
        self._message = message
        self._dirty = True
        self._last_scan = 0.0

    @abc.abstractmethod
    def reported(self, rt: AttemptView, before: int, step: int) -> Decision:
        """What becomes of ``rt``, which reported target values up to ``step`` (``before``:
        its highest step before; -1 for none)."""

    def pause_steps(self, trial: optuna.Trial | optuna.trial.FrozenTrial) -> tuple[int, ...]:
        """The steps at which `reported` may return a `Pause` for ``trial``'s attempts; the
        controller tells the trial (`tuner.trial.checkpointed` then waits there for the
        verdict). Default: none, so no trial ever waits."""
        return ()

    def pause_every(self, trial: optuna.Trial | optuna.trial.FrozenTrial) -> int | None:
        """N when `reported` may return a `Pause` for ``trial``'s attempts at every positive
        multiple of N (pause steps with no last one); the trial waits there as at
        `pause_steps`. Default: None."""
        return None

    def recover(
        self, orphans: list[optuna.trial.FrozenTrial], host: str
    ) -> list[optuna.trial.FrozenTrial]:
        """Before the coordination re-runs the ``orphans`` (RUNNING trials a dead controller
        left), end those the scheduler had already decided about; the rest is returned.
        Default: none."""
        return orphans

    def _end_pruned(
        self, frozen: optuna.trial.FrozenTrial, host: str, why: str, attrs: dict[str, Any]
    ) -> None:
        """Tell a trial its dead controller had decided about PRUNED, with ``why`` and
        ``attrs``, after ending its process group when it ran on this ``host``."""
        import optuna

        from tuner.executors import end_group
        from tuner.search import LAUNCH_ATTR, PRUNE_ATTR, internals

        launch = frozen.user_attrs.get(LAUNCH_ATTR) or {}
        if launch.get("host") == host and launch.get("pid"):
            end_group(launch, grace=self.context.grace_period)
        storage, trial_id = internals.storage_of(self.study), internals.trial_id(frozen)
        for key, value in {PRUNE_ATTR: why, **attrs}.items():
            storage.set_trial_user_attr(trial_id, key, value)
        storage.set_trial_state_values(trial_id, optuna.trial.TrialState.PRUNED)
        self._message(f"trial {frozen.number}: {why}")

    def before_ask(self) -> int:
        """Enqueue the continuations now due; how many trials stopped counting."""
        now = time.monotonic()
        if not self._dirty and now - self._last_scan < self.poll_every:
            return 0
        self._dirty, self._last_scan = False, now
        with self._locked():
            return self._continuations()

    def _continuations(self) -> int:
        return 0

    def changed(self) -> None:
        """Something the next `before_ask` should look at happened (a trial ended)."""
        self._dirty = True

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        with self._locked():
            yield
