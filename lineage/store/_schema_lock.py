"""One process at a time creates or migrates a store's schema.

MLflow's SQL store creates its tables on the first open of an empty database (its Alembic
migrations, then the ``Default`` experiment), and so does Optuna's RDB storage. Two processes
doing so at once collide: Alembic's "Online migration expected to match one row", a table
that "already exists", a duplicate ``Default`` experiment. `schema_lock` serializes them: an
``flock`` on a file beside a SQLite database (``<file>.schema-lock``), ``pg_advisory_lock`` on
a connection of its own for PostgreSQL.

Every open of an MLflow SQL store goes through `tracking_store` and `registry_store`: the
package declares them as MLflow's store plugins for ``sqlite`` and ``postgresql``
(``mlflow.tracking_store`` and ``mlflow.model_registry_store`` entry points), so MLflow itself
calls them, for this package's commands, for ``lineage.start_run`` and for a script that only
uses plain ``mlflow`` alike. They build MLflow's own store; only when that open would write
the schema (a table MLflow expects is missing, or the ``Default`` experiment is) is it built
under the lock, where MLflow checks again and finds the work done by whoever held it first.
An up-to-date store is opened without waiting, and without writing a lock file (a read-only
folder stays readable).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from typing import Any

__all__ = ["registry_store", "schema_lock", "tracking_store"]

_MLFLOW = "mlflow"


def _key(name: str) -> int:
    return (
        int.from_bytes(hashlib.sha256(f"lineage-schema:{name}".encode()).digest()[:8], "big") >> 1
    )


def _sqlite_file(uri: str) -> str | None:
    from lineage._errors import UsageError
    from lineage.uri import sqlite_path

    try:
        return sqlite_path(uri)
    except UsageError:
        return None  # in memory: no other process can see it


def _engine(uri: str) -> Any:
    import sqlalchemy

    return sqlalchemy.create_engine(uri, poolclass=sqlalchemy.pool.NullPool)


@contextlib.contextmanager
def _file_lock(path: str) -> Iterator[None]:
    import fcntl

    try:
        handle = open(path + ".schema-lock", "a+b")  # noqa: SIM115 - held across the yield
    except OSError:
        yield  # a folder we cannot write to: no lock, as MLflow alone would do
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield  # closing the file releases the lock


@contextlib.contextmanager
def _advisory_lock(conn: Any, name: str) -> Iterator[None]:
    import sqlalchemy

    key = {"k": _key(name)}
    conn.execute(sqlalchemy.text("SELECT pg_advisory_lock(:k)"), key)
    conn.commit()
    try:
        yield
    finally:
        with contextlib.suppress(Exception):  # a lost session has released it already
            conn.execute(sqlalchemy.text("SELECT pg_advisory_unlock(:k)"), key)
            conn.commit()


@contextlib.contextmanager
def schema_lock(uri: str, name: str) -> Iterator[None]:
    """Hold, for the block, the lock that serializes creating or migrating schema ``name``
    (``"mlflow"``, ``"optuna"``) in the database at ``uri``; every process and thread that
    opens the same database waits for it. SQLite files and PostgreSQL databases are locked;
    any other URI, a SQLite database in memory, a folder that cannot hold the lock file or a
    PostgreSQL server that cannot be reached runs the block unlocked (the open then fails,
    or retries, as it would without the lock)."""
    from lineage.uri import scheme

    kind = scheme(uri)
    if kind == "sqlite":
        path = _sqlite_file(uri)
        if path is None:
            yield
            return
        with _file_lock(path):
            yield
        return
    if kind != "postgresql":
        yield
        return
    with _connected(uri) as conn:
        if conn is None:
            yield
            return
        with _advisory_lock(conn, name):
            yield


@contextlib.contextmanager
def _connected(uri: str) -> Iterator[Any]:
    engine = _engine(uri)
    try:
        try:
            conn = engine.connect()
        except Exception:  # unreachable or restarting: MLflow's own open retries it
            yield None
            return
        with conn:
            yield conn
    finally:
        engine.dispose()


def _mlflow_ready(conn: Any) -> bool:
    """MLflow's open writes nothing here: every table it expects exists (its own test,
    ``mlflow.store.db.utils._all_tables_exist``) and so does the ``Default`` experiment."""
    import sqlalchemy

    try:
        from mlflow.store.db.utils import _all_tables_exist

        if not _all_tables_exist(conn):
            return False
        found = conn.execute(
            sqlalchemy.text("SELECT 1 FROM experiments WHERE experiment_id = 0")
        ).first()
        return found is not None
    except Exception:  # whatever it is, MLflow's own open decides, under the lock
        return False
    finally:
        with contextlib.suppress(Exception):
            conn.rollback()


def _ready(uri: str) -> bool:
    from lineage.uri import scheme

    if scheme(uri) == "sqlite":
        path = _sqlite_file(uri)
        if path is None:
            return True
        if not os.path.exists(path):
            return False
    with _connected(uri) as conn:
        return conn is not None and _mlflow_ready(conn)


def _built(uri: str, build: Any) -> Any:
    if _ready(uri):
        return build()
    with schema_lock(uri, _MLFLOW):
        return build()


def tracking_store(store_uri: str, artifact_uri: str | None = None) -> Any:
    """MLflow's tracking store for ``store_uri`` (an ``mlflow.tracking_store`` plugin),
    built under `schema_lock` when opening it creates or migrates the schema."""
    from mlflow.tracking._tracking_service.utils import _get_sqlalchemy_store

    return _built(store_uri, lambda: _get_sqlalchemy_store(store_uri, artifact_uri))


def registry_store(store_uri: str) -> Any:
    """MLflow's model registry store for ``store_uri`` (an ``mlflow.model_registry_store``
    plugin), built under `schema_lock` when opening it creates or migrates the schema."""
    from mlflow.tracking._model_registry.utils import _get_sqlalchemy_store

    return _built(store_uri, lambda: _get_sqlalchemy_store(store_uri))
