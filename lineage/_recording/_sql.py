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

The writer refuses to start unless the four tables have exactly the columns it knows
(``SchemaMismatch``); the caller then falls back to ``MlflowClient.log_batch``. On SQLite,
"database is locked" (several processes logging to one file) is retried with backoff; the
write lock is taken up front (``BEGIN IMMEDIATE``) so two writers cannot deadlock upgrading.
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from lineage._errors import NotFoundError, StoreError
from lineage._recording._writer import (
    Batch,
    RunInfo,
    TransientError,
    Writer,
    WriteResult,
    latest_per_key,
    merge_params,
    sanitize,
)

KNOWN_COLUMNS: dict[str, frozenset[str]] = {
    "metrics": frozenset({"key", "value", "timestamp", "run_uuid", "step", "is_nan"}),
    "latest_metrics": frozenset({"key", "value", "timestamp", "run_uuid", "step", "is_nan"}),
    "params": frozenset({"key", "value", "run_uuid"}),
    "tags": frozenset({"key", "value", "run_uuid"}),
}
_RUN_COLUMNS = frozenset({"run_uuid", "lifecycle_stage", "name"})

_LOCK_RETRY_S = 120.0
T = TypeVar("T")


class SchemaMismatch(Exception):
    """The store's tables are not the ones this writer knows how to fill."""


def sqlite_path(uri: str) -> str:
    """The file behind ``sqlite:///relative.db`` or ``sqlite:////absolute.db``."""
    path = uri.split("://", 1)[1] if "://" in uri else ""
    path = path.split("?", 1)[0]
    if not path.startswith("/") or path in ("/", "/:memory:"):
        raise SchemaMismatch(f"not a file-backed SQLite URI: {uri}")
    return unquote(path[1:])


def postgres_conninfo(uri: str) -> str:
    """A libpq URI from SQLAlchemy's ``postgresql+driver://...`` spelling."""
    parts = urlsplit(uri)
    scheme = parts.scheme.split("+", 1)[0]
    if scheme == "postgres":
        scheme = "postgresql"
    return parts._replace(scheme=scheme).geturl()


class SqlWriter(Writer):
    """Writes batches with one DB-API connection (``sqlite3`` or ``psycopg``)."""

    def __init__(self, uri: str) -> None:
        scheme = uri.split(":", 1)[0].split("+", 1)[0].lower()
        self._dialect = "sqlite" if scheme == "sqlite" else "postgresql"
        self._uri = uri
        self._conn: Any = None
        self._connect()
        self._check_schema()
        self.kind = f"sql:{self._dialect}"

    # -- connection -------------------------------------------------------------------------
    def _connect(self) -> None:
        if self._dialect == "sqlite":
            self._conn = sqlite3.connect(
                sqlite_path(self._uri), timeout=1.0, isolation_level=None, check_same_thread=False
            )
        else:
            import psycopg

            try:
                self._conn = psycopg.connect(postgres_conninfo(self._uri), autocommit=False)
            except psycopg.OperationalError as exc:
                raise TransientError(str(exc)) from exc

    def _q(self, sql: str) -> str:
        return sql if self._dialect == "sqlite" else sql.replace("?", "%s")

    def _check_schema(self) -> None:
        cur = self._conn.cursor()
        try:
            for table, expected in {**KNOWN_COLUMNS, "runs": _RUN_COLUMNS}.items():
                cur.execute(f"SELECT * FROM {table} WHERE 1 = 0")
                found = {d[0].lower() for d in cur.description or ()}
                ok = expected <= found if table == "runs" else found == expected
                if not ok:
                    raise SchemaMismatch(
                        f"table {table} has columns {sorted(found)}, expected {sorted(expected)}"
                    )
        except SchemaMismatch:
            self.close()
            raise
        except Exception as exc:
            self.close()
            raise SchemaMismatch(f"cannot inspect MLflow tables: {exc}") from exc
        finally:
            if self._conn is not None and self._dialect == "postgresql":
                self._conn.rollback()

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

    def read_run(self, run_id: str) -> RunInfo | None:
        """The run's experiment, status, params and tags; None when no such run exists."""
        cur = self._conn.cursor()
        q = self._q
        try:
            cur.execute(
                q("SELECT experiment_id, status, lifecycle_stage FROM runs WHERE run_uuid = ?"),
                (run_id,),
            )
            row = cur.fetchone()
            if row is None:
                return None
            cur.execute(q('SELECT "key", value FROM params WHERE run_uuid = ?'), (run_id,))
            params = {k: v for k, v in cur.fetchall()}
            cur.execute(q('SELECT "key", value FROM tags WHERE run_uuid = ?'), (run_id,))
            tags = {k: v for k, v in cur.fetchall()}
        except Exception as exc:
            from lineage._secrets import mask_uri

            raise StoreError(f"cannot read run {run_id}: {mask_uri(str(exc))}") from exc
        finally:
            if self._dialect == "postgresql" and self._conn is not None:
                self._conn.rollback()
        return RunInfo(str(row[0]), str(row[1]), str(row[2]), params, tags)

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

    def _retrying(self, attempt: Callable[[], T]) -> T:
        """``attempt()`` (connecting first if needed), again with jittered backoff while the
        database is locked or busy, for up to ``_LOCK_RETRY_S``."""
        deadline = time.monotonic() + _LOCK_RETRY_S
        delay = 0.01
        while True:
            try:
                if self._conn is None:
                    self._connect()
                return attempt()
            except TransientError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 1.0)

    def _statement(self, sql: str, args: tuple[Any, ...]) -> None:
        def once() -> None:
            cur = self._conn.cursor()
            try:
                cur.execute(self._q(sql), args)
                if self._dialect == "postgresql":
                    self._conn.commit()
            except BaseException as exc:
                if self._dialect == "postgresql":
                    self._conn.rollback()
                if self._transient(exc):
                    raise TransientError(str(exc)) from exc
                raise

        self._retrying(once)

    # -- writing ----------------------------------------------------------------------------
    def write(self, run_id: str, batch: Batch) -> WriteResult:
        return self._retrying(lambda: self._write_once(run_id, batch))

    def _transient(self, exc: BaseException) -> bool:
        if self._dialect == "sqlite":
            msg = str(exc).lower()
            return isinstance(exc, sqlite3.OperationalError) and ("locked" in msg or "busy" in msg)
        import psycopg

        return isinstance(
            exc,
            psycopg.OperationalError
            | psycopg.errors.DeadlockDetected
            | psycopg.errors.SerializationFailure,
        )

    def _write_once(self, run_id: str, batch: Batch) -> WriteResult:
        conn = self._conn
        cur = conn.cursor()
        try:
            if self._dialect == "sqlite":
                cur.execute("BEGIN IMMEDIATE")
            result = self._apply(cur, run_id, batch)
            conn.commit() if self._dialect == "postgresql" else cur.execute("COMMIT")
            return result
        except BaseException as exc:
            try:
                if self._dialect == "sqlite":
                    if conn.in_transaction:
                        cur.execute("ROLLBACK")
                else:
                    conn.rollback()
            except Exception:
                self.close()  # a broken connection is reopened on the next attempt
            if self._transient(exc):
                if self._dialect == "postgresql" and not isinstance(exc, sqlite3.Error):
                    self.close()
                raise TransientError(str(exc)) from exc
            raise

    def _apply(self, cur: Any, run_id: str, batch: Batch) -> WriteResult:
        q = self._q
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
                cur.executemany(
                    q(
                        'INSERT INTO params ("key", value, run_uuid) VALUES (?, ?, ?) ON CONFLICT DO NOTHING'
                    ),
                    [(k, v, run_id) for k, v in to_insert.items()],
                )
        if batch.tags:
            cur.executemany(
                q(
                    'INSERT INTO tags ("key", value, run_uuid) VALUES (?, ?, ?) '
                    'ON CONFLICT ("key", run_uuid) DO UPDATE SET value = excluded.value'
                ),
                [(k, v, run_id) for k, v in batch.tags.items()],
            )
            if "mlflow.runName" in batch.tags:
                cur.execute(
                    q("UPDATE runs SET name = ? WHERE run_uuid = ?"),
                    (batch.tags["mlflow.runName"], run_id),
                )
        if batch.points:
            rows = []
            for key, value, ts, step in batch.points:
                stored, is_nan = sanitize(value)
                rows.append((key, stored, ts, step, is_nan))
            cur.executemany(
                q(
                    'INSERT INTO metrics ("key", value, timestamp, run_uuid, step, is_nan) '
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
                ),
                [(k, v, ts, run_id, step, nan) for k, v, ts, step, nan in rows],
            )
            latest = latest_per_key(rows)
            cur.executemany(
                q(
                    'INSERT INTO latest_metrics ("key", value, timestamp, step, is_nan, run_uuid) '
                    'VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT ("key", run_uuid) DO UPDATE SET '
                    "value = excluded.value, timestamp = excluded.timestamp, "
                    "step = excluded.step, is_nan = excluded.is_nan "
                    "WHERE (excluded.step, excluded.timestamp, excluded.value) > "
                    "(latest_metrics.step, latest_metrics.timestamp, latest_metrics.value)"
                ),
                [(k, v, ts, step, nan, run_id) for k, (v, ts, step, nan) in sorted(latest.items())],
            )
        return result
