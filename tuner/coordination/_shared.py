"""``tuner worker``: one more controller on a campaign's shared study.

The rules that make N controllers finish exactly ``budget.trials`` trials are in
`tuner.coordination._budget`; the heartbeats that let a survivor re-queue the trials of a
dead worker in `tuner.coordination._heartbeat` and `tuner.coordination._recovery`.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from tuner.coordination._base import Coordination, StudySite
from tuner.coordination._budget import ask_within_budget
from tuner.coordination._campaign_dir import CampaignDir
from tuner.coordination._recovery import requeue_and_close

if TYPE_CHECKING:
    import optuna

    from tuner.coordination._budget import Limits
    from tuner.coordination._heartbeat import Heartbeat
    from tuner.coordination._lock import StudyLock
    from tuner.records import LineageRecorder

__all__ = ["SharedStudy"]


class SharedStudy(Coordination):
    """A controller sharing its study with other live controllers.

    Differences from `tuner.coordination.Standalone`: its own state directory
    (``<name>.worker-<host>-<pid>``, so that several workers on one host do not take each
    other's lock); the given storage (plain cached, with heartbeats); one worker at a time
    creates the study, the MLflow experiment and the parent run; its sampler is reseeded
    (workers built from one config would otherwise propose the same parameters in lockstep);
    every trial it asks for gets heartbeats until it ends; recovery re-queues only *stale*
    trials (no heartbeat for the grace period) and ends only their MLflow runs.

    ``requeued`` collects ``(stale trial, its copy)`` pairs across the rounds of a worker.
    """

    def __init__(
        self,
        site: StudySite,
        *,
        storage: optuna.storages.BaseStorage,
        rdb: optuna.storages.RDBStorage,
        heartbeat: Heartbeat,
        lock: StudyLock,
        requeued: list[tuple[int, int]] | None = None,
        interval: int | None = None,
        grace: int | None = None,
    ) -> None:
        super().__init__(site, interval=interval, grace=grace)
        self._storage = storage
        self._rdb = rdb
        self._heartbeat = heartbeat
        self._lock = lock
        self.requeued = requeued if requeued is not None else []

    def campaign_dir(self) -> CampaignDir:
        tag = f"{self.site.name}.worker-{socket.gethostname()}-{os.getpid()}"
        return CampaignDir(self.site.base_dir, tag)

    def open_storage(self) -> optuna.storages.BaseStorage:
        return self._storage

    @contextlib.contextmanager
    def setting_up(self) -> Iterator[None]:
        # No duplicate parent runs, no races to create the study or the experiment.
        with self._lock.hold():
            yield

    def joined(self, study: optuna.Study) -> None:
        # A shared study is not reproducible anyway; identical seeds would only collide.
        study.sampler.reseed_rng()

    def recover(
        self,
        study: optuna.Study,
        orphans: list[optuna.trial.FrozenTrial],
        *,
        recorder: LineageRecorder,
        message: Callable[[str], Any],
    ) -> None:
        del orphans  # only trials whose heartbeat went stale, whoever started them
        moved = requeue_and_close(study, self._rdb, self._lock, recorder)
        for old, new in moved:
            message(f"trial {old}: no heartbeat (its worker died); re-queued as trial {new}")
        self.requeued.extend(moved)

    @contextlib.contextmanager
    def study_lock(self) -> Iterator[None]:
        with self._lock.hold():
            yield

    def ask(self, study: optuna.Study, budget: int | Limits) -> optuna.Trial | None:
        return ask_within_budget(study, budget, self._lock, self._heartbeat)

    def lost_trials(self) -> set[int]:
        return self._heartbeat.take_lost()

    def trial_ended(self, trial_id: int) -> None:
        self._heartbeat.remove(trial_id)
