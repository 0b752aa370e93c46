"""The Optuna study of a campaign, on its RDB storage, fast enough for 1,000s of trials.

Two things make stock ask/tell on SQLite slow: every commit waits for an fsync (rollback
journal), and Optuna's cached storage re-reads unfinished trials from the database on every
``get_all_trials``, which samplers and pruners call several times per trial.

- SQLite storages are opened in WAL mode with ``synchronous=NORMAL``: a commit is durable
  against a process crash (kill -9) and needs no fsync; only a power cut may lose the last
  transactions. WAL also lets `tuner status` read while the controller writes.
- `tuner.search._cache.ExclusiveCachedStorage` keeps the study's trials in memory for a
  process that is the study's only writer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import optuna
from optuna.storages import BaseStorage, RDBStorage

from tuner._errors import ConfigError, StorageUnavailable, TunerError
from tuner.search._registry import SamplerPlan
from tuner.search._storage_errors import storage_unavailable

if TYPE_CHECKING:
    from tuner._errors import ErrorAt
    from tuner.search._shapes import CampaignShape as CampaignConfig
    from tuner.search._shapes import PrunerShape as PrunerConfig

__all__ = [
    "StorageUnavailable",
    "StudyPlan",
    "check_storage",
    "create_rdb",
    "create_study",
    "open_storage",
    "sqlite_pragmas",
    "storage_unavailable",
]


def check_storage(url: str, field: str = "storage") -> None:
    """Connect to the database at ``url`` once, creating nothing (no table, no SQLite file:
    a SQLite URL is not checked); `StorageUnavailable` when that fails. A database that is
    restarting is waited for (`tuner.search._resilient.starting`)."""
    if url.startswith("sqlite"):
        return
    import sqlalchemy

    from tuner.search._resilient import starting

    def connect() -> None:
        engine = sqlalchemy.create_engine(url, poolclass=sqlalchemy.pool.NullPool)
        try:
            with engine.connect():
                pass
        finally:
            engine.dispose()

    try:
        starting(connect, url)
    except Exception as exc:
        error = storage_unavailable(exc, url, field)
        if error is None:
            raise
        raise error from None


def create_rdb(url: str, **kwargs: Any) -> RDBStorage:
    """``RDBStorage(url, **kwargs)`` that survives the database's faults
    (`tuner.search._resilient.ResilientRDBStorage`: lost connections are retried with
    backoff, a full disk is one line), and a race to create Optuna's tables; a database that
    cannot be opened raises `StorageUnavailable` (one line, the fix in it).

    The first client of an empty database creates the tables. Clients doing so at once (a
    worker starting while `tuner status` or a notebook's ``load_study`` opens the same
    database) take turns under `lineage.store.schema_lock`, so each finds the tables whole.
    A client that does not take it (Optuna alone) may still make one of them fail with
    "already exists" or a duplicate key; by then the other has created them, so a second
    attempt finds them. A connection lost meanwhile is retried the same way."""
    import time

    from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

    from lineage.store import schema_lock
    from tuner.search._resilient import ResilientRDBStorage, is_disconnect, starting

    def open_locked() -> RDBStorage:
        with schema_lock(url, "optuna"):
            return ResilientRDBStorage(url, **kwargs)

    full_until = time.monotonic() + _FULL_WAIT_S
    attempt = 0
    while True:
        try:
            return starting(open_locked, url)
        except (IntegrityError, OperationalError, ProgrammingError) as exc:
            text = str(exc).lower()
            # A connection dropped while the tables are checked is tried again, briefly (a
            # server that is not there at all is reported within seconds). A server with no
            # session to spare (as many clients as max_connections) is there and frees one
            # as soon as any client closes: that is waited for longer.
            full = any(t in text for t in _FULL_TEXT)
            retried = "already exists" in text or "duplicate key" in text or is_disconnect(exc)
            out = time.monotonic() >= full_until if full else attempt >= 4
            if out or not (retried or full):
                error = storage_unavailable(exc, url)
                if error is None:
                    raise
                raise error from None
            attempt += 1
            time.sleep(min(0.2 * attempt, 2.0))
        except Exception as exc:  # NoSuchModuleError, ArgumentError: no such driver or URL
            error = storage_unavailable(exc, url)
            if error is None:
                raise
            raise error from None


#: What PostgreSQL says when every session it allows is taken (``max_connections``).
_FULL_TEXT = ("too many clients", "remaining connection slots are reserved")
#: How long opening the study waits for such a server to free a session.
_FULL_WAIT_S = 60.0


def sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def open_storage(url: str, *, exclusive: bool) -> BaseStorage:
    """An RDB storage for ``url``; wrapped in `ExclusiveCachedStorage` when ``exclusive``."""
    is_sqlite = url.startswith("sqlite")
    engine_kwargs: dict[str, Any] = {}
    if is_sqlite:
        engine_kwargs["connect_args"] = {"timeout": 60}
    rdb = create_rdb(url, engine_kwargs=engine_kwargs)
    if is_sqlite:
        from sqlalchemy import event

        event.listen(rdb.engine, "connect", sqlite_pragmas)
        rdb.engine.dispose()  # connections made during migration lack the pragmas
    if exclusive:
        from tuner.search._cache import ExclusiveCachedStorage

        return ExclusiveCachedStorage(rdb)
    return optuna.storages.get_storage(rdb)


@dataclass(frozen=True)
class StudyPlan:
    """What making a campaign's study reads of its config."""

    #: The study's name and its storage's URL (for messages: the storage is given).
    name: str
    storage_url: str
    #: Optuna directions, one per objective (``["minimize"]``).
    directions: Sequence[str]
    #: The sampler (`tuner.search.make_sampler`) and the ``pruner:`` section.
    sampler: SamplerPlan
    pruner: PrunerConfig
    #: Phrases the one-line error at ``pruner.options``.
    error: ErrorAt

    @classmethod
    def of(cls, config: CampaignConfig) -> StudyPlan:
        """The plan of ``config``'s study. It takes the whole config because this is where
        what the study reads is cut out of it; nothing past it does."""
        return cls(
            name=config.study_name,
            storage_url=config.optuna_storage_url(),
            directions=list(config.directions),
            sampler=SamplerPlan.of(config),
            pruner=config.pruner,
            error=config.error,
        )


def create_study(plan: StudyPlan, storage: BaseStorage) -> optuna.Study:
    """The campaign's study in ``storage``: created, or loaded when it exists with the
    directions the plan asks for (`ConfigError` otherwise)."""
    from tuner.search._registry import controller_seed, make_pruner, make_sampler

    url = plan.storage_url
    directions = list(plan.directions)
    try:
        study = optuna.create_study(
            storage=storage,
            study_name=plan.name,
            directions=directions,  # type: ignore[arg-type]
            sampler=make_sampler(plan.sampler),
            pruner=make_pruner(plan.pruner, error=plan.error),
            load_if_exists=True,
        )
    except ValueError as exc:
        raise TunerError(f"Optuna storage {url}: {exc}") from None
    have = [d.name.lower() for d in study.directions]
    if have != directions:
        raise ConfigError(
            f"Optuna storage {url}: study {plan.name!r} exists with directions "
            f"{have}, but the config asks for {directions}; use another name"
        )
    seed = plan.sampler.section.seed
    if seed is not None:
        # A seeded sampler restarts its sequence in every process: a resumed controller, or a
        # second worker, would propose the first one's parameters again. Each controller to
        # open the study counts itself (under the setup lock where several share it) and
        # seeds from the count; the first keeps the seed, so a fresh campaign is reproducible.
        from tuner.search._attrs import SAMPLER_STARTS_ATTR

        starts = int(study.user_attrs.get(SAMPLER_STARTS_ATTR, 0))
        study.set_user_attr(SAMPLER_STARTS_ATTR, starts + 1)
        if starts:
            study.sampler = make_sampler(plan.sampler, seed=controller_seed(seed, starts))
    return study
