"""Connections to MLflow's SQL databases: SQLite via ``sqlite3``, PostgreSQL via ``psycopg``,
and the schema check that decides whether their tables can be read directly."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence

from lineage._errors import NotFoundError, StoreError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Tables and columns this module reads; present in every MLflow schema since 1.x.
REQUIRED_COLUMNS: dict[str, frozenset[str]] = {
    "experiments": frozenset({"experiment_id", "name", "lifecycle_stage"}),
    "runs": frozenset(
        {
            "run_uuid",
            "name",
            "status",
            "start_time",
            "end_time",
            "lifecycle_stage",
            "artifact_uri",
            "experiment_id",
        }
    ),
    "params": frozenset({"key", "value", "run_uuid"}),
    "tags": frozenset({"key", "value", "run_uuid"}),
    "latest_metrics": frozenset({"key", "value", "is_nan", "step", "timestamp", "run_uuid"}),
    "metrics": frozenset({"key", "value", "is_nan", "step", "timestamp", "run_uuid"}),
}


class SchemaMismatch(StoreError):
    """The database is reachable but its tables are not an MLflow schema this module knows."""


class Connection:
    """A DB-API connection plus what differs between SQLite and PostgreSQL."""

    def __init__(self, raw: Any, *, postgres: bool) -> None:
        self.raw = raw
        self.postgres = postgres
        #: The aggregate folding key/value rows into one JSON object, if the database has one.
        self.json_agg = "json_object_agg" if postgres else self._sqlite_json()

    def _sqlite_json(self) -> str | None:
        try:
            self.raw.execute("SELECT json_group_object('k', 'v')").fetchall()
        except Exception:
            return None  # SQLite built without JSON1 (before 3.38 it was optional)
        return "json_group_object"

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if self.postgres:
            sql = sql.replace("?", "%s")
        cur = self.raw.cursor()
        try:
            cur.execute(sql, tuple(args))
            return list(cur.fetchall())
        finally:
            cur.close()

    def snapshot(self) -> _Snapshot:
        """``with db.snapshot():`` one read transaction: every statement in it sees the same
        committed state, and nothing is held between calls, so the next call sees other
        writers' changes."""
        return _Snapshot(self)

    def columns(self) -> dict[str, set[str]]:
        found: dict[str, set[str]] = defaultdict(set)
        if self.postgres:
            for table, column in self.rows(
                "SELECT table_name, column_name FROM information_schema.columns "
                "WHERE table_schema = current_schema()"
            ):
                found[str(table)].add(str(column))
        else:
            tables = [
                r[0] for r in self.rows("SELECT name FROM sqlite_master WHERE type = 'table'")
            ]
            for table in tables:
                found.setdefault(table, set())  # list every table: a foreign database shows
                if table in REQUIRED_COLUMNS:
                    for row in self.rows(f'PRAGMA table_info("{table}")'):
                        found[table].add(str(row[1]))
        if self.postgres:
            self.raw.rollback()
        return found

    def close(self) -> None:
        self.raw.close()


class _Snapshot:
    # A class, not @contextmanager: ``import contextlib`` is one more module on the query path.
    __slots__ = ("db",)

    def __init__(self, db: Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        if not self.db.postgres:
            self.db.raw.execute("BEGIN")

    def __exit__(self, *exc: object) -> None:
        if self.db.postgres:
            self.db.raw.rollback()
        else:
            self.db.raw.execute("COMMIT")


def sqlite_path(uri: str) -> str:
    """The file behind a ``sqlite:///relative`` or ``sqlite:////absolute`` URI."""
    rest = uri.split(":", 1)[1]
    if not rest.startswith("//"):
        raise UsageError(f"tracking URI {uri!r} must look like sqlite:///path/to/mlflow.db")
    path = rest[2:].split("?", 1)[0]
    if "%" in path:
        from urllib.parse import unquote

        path = unquote(path)
    if path.startswith("/"):
        path = path[1:]  # sqlite:///x.db -> x.db ; sqlite:////abs/x.db -> /abs/x.db
    if not path or path == ":memory:":
        raise UsageError(f"tracking URI {uri!r} names no database file")
    return path


def connect_sqlite(uri: str, *, write: bool = False) -> Connection:
    """The SQLite file of ``uri``, read-only unless ``write``."""
    import sqlite3

    path = sqlite_path(uri)
    if not os.path.isfile(path):
        raise NotFoundError(
            f"no MLflow store at {uri}: file {os.path.abspath(path)} does not exist "
            "(set --tracking-uri or MLFLOW_TRACKING_URI)"
        )
    target = f"file:{uri_path(os.path.abspath(path))}?mode={'rw' if write else 'ro'}"
    try:
        raw = sqlite3.connect(target, uri=True, timeout=30.0, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {uri}: {one_line(exc)}") from exc
    # Read pages straight from the OS page cache instead of one read() each: a filtered
    # query that probes 10,000 rows takes about half the time.
    raw.execute("PRAGMA mmap_size = 1073741824")
    return Connection(raw, postgres=False)


def connect_postgres(uri: str) -> Connection:
    try:
        import psycopg
    except ImportError as exc:
        raise StoreError(
            f"reading {uri} needs psycopg 3: pip install 'lineage-tuner[postgres]'"
        ) from exc
    from urllib.parse import urlsplit

    parts = urlsplit(uri)
    conninfo = parts._replace(scheme="postgresql").geturl()
    try:
        raw = psycopg.connect(conninfo, autocommit=False, connect_timeout=10)
        raw.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        raw.read_only = True
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect to {mask(uri)}: {one_line(exc)}") from exc
    return Connection(raw, postgres=True)


def one_line(exc: BaseException) -> str:
    """A driver's message, which may span lines, as one line."""
    return " ".join(str(exc).split()) or type(exc).__name__


def uri_path(path: str) -> str:
    """``path`` escaped for a ``file:`` URI (urllib.parse is imported only when needed)."""
    if path.isascii() and not any(c in path for c in "%?# "):
        return path
    from urllib.parse import quote

    return quote(path)


def mask(uri: str) -> str:
    if "@" not in uri:
        return uri  # no credentials (spares `import urllib.parse` on the query path)
    from urllib.parse import urlsplit

    parts = urlsplit(uri)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return parts._replace(netloc=netloc).geturl()
    return uri
