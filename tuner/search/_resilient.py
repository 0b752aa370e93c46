"""A study storage that outlives its database's faults: dropped connections, a restart, a
full disk.

Optuna's `RDBStorage` raises on the first lost connection (``OperationalError:
(psycopg.errors.AdminShutdown) terminating connection ...``), so one PostgreSQL restart used
to end every controller of a campaign. `ResilientRDBStorage` retries each storage call with
capped exponential backoff while the database is unreachable, and says so in one line per
outage (`Outage`); the pool pings a connection before lending it, so an idle connection
that the server dropped is replaced without an error at all. A call the database answers
with anything else (a bad value, a finished trial) raises at once, as before.

A SQLite study on a full disk raises `DiskFull`: one line naming the file, the free space
there and the space needed; nothing is retried (the transaction was rolled back whole).
Which fault an exception is, is told by `tuner.search._faults`.

Retried writes are safe to repeat: a failed transaction was rolled back by the server. The
one window that is not covered is a commit that the server applied just as the connection
died (its answer lost): a state change repeated then finds the trial already in that state
and is taken as done; a created trial would be created twice (see docs/design.md).
"""

from __future__ import annotations

import functools
import logging
import os
import random
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import optuna
from optuna.storages import RDBStorage

from tuner._errors import StorageUnavailable, TunerError
from tuner.search._faults import (
    DISCONNECT_TEXT,
    DiskFull,
    driver_reason,
    exception_chain,
    is_disconnect,
    is_disk_full,
    is_restarting,
)

__all__ = [
    "DiskFull",
    "Outage",
    "ResilientRDBStorage",
    "exception_chain",
    "is_disconnect",
    "is_disk_full",
    "is_restarting",
    "outage_for",
    "retrying",
    "set_outage_sink",
    "starting",
]

T = TypeVar("T")

#: How long a call waits for the database to come back before the controller gives up
#: (seconds; ``TUNER_DB_OUTAGE_TIMEOUT``).
DEFAULT_OUTAGE_TIMEOUT = 600.0
#: An outage shorter than this is reported in one line once it is over; a longer one is
#: reported when it reaches this age, and again when it ends.
ANNOUNCE_AFTER = 2.0
_FIRST_DELAY, _MAX_DELAY = 0.05, 2.0


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


_sink: Callable[[str], Any] = _say


def set_outage_sink(sink: Callable[[str], Any] | None) -> None:
    """Where outage lines go (default: stderr); None restores the default."""
    global _sink
    _sink = sink or _say


class Outage:
    """The state of one database as this process sees it, shared by all its threads (the
    controller's loop, the heartbeat thread, the study lock), so one outage is one report.

    Thread-safe."""

    def __init__(self, url: str) -> None:
        from lineage.uri import masked

        self.label = masked(url)
        self._lock = threading.Lock()
        self._since: float | None = None
        self._reason = ""
        self._announced = False
        self._ended: float | None = None
        self.count = 0  # outages seen (for tests and benchmarks)

    @property
    def down(self) -> bool:
        return self._since is not None

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            now = time.monotonic()
            if self._since is None:
                self._since, self._reason, self._announced = now, driver_reason(exc), False
                self.count += 1
            if not self._announced and now - self._since >= ANNOUNCE_AFTER:
                self._announced = True
                _sink(
                    f"study database {self.label}: connection lost ({self._reason}); "
                    f"reconnecting with backoff for up to {outage_timeout():g}s"
                )

    def recovered(self) -> None:
        with self._lock:
            if self._since is None:
                return
            now = time.monotonic()
            took = now - self._since
            if self._announced:
                _sink(f"study database {self.label}: reconnected after {took:.1f}s")
            else:
                _sink(
                    f"study database {self.label}: connection lost ({self._reason}); "
                    f"reconnected after {took:.1f}s"
                )
            self._since, self._ended = None, now

    def quiet_for(self) -> float:
        """Seconds since the last outage ended (0 while one lasts, infinite if none)."""
        with self._lock:
            if self._since is not None:
                return 0.0
            return float("inf") if self._ended is None else time.monotonic() - self._ended


_outages: dict[str, Outage] = {}
_outages_lock = threading.Lock()


def outage_for(url: str) -> Outage:
    """The one `Outage` of ``url`` in this process."""
    with _outages_lock:
        if url not in _outages:
            _outages[url] = Outage(url)
        return _outages[url]


def outage_timeout() -> float:
    try:
        return float(os.environ.get("TUNER_DB_OUTAGE_TIMEOUT") or DEFAULT_OUTAGE_TIMEOUT)
    except ValueError:
        return DEFAULT_OUTAGE_TIMEOUT


def retrying(call: Callable[[], T], outage: Outage) -> T:
    """``call()``, repeated with capped exponential backoff (and jitter) while it fails
    because the database is unreachable; `StorageUnavailable` (exit 1) once that lasted
    `outage_timeout` seconds. Other errors propagate at once."""
    delay = _FIRST_DELAY
    deadline: float | None = None
    while True:
        try:
            result = call()
        except Exception as exc:
            if not is_disconnect(exc):
                raise
            outage.failed(exc)
            now = time.monotonic()
            if deadline is None:
                deadline = now + outage_timeout()
            if now >= deadline:
                raise StorageUnavailable(
                    f"study database {outage.label}: unreachable for {outage_timeout():g}s "
                    f"({driver_reason(exc)}); trials that ended meanwhile keep their results in the "
                    "lineage store; continue the campaign once it is back (tuner resume / "
                    "tuner worker)"
                ) from None
            time.sleep(min(delay * (0.5 + random.random()), max(0.0, deadline - now)))
            delay = min(delay * 2, _MAX_DELAY)
            continue
        if outage.down:
            outage.recovered()
        return result


def starting(call: Callable[[], T], url: str, window: float = 30.0) -> T:
    """``call()`` when a controller starts: retried with backoff for up to ``window`` s while
    the database is restarting (`is_restarting`); anything else raises at once."""
    delay, deadline = 0.2, time.monotonic() + window
    outage = outage_for(url)
    while True:
        try:
            result = call()
        except Exception as exc:
            if not is_restarting(exc) or time.monotonic() >= deadline:
                raise
            outage.failed(exc)
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, _MAX_DELAY)
            continue
        if outage.down:
            outage.recovered()
        return result


class _QuietFallback(logging.Filter):
    """Optuna logs a lost connection during ``_get_trials`` (raw SQL and all) before it
    retries with another query: the outage is reported once, by `Outage`, instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if not text.startswith("Caught an error from sqlalchemy"):
            return True
        return not any(t in text.lower() for t in DISCONNECT_TEXT)


logging.getLogger("optuna.storages._rdb.storage").addFilter(_QuietFallback())


_RETRIED = (
    "create_new_study",
    "delete_study",
    "set_study_user_attr",
    "set_study_system_attr",
    "get_study_id_from_name",
    "get_study_name_from_id",
    "get_study_directions",
    "get_study_user_attrs",
    "get_study_system_attrs",
    "get_all_studies",
    "_create_new_trial",
    "set_trial_param",
    "_set_trial_param",
    "get_trial_param",
    "set_trial_intermediate_value",
    "set_trial_user_attr",
    "set_trial_system_attr",
    "get_trial_user_attrs",
    "get_trial_system_attrs",
    "get_trial_id_from_study_id_trial_number",
    "get_trial",
    "get_all_trials",
    "_get_trials",
    "get_best_trial",
    "_get_best_trial_id",
    "get_n_trials",
    "record_heartbeat",
    "_get_stale_trial_ids",
)


class ResilientRDBStorage(RDBStorage):
    """`optuna.storages.RDBStorage` whose every call survives a lost connection (see the
    module's text). Same constructor; a server database's pool pings before lending.

    Thread- and process-safety are Optuna's. A call blocks while its database is down (at most
    ``TUNER_DB_OUTAGE_TIMEOUT`` s, then `StorageUnavailable`)."""

    def __init__(self, url: str, engine_kwargs: dict[str, Any] | None = None, **kwargs: Any):
        engine_kwargs = dict(engine_kwargs or {})
        self.sqlite_path: Path | None = None
        if url.startswith("sqlite"):
            tail = url.split(":///", 1)[1].split("?", 1)[0] if ":///" in url else ""
            self.sqlite_path = Path(tail) if tail and tail != ":memory:" else None
        else:
            engine_kwargs.setdefault("pool_pre_ping", True)
        self.outage = outage_for(url)
        self._depth = threading.local()
        super().__init__(url, engine_kwargs=engine_kwargs, **kwargs)

    def __getstate__(self) -> dict[Any, Any]:
        state = super().__getstate__()
        state.pop("_depth", None)
        state.pop("outage", None)
        return state

    def __setstate__(self, state: dict[Any, Any]) -> None:
        super().__setstate__(state)
        self._depth = threading.local()
        self.outage = outage_for(self.url)

    def _guarded(self, name: str, call: Callable[[], T]) -> T:
        # Only the outermost call retries (get_best_trial calls get_trial, ...).
        if getattr(self._depth, "n", 0):
            return call()
        self._depth.n = 1
        try:
            return retrying(call, self.outage)
        except TunerError:
            raise
        except Exception as exc:
            if self.sqlite_path is not None and is_disk_full(exc):
                raise DiskFull.at(self.sqlite_path, "the Optuna study") from None
            raise
        finally:
            self._depth.n = 0

    def set_trial_state_values(
        self,
        trial_id: int,
        state: optuna.trial.TrialState,
        values: Sequence[float] | None = None,
    ) -> bool:
        tries = [0]

        def call() -> bool:
            tries[0] += 1
            try:
                return bool(RDBStorage.set_trial_state_values(self, trial_id, state, values))
            except optuna.exceptions.UpdateFinishedTrialError:
                # A retry after a commit whose answer was lost: already done.
                if (
                    tries[0] > 1
                    and state.is_finished()
                    and RDBStorage.get_trial(self, trial_id).state == state
                ):
                    return True
                raise

        return self._guarded("set_trial_state_values", call)


def _wrap(name: str) -> Callable[..., Any]:
    base = getattr(RDBStorage, name)

    @functools.wraps(base)
    def method(self: ResilientRDBStorage, *args: Any, **kwargs: Any) -> Any:
        return self._guarded(name, lambda: base(self, *args, **kwargs))

    return method


for _name in _RETRIED:
    setattr(ResilientRDBStorage, _name, _wrap(_name))
