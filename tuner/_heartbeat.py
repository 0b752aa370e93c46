"""Many controllers on one study: an exact trial budget, heartbeats, and stale-trial recovery.

Optuna's own heartbeat runs only inside ``study.optimize``. The tuner drives trials with
ask/tell, so it records the heartbeats itself, into Optuna's ``trial_heartbeats`` table through
`optuna.storages.RDBStorage.record_heartbeat` (the storage is built with ``heartbeat_interval``
and ``grace_period``; the timestamps are the database's clock, so hosts need not agree on time).

How N workers finish exactly ``budget.trials`` trials, none twice, none lost:

- A new trial is created only under the study lock (`StudyLock`: ``pg_advisory_lock`` on
  PostgreSQL, ``GET_LOCK`` on MySQL, an ``flock`` beside the SQLite file), after counting the
  study's trials in every state except *superseded* ones (stale trials that were re-queued).
  Inside the same lock the new trial gets its first heartbeat, so no RUNNING trial is ever
  without one.
- A re-queued trial is a WAITING trial with the same parameters; ``study.ask`` pops WAITING
  trials atomically (a compare-and-set on the trial state), so exactly one worker takes it.
- `requeue_stale` (any worker, every heartbeat interval; and ``tuner resume``) finds RUNNING
  trials whose heartbeat is older than the grace period, marks them ``tuner:stale`` and FAIL,
  and adds the WAITING copy, all under the lock. The FAIL trial stays in the study for the
  record, with the reason, and no longer counts against the budget.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna

__all__ = [
    "RETRY_OF_ATTR",
    "STALE_ATTR",
    "Heartbeat",
    "StudyLock",
    "ask_within_budget",
    "counted_trials",
    "default_timing",
    "heartbeat_storage",
    "live_trial_ids",
    "requeue_stale",
]

#: System attribute on a stale trial that was failed and re-queued (value: the reason).
STALE_ATTR = "tuner:stale"
#: System attribute on a re-queued trial: the number of the trial it replaces.
RETRY_OF_ATTR = "tuner:retry_of"


#: Defaults: a heartbeat every 5 s; a trial without one for 30 s is stale. Override with
#: ``TUNER_HEARTBEAT_INTERVAL`` / ``TUNER_HEARTBEAT_GRACE`` (seconds) or `tuner worker` flags.
DEFAULT_INTERVAL = 5
DEFAULT_GRACE = 30


def default_timing() -> tuple[int, int]:
    """``(interval, grace)`` in seconds from the environment, else the defaults."""
    interval = int(os.environ.get("TUNER_HEARTBEAT_INTERVAL") or DEFAULT_INTERVAL)
    grace = int(os.environ.get("TUNER_HEARTBEAT_GRACE") or max(DEFAULT_GRACE, 3 * interval))
    return max(1, interval), max(1, grace)


def heartbeat_storage(url: str, *, interval: int, grace: int) -> optuna.storages.RDBStorage:
    """An Optuna RDB storage that records and checks heartbeats (``interval``, ``grace`` in s).

    SQLite files get the same WAL settings as `tuner._study.open_storage`.
    """
    import optuna

    from tuner._study import _sqlite_pragmas, create_rdb

    is_sqlite = url.startswith("sqlite")
    kwargs: dict[str, Any] = {"connect_args": {"timeout": 60}} if is_sqlite else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        storage = create_rdb(
            url,
            engine_kwargs=kwargs,
            heartbeat_interval=max(1, int(interval)),
            grace_period=max(1, int(grace)),
        )
    if is_sqlite:
        from sqlalchemy import event

        event.listen(storage.engine, "connect", _sqlite_pragmas)
        storage.engine.dispose()
    return storage


def live_trial_ids(url: str, study_name: str, grace: int) -> set[int]:
    """Ids of the study's RUNNING trials whose heartbeat is fresher than ``grace`` s: some
    live worker drives them. Trials that never had a heartbeat are not live."""
    import datetime

    import sqlalchemy
    from optuna.storages._rdb import models
    from optuna.trial import TrialState

    engine = sqlalchemy.create_engine(url, poolclass=sqlalchemy.pool.NullPool)
    try:
        with sqlalchemy.orm.Session(engine) as session:
            study = session.query(models.StudyModel).filter_by(study_name=study_name).one_or_none()
            if study is None:
                return set()
            now = session.execute(sqlalchemy.func.now()).scalar_one().replace(tzinfo=None)
            rows = (
                session.query(
                    models.TrialHeartbeatModel.trial_id, models.TrialHeartbeatModel.heartbeat
                )
                .join(
                    models.TrialModel,
                    models.TrialModel.trial_id == models.TrialHeartbeatModel.trial_id,
                )
                .filter(models.TrialModel.study_id == study.study_id)
                .filter(models.TrialModel.state == TrialState.RUNNING)
                .all()
            )
    except sqlalchemy.exc.OperationalError:
        return set()  # no Optuna tables yet
    finally:
        engine.dispose()
    limit = datetime.timedelta(seconds=grace)
    return {tid for tid, beat in rows if now - beat.replace(tzinfo=None) <= limit}


class StudyLock:
    """A lock shared by every process (on any host) that drives one study.

    Re-entrant within a process is not supported; hold it briefly (a count and an ask).
    """

    def __init__(self, url: str, study_name: str) -> None:
        self._url = url
        self._key = int.from_bytes(hashlib.sha256(study_name.encode()).digest()[:8], "big") >> 1
        self._name = "tuner:" + hashlib.sha256(study_name.encode()).hexdigest()[:40]
        scheme = url.split(":", 1)[0].split("+", 1)[0].lower()
        self._kind = scheme if scheme in {"postgresql", "postgres", "mysql", "sqlite"} else ""
        self._engine: Any = None
        self._local = threading.Lock()

    def _sqlite_path(self) -> Path:
        path = self._url.split(":///", 1)[1].split("?", 1)[0]
        return Path(path + ".tuner-lock")

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        with self._local:
            if self._kind == "sqlite":
                with open(self._sqlite_path(), "a+b") as f:
                    fcntl.flock(f, fcntl.LOCK_EX)
                    try:
                        yield
                    finally:
                        fcntl.flock(f, fcntl.LOCK_UN)
                return
            if not self._kind:
                yield
                return
            import sqlalchemy

            if self._engine is None:
                # One pooled connection, kept: a new PostgreSQL session per trial would cost
                # more than the lock itself.
                self._engine = sqlalchemy.create_engine(
                    self._url, pool_size=1, max_overflow=0, pool_pre_ping=True
                )
            with self._engine.connect() as conn:
                if self._kind == "mysql":
                    lock = sqlalchemy.text("SELECT GET_LOCK(:k, 3600)")
                    unlock = sqlalchemy.text("SELECT RELEASE_LOCK(:k)")
                    key: Any = self._name
                else:
                    lock = sqlalchemy.text("SELECT pg_advisory_lock(:k)")
                    unlock = sqlalchemy.text("SELECT pg_advisory_unlock(:k)")
                    key = self._key
                conn.execute(lock, {"k": key})
                conn.commit()
                try:
                    yield
                finally:
                    conn.execute(unlock, {"k": key})
                    conn.commit()

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()


def counted_trials(study: optuna.Study) -> int:
    """Trials that count against the budget: all, in any state, except superseded ones."""
    trials = study.get_trials(deepcopy=False)
    return sum(1 for t in trials if STALE_ATTR not in t.system_attrs)


def ask_within_budget(
    study: optuna.Study,
    budget: int,
    lock: StudyLock,
    heartbeat: Heartbeat | None = None,
    fixed_distributions: dict[str, Any] | None = None,
) -> optuna.Trial | None:
    """``study.ask()`` unless the study already holds ``budget`` counted trials (then None).

    A WAITING (re-queued or enqueued) trial is always taken first, whatever the count. The
    trial's first heartbeat is recorded before the lock is released.
    """
    import optuna

    with lock.hold():
        waiting = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.WAITING,))
        if not waiting and counted_trials(study) >= budget:
            return None
        with warnings.catch_warnings():
            # "Heartbeat of storage is supposed to be used with Study.optimize": this module
            # records the heartbeats that optimize would.
            warnings.filterwarnings("ignore", message="Heartbeat of storage")
            trial = study.ask(fixed_distributions)
        if heartbeat is not None:
            heartbeat.add(trial._trial_id)
        return trial


class Heartbeat:
    """A daemon thread that records a heartbeat every ``interval`` s for the trials added.

    ``add``/``remove`` are thread-safe. ``lost`` holds ids of trials that were found finished
    by someone else (re-queued as stale); the controller should stop their processes.
    """

    def __init__(
        self, storage: optuna.storages.RDBStorage, on_beat: Callable[[], Any] | None = None
    ) -> None:
        interval = storage.get_heartbeat_interval()
        if interval is None:
            raise ValueError("Heartbeat needs a storage made with heartbeat_interval")
        self._storage = storage
        self._on_beat = on_beat
        self.interval = float(interval)
        self._ids: set[int] = set()
        self.lost: set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="tuner-heartbeat", daemon=True)

    def add(self, trial_id: int) -> None:
        self._storage.record_heartbeat(trial_id)
        with self._lock:
            self._ids.add(trial_id)

    def remove(self, trial_id: int) -> None:
        with self._lock:
            self._ids.discard(trial_id)

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self.interval + 5)

    def beat(self) -> None:
        """Record one heartbeat for every trial held now (the thread calls this)."""
        import optuna

        with self._lock:
            ids = sorted(self._ids)
        for trial_id in ids:
            try:
                trial = self._storage.get_trial(trial_id)
                if trial.state != optuna.trial.TrialState.RUNNING:
                    with self._lock:
                        self._ids.discard(trial_id)
                        if STALE_ATTR in trial.system_attrs:
                            self.lost.add(trial_id)
                    continue
                self._storage.record_heartbeat(trial_id)
            except Exception:
                continue

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.beat()
            if self._on_beat is not None:
                try:
                    self._on_beat()
                except Exception:
                    continue


def requeue_stale(
    study: optuna.Study, storage: optuna.storages.RDBStorage, lock: StudyLock
) -> list[tuple[int, int]]:
    """Fail every RUNNING trial of ``study`` whose heartbeat is older than the grace period and
    add a WAITING copy with the same parameters. Returns ``[(stale_number, new_number)]``.

    ``study`` must use ``storage`` (made by `heartbeat_storage`). Safe to call from any number of
    processes at once: each stale trial is re-queued exactly once.
    """
    import optuna

    grace = storage.grace_period or 2 * (storage.get_heartbeat_interval() or 1)
    done: list[tuple[int, int]] = []
    with lock.hold():
        for trial_id in storage._get_stale_trial_ids(study._study_id):
            old = storage.get_trial(trial_id)
            reason = (
                f"no heartbeat for more than {grace}s: the worker running it died or lost the "
                f"database; re-queued with the same parameters"
            )
            try:
                storage.set_trial_system_attr(trial_id, STALE_ATTR, reason)
                if not storage.set_trial_state_values(trial_id, optuna.trial.TrialState.FAIL):
                    continue
            except optuna.exceptions.UpdateFinishedTrialError:
                continue  # its worker finished it after all
            history = [*old.system_attrs.get("tuner:retry_history", []), old.number]
            system_attrs = {k: v for k, v in old.system_attrs.items() if not k.startswith("tuner:")}
            system_attrs.update({RETRY_OF_ATTR: old.number, "tuner:retry_history": history})
            study.add_trial(
                optuna.trial.create_trial(
                    state=optuna.trial.TrialState.WAITING,
                    params=old.params,
                    distributions=old.distributions,
                    user_attrs=old.user_attrs,
                    system_attrs=system_attrs,
                )
            )
            new = max(t.number for t in study.get_trials(deepcopy=False))
            done.append((old.number, new))
    return done
