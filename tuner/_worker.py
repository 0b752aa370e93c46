"""``tuner worker``: one more controller on a running campaign's shared study.

A worker loads the campaign config, checks that it may write to the lineage store, and then
drives trials of the same Optuna study as every other worker (and the ``tuner run`` that
started it), through the same executor kinds. The rules that make N workers finish exactly
``budget.trials`` trials, and the heartbeats that let a surviving worker re-queue the trials
of a dead one, are in `tuner._heartbeat`.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lineage._secrets import mask_uri
from tuner._campaign import CampaignDir
from tuner._controller import LAUNCH_ATTR, Controller
from tuner._errors import TunerError
from tuner._heartbeat import (
    STALE_ATTR,
    Heartbeat,
    StudyLock,
    counted_trials,
    default_timing,
    heartbeat_storage,
    requeue_stale,
)
from tuner._running import Observer, RunningTrial
from tuner.executors._base import Executor, TrialOutcome

if TYPE_CHECKING:
    import optuna

    from tuner._lineage import LineageRecorder
    from tuner.config import CampaignConfig

__all__ = [
    "CredentialsError",
    "WorkerController",
    "WorkerResult",
    "check_tracking_access",
    "requeue_and_close",
    "run_worker",
]


class CredentialsError(TunerError):
    """The MLflow server refused the credentials (or asked for some). ``exit_code`` 2: the
    fix is in the user's input (``MLFLOW_TRACKING_USERNAME`` / ``MLFLOW_TRACKING_PASSWORD``)."""

    exit_code = 2


def check_tracking_access(uri: str, *, timeout: float = 30.0) -> None:
    """Fail fast, in one line, when an ``http(s)://`` tracking server cannot be used.

    Sends one cheap authenticated request the way MLflow's client does (basic auth from
    ``MLFLOW_TRACKING_USERNAME``/``MLFLOW_TRACKING_PASSWORD``, or a bearer
    ``MLFLOW_TRACKING_TOKEN``). Raises `CredentialsError` on 401/403, `TunerError` when the
    server cannot be reached. Other stores (sqlite, postgresql, file) are not checked here.
    Neither the password nor the token ever appears in a message.
    """
    if not uri.lower().startswith(("http://", "https://")):
        return
    shown = mask_uri(uri)
    user = os.environ.get("MLFLOW_TRACKING_USERNAME")
    password = os.environ.get("MLFLOW_TRACKING_PASSWORD")
    token = os.environ.get("MLFLOW_TRACKING_TOKEN")
    request = urllib.request.Request(
        uri.rstrip("/") + "/api/2.0/mlflow/experiments/search",
        data=json.dumps({"max_results": 1}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    if user is not None and password is not None:
        raw = base64.b64encode(f"{user}:{password}".encode()).decode()
        request.add_header("Authorization", f"Basic {raw}")
    elif token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            return
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise TunerError(
            f"lineage.tracking_uri: cannot reach the MLflow server at {shown}: {reason}"
        ) from None
    if status == 401:
        if user is None or password is None:
            raise CredentialsError(
                f"lineage.tracking_uri: the MLflow server at {shown} requires a login (HTTP 401); "
                "set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD"
            )
        raise CredentialsError(
            f"lineage.tracking_uri: the MLflow server at {shown} rejected the credentials of "
            f"user {user!r} (HTTP 401); check MLFLOW_TRACKING_USERNAME and "
            "MLFLOW_TRACKING_PASSWORD"
        )
    if status == 403:
        raise CredentialsError(
            f"lineage.tracking_uri: user {user!r} may not use the MLflow server at {shown} "
            "(HTTP 403); ask its admin for EDIT permission on the experiment"
        )
    if status >= 500:
        raise TunerError(
            f"lineage.tracking_uri: the MLflow server at {shown} failed (HTTP {status})"
        )


class WorkerController(Controller):
    """A `Controller` that shares its study with other live controllers.

    Differences from ``tuner run``: its own state directory (``<name>.worker-<host>-<pid>``,
    so that several workers on one host do not take each other's lock); a plain (not
    exclusive) cached storage with heartbeats; recovery re-queues only *stale* trials (no
    heartbeat for ``grace`` s) instead of every RUNNING one, and ends only their MLflow runs;
    no importance analysis at the end (the last worker cannot know it is the last).
    """

    def __init__(
        self,
        config: CampaignConfig,
        *,
        storage: optuna.storages.BaseStorage,
        rdb: optuna.storages.RDBStorage,
        heartbeat: Heartbeat,
        lock: StudyLock,
        requeued: list[tuple[int, int]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(config, storage=storage, importance=False, **kwargs)
        self.requeued = requeued if requeued is not None else []
        tag = f"{config.name}.worker-{socket.gethostname()}-{os.getpid()}"
        self.campaign_dir = CampaignDir(config.base_dir, tag)
        self.heartbeat = heartbeat
        self._rdb = rdb
        self._shared_lock = lock

    def _setup(self, previous: Mapping[str, Any]) -> None:
        # One worker at a time creates the study, the MLflow experiment and the campaign's
        # parent run; the others then find them (no duplicate parent runs, no create races).
        with self._shared_lock.hold():
            super()._setup(previous)
        assert self.study is not None
        # Workers built from one config would share sampler.seed and propose the same
        # parameters in lockstep; a shared study is not reproducible anyway.
        self.study.sampler.reseed_rng()

    def _recover(self, previous: Mapping[str, Any]) -> None:
        assert self.study is not None
        moved = requeue_and_close(self.study, self._rdb, self._shared_lock, self._recorder)
        for old, new in moved:
            self._observer.message(
                f"trial {old}: no heartbeat (its worker died); re-queued as trial {new}"
            )
        self.requeued.extend(moved)

    def _finalize(self, rt: RunningTrial, outcome: TrialOutcome) -> None:
        super()._finalize(rt, outcome)
        if self.heartbeat is not None:
            self.heartbeat.remove(rt.trial._trial_id)


def requeue_and_close(
    study: optuna.Study,
    rdb: optuna.storages.RDBStorage,
    lock: StudyLock,
    recorder: LineageRecorder | None,
    tracking_uri: str | None = None,
) -> list[tuple[int, int]]:
    """`requeue_stale`, then end the MLflow runs of the stale trials (FAILED, with why)
    through ``recorder``, else straight through an MLflow client on ``tracking_uri``."""
    moved = requeue_stale(study, rdb, lock)
    if not moved or (recorder is None and tracking_uri is None):
        return moved
    by_number = {t.number: t for t in study.get_trials(deepcopy=False)}
    for old, new in moved:
        frozen = by_number.get(old)
        launch = (frozen.user_attrs.get(LAUNCH_ATTR) if frozen else None) or {}
        run_id = launch.get("run_id")
        if not run_id:
            continue
        reason = str(frozen.system_attrs.get(STALE_ATTR, "stale")) if frozen else "stale"
        tags = {
            "tuner.state": "FAIL",
            "tuner.fail_reason": f"{reason} (as trial {new})",
            "tuner.retried_as": str(new),
        }
        if recorder is not None:
            recorder.trial_finished(run_id, status="FAILED", tags=tags, output_tail="")
            continue
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=tracking_uri)
        for key, value in tags.items():
            client.set_tag(run_id, key, value)
        client.set_terminated(run_id, "FAILED")
    return moved


@dataclass
class WorkerResult:
    rounds: int
    requeued: list[tuple[int, int]]
    counted: int
    budget: int


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
    default_interval, default_grace = default_timing()
    interval = interval or default_interval
    grace = grace or max(default_grace, 3 * interval)
    tracking = config.tracking_uri()
    check_tracking_access(tracking)
    url = config.optuna_storage_url()
    if url.startswith("sqlite") and CampaignDir(config.base_dir, config.name).controller_alive():
        raise TunerError(
            f"{config.source_path or config.name}: a `tuner run` controller holds this SQLite "
            "campaign and caches its study in memory; start every controller of a shared "
            "campaign with `tuner worker` (or use a PostgreSQL storage)"
        )
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
    rounds = 0
    try:
        while True:
            rounds += 1
            controller = WorkerController(
                config,
                storage=storage,
                rdb=rdb,
                heartbeat=heartbeat,
                lock=lock,
                requeued=requeued,
                observer=observer,
                executor=executor_factory() if executor_factory else None,
            )
            controller.run()
            assert controller.study is not None
            study = controller.study
            if not study_box:
                study_box.append(optuna.load_study(study_name=config.study_name, storage=rdb))
            while True:
                states = {t.state for t in study.get_trials(deepcopy=False)}
                if optuna.trial.TrialState.WAITING in states:
                    break  # re-queued work: another round
                if optuna.trial.TrialState.RUNNING not in states:
                    return WorkerResult(
                        rounds, requeued, counted_trials(study), config.budget.trials
                    )
                # Others still run trials; stay to re-queue them if their worker dies.
                time.sleep(interval)
                requeued.extend(requeue_and_close(study_box[0], rdb, lock, None, tracking))
    finally:
        heartbeat.stop()
        lock.close()
