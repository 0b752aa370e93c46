"""``tuner worker``: one more controller on a running campaign's shared study.

A worker loads the campaign config, checks that it may write to the lineage store, and then
drives trials of the same Optuna study as every other worker (and the ``tuner run`` that
started it), through the same executor kinds: rounds of the one `Controller`, each with a
`tuner.coordination.SharedStudy`, until no trial is left RUNNING or WAITING anywhere. The
rules that make N workers finish exactly ``budget.trials`` trials, and the heartbeats that let
a surviving worker re-queue the trials of a dead one, are in `tuner.coordination`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tuner._errors import TunerError
from tuner.campaign._controller import Controller
from tuner.campaign._history import count_imported
from tuner.campaign._spending import limits_of
from tuner.coordination import (
    CampaignDir,
    Heartbeat,
    SharedStudy,
    StudyLock,
    StudySite,
    counted_trials,
    heartbeat_storage,
    heartbeat_timing,
    requeue_and_close,
    spent_of,
)
from tuner.records import check_tracking_access
from tuner.search import check_storage

if TYPE_CHECKING:
    import optuna

    from tuner.campaign._running import Observer
    from tuner.config import CampaignConfig
    from tuner.executors import Executor

__all__ = ["WorkerResult", "run_worker"]


@dataclass
class WorkerResult:
    rounds: int
    requeued: list[tuple[int, int]]
    counted: int
    budget: int | None


def run_worker(
    config: CampaignConfig,
    *,
    interval: int | None = None,
    grace: int | None = None,
    observer: Observer | None = None,
    executor_factory: Callable[[], Executor] | None = None,
) -> WorkerResult:
    """Drive trials of ``config``'s study until the study holds ``budget.trials`` counted
    trials and none is RUNNING or WAITING anywhere (so that a trial of a worker that dies
    late is still re-queued and run by a survivor)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    interval, grace = heartbeat_timing(interval, grace, section=config.heartbeat)
    tracking = config.tracking_uri()
    check_tracking_access(tracking)
    url = config.optuna_storage_url()
    if url.startswith("sqlite") and CampaignDir(config.base_dir, config.name).controller_alive():
        raise TunerError(
            f"{config.source_path or config.name}: a `tuner run` controller holds this SQLite "
            "campaign and caches its study in memory; start every controller of a shared "
            "campaign with `tuner worker` (or use a PostgreSQL storage)"
        )
    check_storage(url)  # one line naming a missing database, before anything is made
    lock = StudyLock(url, config.study_name)
    with lock.hold():  # Optuna creates its tables on first use: racing workers would collide
        rdb = heartbeat_storage(url, interval=interval, grace=grace)
    storage = optuna.storages.get_storage(rdb)
    study_box: list[optuna.Study] = []
    requeued: list[tuple[int, int]] = []

    def on_beat() -> None:
        if study_box:
            requeued.extend(requeue_and_close(study_box[0], rdb, lock, None, tracking))

    heartbeat = Heartbeat(rdb, on_beat=on_beat).start()
    site = StudySite.of(config)
    rounds = 0
    try:
        while True:
            rounds += 1
            shared = SharedStudy(
                site,
                storage=storage,
                rdb=rdb,
                heartbeat=heartbeat,
                lock=lock,
                requeued=requeued,
                interval=interval,
                grace=grace,
            )
            controller = Controller(
                config,
                coordination=shared,
                observer=observer,
                executor=executor_factory() if executor_factory else None,
                # The last worker cannot know it is the last: no importance analysis.
                importance=False,
            )
            controller.run()
            assert controller.study is not None
            study = controller.study
            if not study_box:
                study_box.append(optuna.load_study(study_name=config.study_name, storage=rdb))
            while True:
                states = {t.state for t in study.get_trials(deepcopy=False)}
                if optuna.trial.TrialState.WAITING in states and not _spent(config, study):
                    break  # re-queued work: another round
                if optuna.trial.TrialState.RUNNING not in states:
                    counted = counted_trials(study) - count_imported(study)
                    return WorkerResult(rounds, requeued, counted, config.trial_limit)
                # Others still run trials; stay to re-queue them if their worker dies.
                time.sleep(interval)
                requeued.extend(requeue_and_close(study_box[0], rdb, lock, None, tracking))
    finally:
        heartbeat.stop()
        lock.close()


def _spent(config: CampaignConfig, study: optuna.Study) -> bool:
    """Whether ``budget.steps`` or ``budget.device_hours`` is spent: a WAITING trial is then
    left waiting (nothing is left to run it with)."""
    limits = limits_of(config)
    reached = limits.reached(spent_of(study.get_trials(deepcopy=False), limits.share))
    return reached is not None and reached != "budget.trials"
