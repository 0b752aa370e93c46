"""Batches written straight into MLflow's SQL tables (SQLite, PostgreSQL).

Stock ``MlflowClient.log_batch`` goes through the ORM and manages a few thousand points per
second; here one transaction per batch does an ``executemany`` into ``metrics``, one upsert
per metric key into ``latest_metrics``, and inserts/upserts into ``params`` and ``tags``.
The rows are the ones MLflow itself writes, so ``MlflowClient.get_run`` and
``get_metric_history`` read them back unchanged:

- NaN is stored as value 0 with ``is_nan`` true, +-Inf as +-1.7976931348623157e308;
- ``latest_metrics`` keeps, per key, the point with the greatest (step, timestamp, value),
  compared inside the database (``ON CONFLICT ... DO UPDATE ... WHERE``), so concurrent
  writers to one run cannot regress it;
- a point already stored (same key, timestamp, step, value) is skipped, as MLflow does.

Connections, transactions, placeholders, upserts and the schema check are the SQL layer's
(:mod:`lineage.store._sql_db`, one :class:`~lineage.store._dialect.Dialect` per database),
shared with the reader. The writer refuses to start unless the four tables it fills have
exactly the columns it knows (``SchemaMismatch``); the caller then falls back to
``MlflowClient.log_batch``. On SQLite, "database is locked" (several processes logging to
one file) is retried with backoff; the write lock is taken up front (``BEGIN IMMEDIATE``) so
two writers cannot deadlock upgrading.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

from lineage._errors import NotFoundError, StoreError, TransientError
from lineage._recording._writer import (
    Batch,
    RunInfo,
    Writer,
    WriteResult,
    latest_per_key,
    merge_params,
    sanitize,
)
from lineage.store import Connection, Dialect, SchemaMismatch, connect, map_error
from lineage.tags import MLFLOW_RUN_NAME

__all__ = ["SchemaMismatch", "SqlWriter"]

_LOCK_RETRY_S = 120.0
#: How long SQLite itself waits for another writer's lock before the retry loop takes over.
_BUSY_TIMEOUT_S = 1.0
T = TypeVar("T")

_INSERT_PARAM = Dialect.upsert("params", ("key", "value", "run_uuid"))
_UPSERT_TAG = Dialect.upsert(
    "tags", ("key", "value", "run_uuid"), key=("key", "run_uuid"), update=("value",)
)
_INSERT_POINT = Dialect.upsert(
    "metrics", ("key", "value", "timestamp", "run_uuid", "step", "is_nan")
)
_UPSERT_LATEST = Dialect.upsert(
    "latest_metrics",
    ("key", "value", "timestamp", "step", "is_nan", "run_uuid"),
    key=("key", "run_uuid"),
    update=("value", "timestamp", "step", "is_nan"),
    when="(excluded.step, excluded.timestamp, excluded.value) > "
    "(latest_metrics.step, latest_metrics.timestamp, latest_metrics.value)",
)


class SqlWriter(Writer):
    """Writes batches through one connection of the SQL layer (``sqlite3`` or ``psycopg``).

    Raises :class:`SchemaMismatch` (use ``MlflowClient``), :class:`~lineage.UsageError` (not
    an MLflow store), :class:`~lineage.NotFoundError` (no such SQLite file: the writer never
    creates one), :class:`~lineage.TransientError` (unreachable) or
    :class:`~lineage.StoreError` when it cannot start."""

    def __init__(self, uri: str) -> None:
        self._uri = uri
        self._conn: Connection | None = None
        self._give_up_at: float | None = None
        conn = self._connect()
        try:
            conn.check_schema(write=True)
        except BaseException:
            self.close()
            raise
        self.kind = f"sql:{conn.dialect.name}"

    # -- connection -------------------------------------------------------------------------
    def _connect(self) -> Connection:
        if self._conn is None:
            self._conn = connect(self._uri, write=True, timeout=_BUSY_TIMEOUT_S)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

    def read_run(self, run_id: str) -> RunInfo | None:
        """The run's experiment, status, params and tags; None when no such run exists."""
        conn = self._connect()
        try:
            with conn.snapshot():
                row = conn.rows(
                    "SELECT experiment_id, status, lifecycle_stage FROM runs WHERE run_uuid = ?",
                    (run_id,),
                )
                if not row:
                    return None
                params = conn.rows('SELECT "key", value FROM params WHERE run_uuid = ?', (run_id,))
                tags = conn.rows('SELECT "key", value FROM tags WHERE run_uuid = ?', (run_id,))
        except StoreError:
            raise
        except Exception as exc:
            raise map_error(conn.dialect, exc, f"cannot read run {run_id}") from exc
        head = row[0]
        return RunInfo(str(head[0]), str(head[1]), str(head[2]), dict(params), dict(tags))

    def set_status(self, run_id: str, status: str, end_time: int | None) -> bool:
        # MLflow's update_run_info: status always, end_time only when given, active runs only.
        sets = "status = ?"
        args: list[Any] = [status]
        if end_time is not None:
            sets += ", end_time = ?"
            args.append(end_time)
        self._statement(
            f"UPDATE runs SET {sets} WHERE run_uuid = ? AND lifecycle_stage = 'active'",
            (*args, run_id),
        )
        return True

    def set_start_time(self, run_id: str, start_ms: int) -> bool:
        self._statement(
            "UPDATE runs SET start_time = ? WHERE run_uuid = ? AND lifecycle_stage = 'active'",
            (start_ms, run_id),
        )
        return True

    def set_name(self, run_id: str, name: str) -> bool:
        # MLflow keeps the name in runs.name and in the mlflow.runName tag; both, as it does.
        self.write(run_id, Batch(tags={MLFLOW_RUN_NAME: name}))
        return True

    def retry_until(self, deadline: float | None) -> None:
        """Stop retrying a locked or busy database at ``deadline`` (``time.monotonic()``)
        rather than after ``_LOCK_RETRY_S``: a process that is stopping gives its last
        writes a bounded time. Safe to call from another thread than the writing one."""
        self._give_up_at = deadline

    def _retrying(self, attempt: Callable[[], T]) -> T:
        """``attempt()`` (connecting first if needed), again with jittered backoff while the
        database is locked or busy, for up to ``_LOCK_RETRY_S`` (or `retry_until`)."""
        deadline = time.monotonic() + _LOCK_RETRY_S
        if self._give_up_at is not None:
            deadline = min(deadline, self._give_up_at)
        delay = 0.01
        while True:
            try:
                return attempt()
            except TransientError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 1.0)

    def _statement(self, sql: str, args: tuple[Any, ...]) -> None:
        """One statement (``?`` placeholders) in its own transaction, retried while the
        database is busy."""

        def once() -> None:
            self._transaction(lambda conn, cur: cur.execute(conn.dialect.sql(sql), args))

        self._retrying(once)

    # -- writing ----------------------------------------------------------------------------
    def write(self, run_id: str, batch: Batch) -> WriteResult:
        return self._retrying(
            lambda: self._transaction(lambda conn, cur: self._apply(conn, cur, run_id, batch))
        )

    def _transaction(self, work: Callable[[Connection, Any], T]) -> T:
        """``work(conn, cursor)`` in one write transaction: committed, or rolled back and
        re-raised (a retryable driver error as :class:`TransientError`; a connection that
        broke is dropped and reopened by the next attempt)."""
        conn = self._connect()
        dialect = conn.dialect
        cur = conn.raw.cursor()
        try:
            dialect.begin_write(conn.raw)
            result = work(conn, cur)
            dialect.commit(conn.raw)
            return result
        except BaseException as exc:
            try:
                dialect.rollback(conn.raw)
            except Exception:  # the connection is unusable: closed, reopened on next use
                self.close()
            if not isinstance(exc, StoreError) and dialect.is_transient(exc):
                if dialect.postgres:
                    self.close()  # a dropped server connection does not come back by itself
                raise map_error(dialect, exc, "write") from exc
            raise
        finally:
            with contextlib.suppress(Exception):
                cur.close()

    def _apply(self, conn: Connection, cur: Any, run_id: str, batch: Batch) -> WriteResult:
        q = conn.dialect.sql
        cur.execute(q("SELECT lifecycle_stage FROM runs WHERE run_uuid = ?"), (run_id,))
        row = cur.fetchone()
        if row is None:
            raise NotFoundError(f"run {run_id} does not exist in the tracking store")
        if row[0] != "active":
            raise StoreError(
                f"run {run_id} is deleted (lifecycle_stage={row[0]!r}); cannot log to it"
            )
        result = WriteResult()
        if batch.params:
            cur.execute(q('SELECT "key", value FROM params WHERE run_uuid = ?'), (run_id,))
            existing = {k: v for k, v in cur.fetchall()}
            to_insert, result.rejected_params = merge_params(existing, batch.params)
            if to_insert:
                cur.executemany(q(_INSERT_PARAM), [(k, v, run_id) for k, v in to_insert.items()])
        if batch.tags:
            cur.executemany(q(_UPSERT_TAG), [(k, v, run_id) for k, v in batch.tags.items()])
            if MLFLOW_RUN_NAME in batch.tags:
                cur.execute(
                    q("UPDATE runs SET name = ? WHERE run_uuid = ?"),
                    (batch.tags[MLFLOW_RUN_NAME], run_id),
                )
        if batch.points:
            rows = []
            for key, value, ts, step in batch.points:
                stored, is_nan = sanitize(value)
                rows.append((key, stored, ts, step, is_nan))
            cur.executemany(
                q(_INSERT_POINT), [(k, v, ts, run_id, step, nan) for k, v, ts, step, nan in rows]
            )
            latest = latest_per_key(rows)
            cur.executemany(
                q(_UPSERT_LATEST),
                [(k, v, ts, step, nan, run_id) for k, (v, ts, step, nan) in sorted(latest.items())],
            )
        return result
