"""Heartbeats of the trials a worker runs, recorded into Optuna's ``trial_heartbeats`` table.

Optuna's own heartbeat runs only inside ``study.optimize``. The tuner drives trials with
ask/tell, so it records the heartbeats itself through `optuna.storages.RDBStorage.record_heartbeat`
(the storage is built with ``heartbeat_interval`` and ``grace_period``; the timestamps are the
database's clock, so hosts need not agree on time). A RUNNING trial gets its first heartbeat
under the study lock, in the same breath as its creation (`tuner.coordination._budget`), so no
RUNNING trial is ever without one; `tuner.coordination._recovery.requeue_stale` re-queues the
trials whose heartbeat is older than the grace period.
"""

from __future__ import annotations

import datetime
import logging
import os
import socket
import threading
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lineage.trials import MISSED_ATTR
from tuner._errors import ConfigError
from tuner.search import STALE_ATTR, internals

if TYPE_CHECKING:
    import optuna

_log = logging.getLogger(__name__)


__all__ = [
    "DEFAULT_GRACE",
    "DEFAULT_INTERVAL",
    "Heartbeat",
    "default_timing",
    "heartbeat_storage",
    "heartbeat_timing",
    "live_trial_ids",
]

#: Defaults: a heartbeat every 5 s; a trial without one for 30 s (and at least three
#: intervals) is stale.
DEFAULT_INTERVAL = 5
DEFAULT_GRACE = 30


def heartbeat_timing(
    interval: int | None = None,
    grace: int | None = None,
    *,
    section: Any = None,
    source: str | None = None,
) -> tuple[int, int]:
    """``(interval, grace)`` in seconds, each from the first that gives it: the flags
    (``interval``, ``grace``: ``--heartbeat``, ``--stale-after``), the environment
    (``TUNER_HEARTBEAT_INTERVAL``, ``TUNER_HEARTBEAT_GRACE``), the campaign's ``heartbeat:``
    section (``section``), the defaults. The default grace is max(30, 3 x interval).
    `tuner run`, `tuner resume` and `tuner worker` all resolve it so.

    The pair is checked as resolved, wherever each came from: a grace that is not longer than
    the interval would find every live trial stale between two beats and re-queue it. That,
    or an environment value that is not a whole number of seconds >= 1, is a `ConfigError`
    naming both sources (prefixed by ``source``, the config file, when given)."""
    picked_interval = _pick(
        ("--heartbeat", interval),
        ("TUNER_HEARTBEAT_INTERVAL", _env_seconds("TUNER_HEARTBEAT_INTERVAL", source)),
        ("heartbeat.interval", getattr(section, "interval", None)),
        ("the default", DEFAULT_INTERVAL),
    )
    every = picked_interval[1]
    where, seconds = _pick(
        ("--stale-after", grace),
        ("TUNER_HEARTBEAT_GRACE", _env_seconds("TUNER_HEARTBEAT_GRACE", source)),
        ("heartbeat.grace", getattr(section, "grace", None)),
        (f"the default, max({DEFAULT_GRACE}, 3 x interval)", max(DEFAULT_GRACE, 3 * every)),
    )
    if seconds <= every:
        prefix = f"{source}: " if source else ""
        raise ConfigError(
            f"{prefix}the heartbeat grace ({where}) must be > the heartbeat interval "
            f"{every} s ({picked_interval[0]}), got {seconds}"
        )
    return every, seconds


def _pick(*candidates: tuple[str, int | None]) -> tuple[str, int]:
    """The first candidate ``(where, seconds)`` that gives a value, at least 1 s."""
    for where, value in candidates:
        if value:
            return where, max(1, int(value))
    raise AssertionError("the last candidate is a default")


def _env_seconds(name: str, source: str | None) -> int | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"{name} must be a whole number of seconds >= 1, got {text!r}")
    return value


def default_timing() -> tuple[int, int]:
    """``(interval, grace)`` from the environment, else the defaults (no flags, no config)."""
    return heartbeat_timing()


def heartbeat_storage(url: str, *, interval: int, grace: int) -> optuna.storages.RDBStorage:
    """An Optuna RDB storage that records and checks heartbeats (``interval``, ``grace`` in s).

    SQLite files get the same WAL settings as `tuner.search.open_storage`.
    """
    import optuna

    from tuner.search import create_rdb, sqlite_pragmas

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

        event.listen(storage.engine, "connect", sqlite_pragmas)
        storage.engine.dispose()
    return storage


def live_trial_ids(url: str, study_name: str, grace: int) -> set[int]:
    """Ids of the study's RUNNING trials whose heartbeat is fresher than ``grace`` s: some
    live worker drives them. Trials that never had a heartbeat are not live."""
    found = internals.running_heartbeats(url, study_name)
    if found is None:
        return set()
    now, rows = found
    limit = datetime.timedelta(seconds=grace)
    return {tid for tid, beat in rows if now - beat <= limit}


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
        #: Heartbeat writes that failed (a trial whose writes fail past the grace period is
        #: re-queued by another worker), and the last failure in one line.
        self.missed = 0
        self.last_error: str | None = None
        self._missed_stored = 0
        #: Failures of the ``on_beat`` hook, and the last one.
        self.hook_failures = 0
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

    def take_lost(self) -> set[int]:
        """The ids found re-queued by another process since the last call (each once)."""
        with self._lock:
            lost, self.lost = self.lost, set()
        return lost

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
        recorded = None
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
                recorded = trial_id
            except Exception as exc:  # counted and logged; the next beat tries again
                self._missed(trial_id, exc)
                continue
        if recorded is not None and self.missed > self._missed_stored:
            self._store_missed(recorded)

    def _store_missed(self, trial_id: int) -> None:
        """Record the failed heartbeat writes in the study (``tuner status`` shows them), once
        the storage takes writes again."""
        key = f"{MISSED_ATTR}:{socket.gethostname()}:{os.getpid()}"
        value = {
            "count": self.missed,
            "last": self.last_error,
            "at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        }
        try:
            study_id = internals.study_id_of_trial(self._storage, trial_id)
            self._storage.set_study_system_attr(study_id, key, value)
        except Exception as exc:  # counted: the next successful beat writes it again
            self._missed(trial_id, exc)
            return
        self._missed_stored = self.missed

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.beat()
            if self._on_beat is not None:
                try:
                    self._on_beat()
                except Exception as exc:  # counted and logged; the hook runs again next beat
                    self.hook_failures += 1
                    self.last_error = f"{type(exc).__name__}: {exc}"
                    _log.warning("heartbeat hook failed: %s", self.last_error)
                    continue

    def _missed(self, trial_id: int, exc: Exception) -> None:
        with self._lock:
            self.missed += 1
            first = self.last_error is None
            self.last_error = f"trial id {trial_id}: {type(exc).__name__}: {exc}"
        if first or self.missed % 10 == 0:
            _log.warning(
                "heartbeat not recorded (%d so far; a trial without one is re-queued by another "
                "worker after the grace period): %s",
                self.missed,
                self.last_error,
            )
