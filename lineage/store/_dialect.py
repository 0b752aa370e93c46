"""What differs between the SQL databases MLflow runs on: SQLite and PostgreSQL.

The reader (:class:`~lineage.store._sql.SqlRunStore`) and the writer
(:class:`~lineage._recording._sql.SqlWriter`) write their SQL once, with ``?`` placeholders
and the ``ON CONFLICT`` upsert both databases share; a :class:`Dialect` supplies the rest:

- ``sql(text)``: the statement in the driver's placeholder style;
- ``connect(uri, write=..., timeout=...)``: the driver (imported only here, only then) and
  its connection, read-only for readers; failures mapped to one masked line;
- ``begin``/``end_read``, ``commit``/``rollback``: transactions, which the two drivers open
  differently (``sqlite3`` in autocommit mode takes explicit ``BEGIN``; ``psycopg`` opens one
  on the first statement);
- ``is_transient(exc)``: which driver errors are worth retrying (a locked file, a dropped
  connection, a deadlock);
- ``columns(raw)``: the schema, for the check that the tables are MLflow's;
- ``json_agg``, ``run_document_sql``, ``rendered_runs_sql``: JSON built by the database.
  SQLite and PostgreSQL render the run table (and ``lineage runs --format json`` output)
  themselves (``_sql_text.py``: ``json_group_object``; ``_sql_text_pg.py``:
  ``json_build_object``/``json_agg``); a dialect whose hooks return ``None`` leaves the
  reader to build the rest in Python.

A dialect object belongs to one connection: SQLite's JSON support is probed per database.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Collection, Sequence

from lineage._errors import NotFoundError, StoreError, TransientError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Dialect:
    """The base: SQL as written (``?`` placeholders), no JSON rendering."""

    name = "sql"
    postgres = False
    #: The aggregate folding ``(key, value)`` rows into one JSON object, if the database has one.
    json_agg: str | None = None

    def sql(self, text: str) -> str:
        """``text`` (``?`` placeholders) as the driver takes it."""
        return text

    def connect(self, uri: str, *, write: bool, timeout: float) -> Any:
        """A DB-API connection to ``uri``; read-only unless ``write``; ``timeout``: how long
        SQLite waits for another writer's lock before "database is locked". Raises
        :class:`~lineage.NotFoundError` (no such file), :class:`~lineage.TransientError`
        (unreachable, may pass) or :class:`~lineage.StoreError`."""
        raise NotImplementedError

    def begin_read(self, raw: Any) -> None:
        """Open a read transaction: every statement until :meth:`end_read` sees one snapshot."""

    def end_read(self, raw: Any) -> None:
        raw.rollback()

    def begin_write(self, raw: Any) -> None:
        """Open a write transaction, holding the write lock where the database has one."""

    def commit(self, raw: Any) -> None:
        raw.commit()

    def rollback(self, raw: Any) -> None:
        raw.rollback()

    def is_transient(self, exc: BaseException) -> bool:
        """True for driver errors a retry may cure."""
        return False

    def columns(self, raw: Any, tables: Collection[str]) -> dict[str, set[str]]:
        """Every table of the database (lower case), with its columns for those of
        ``tables`` (the others may be listed without)."""
        raise NotImplementedError

    @staticmethod
    def upsert(
        table: str,
        columns: Sequence[str],
        key: Sequence[str] = (),
        update: Sequence[str] = (),
        when: str | None = None,
    ) -> str:
        """``INSERT INTO table (columns) VALUES (?, ...)``, then ``ON CONFLICT``: nothing
        (no ``update``) or ``DO UPDATE SET`` the ``update`` columns from the new row, only
        ``when`` that condition holds. SQLite (3.24+) and PostgreSQL (9.5+) spell it alike."""
        cols = ", ".join(_quoted(c) for c in columns)
        sql = f"INSERT INTO {table} ({cols}) VALUES ({', '.join('?' * len(columns))}) ON CONFLICT"
        if not update:
            return f"{sql} DO NOTHING"
        sets = ", ".join(f"{_quoted(c)} = excluded.{_quoted(c)}" for c in update)
        target = ", ".join(_quoted(c) for c in key)
        sql = f"{sql} ({target}) DO UPDATE SET {sets}"
        return f"{sql} WHERE {when}" if when else sql

    # -- JSON rendered by the database ------------------------------------------------------
    @property
    def renders_json(self) -> bool:
        """Whether :meth:`run_document_sql` and :meth:`rendered_runs_sql` give statements."""
        return False

    def run_document_sql(self, scope: str) -> str | None:
        """One statement returning the runs of ``scope`` as one JSON document (see
        ``SqlRunStore._read_json``), or ``None`` where the reader assembles them itself."""
        return None

    def rendered_runs_sql(
        self, scope: str, order: Sequence[tuple[str, str, bool]], limit: int | None
    ) -> tuple[str, list[Any]] | None:
        """Each run of ``scope`` as its ``lineage runs --format json`` object (see
        ``RunStore.runs_json``), or ``None`` where the database cannot render it."""
        return None


def _quoted(column: str) -> str:
    # "key" is a reserved word in some SQL dialects; MLflow's own DDL quotes it.
    return f'"{column}"' if column == "key" else column


class SqliteDialect(Dialect):
    name = "sqlite"

    def __init__(self) -> None:
        self.json_agg: str | None = None

    def connect(self, uri: str, *, write: bool, timeout: float) -> Any:
        import sqlite3

        from lineage.uri import file_uri_path, masked, sqlite_path

        path = sqlite_path(uri)
        if not os.path.isfile(path):
            raise NotFoundError(
                f"no MLflow store at {masked(uri)}: file {os.path.abspath(path)} does not exist "
                "(set --tracking-uri or MLFLOW_TRACKING_URI)"
            )
        # mode=rw never creates a file: an empty database in MLflow's place would fail it.
        target = f"file:{file_uri_path(os.path.abspath(path))}?mode={'rw' if write else 'ro'}"
        try:
            raw = sqlite3.connect(
                target, uri=True, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise map_error(self, exc, f"cannot open {masked(uri)}") from exc
        if not write:
            # Read pages straight from the OS page cache instead of one read() each: a
            # filtered query that probes 10,000 rows takes about half the time.
            raw.execute("PRAGMA mmap_size = 1073741824")
        try:
            raw.execute("SELECT json_group_object('k', 'v')").fetchall()
            self.json_agg = "json_group_object"
        except sqlite3.Error:
            self.json_agg = None  # SQLite built without JSON1 (before 3.38 it was optional)
        return raw

    def begin_read(self, raw: Any) -> None:
        raw.execute("BEGIN")

    def end_read(self, raw: Any) -> None:
        raw.execute("COMMIT")

    def begin_write(self, raw: Any) -> None:
        # The write lock up front: two writers that both read first would deadlock upgrading.
        raw.execute("BEGIN IMMEDIATE")

    def commit(self, raw: Any) -> None:
        raw.execute("COMMIT")

    def rollback(self, raw: Any) -> None:
        if raw.in_transaction:
            raw.execute("ROLLBACK")

    def is_transient(self, exc: BaseException) -> bool:
        import sqlite3

        msg = str(exc).lower()
        return isinstance(exc, sqlite3.OperationalError) and ("locked" in msg or "busy" in msg)

    def columns(self, raw: Any, tables: Collection[str]) -> dict[str, set[str]]:
        found: dict[str, set[str]] = defaultdict(set)
        names = [r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in names:
            found.setdefault(str(table).lower(), set())  # every table: a foreign database shows
            if table in tables:
                for row in raw.execute(f'PRAGMA table_info("{table}")'):
                    found[table].add(str(row[1]).lower())
        return found

    @property
    def renders_json(self) -> bool:
        return self.json_agg is not None

    def run_document_sql(self, scope: str) -> str | None:
        if self.json_agg is None:
            return None
        from lineage.store._sql_text import run_document_sql

        return run_document_sql(scope)

    def rendered_runs_sql(
        self, scope: str, order: Sequence[tuple[str, str, bool]], limit: int | None
    ) -> tuple[str, list[Any]] | None:
        if self.json_agg is None:
            return None
        from lineage.store._sql_text import rendered_runs_sql

        return rendered_runs_sql(scope, order, limit)


class PostgresDialect(Dialect):
    name = "postgresql"
    postgres = True
    json_agg = "json_object_agg"

    def sql(self, text: str) -> str:
        return text.replace("?", "%s")

    def connect(self, uri: str, *, write: bool, timeout: float) -> Any:
        from lineage.uri import masked, postgres_conninfo

        # Reads take psycopg2 when it is there (it imports fast); writes psycopg 3, whose
        # executemany pipelines the rows (psycopg2's sends one statement per row).
        self._driver = driver = _pg_driver(uri, fast_import=not write)
        try:
            if driver.__name__ == "psycopg2":
                raw = driver.connect(postgres_conninfo(uri), connect_timeout=10)
                raw.set_session(
                    isolation_level=None if write else "REPEATABLE READ",
                    readonly=not write,
                    autocommit=False,
                )
            else:
                raw = driver.connect(postgres_conninfo(uri), autocommit=False, connect_timeout=10)
                if not write:
                    raw.isolation_level = driver.IsolationLevel.REPEATABLE_READ
                    raw.read_only = True
        except driver.Error as exc:
            raise map_error(self, exc, f"cannot connect to {masked(uri)}") from exc
        return raw

    def begin_read(self, raw: Any) -> None:
        # The JIT compiler costs seconds on the run-document statement (one plan node per
        # JSON expression, each compiled) and saves nothing on these short scans.
        cur = raw.cursor()
        try:
            cur.execute("SET LOCAL jit = off")
        finally:
            cur.close()

    def is_transient(self, exc: BaseException) -> bool:
        driver = getattr(self, "_driver", None) or _pg_driver("")
        errors = driver.errors
        return isinstance(
            exc,
            driver.OperationalError | errors.DeadlockDetected | errors.SerializationFailure,
        )

    @property
    def renders_json(self) -> bool:
        return True

    def run_document_sql(self, scope: str) -> str | None:
        from lineage.store._sql_text_pg import run_document_sql

        return run_document_sql(scope)

    def rendered_runs_sql(
        self, scope: str, order: Sequence[tuple[str, str, bool]], limit: int | None
    ) -> tuple[str, list[Any]] | None:
        from lineage.store._sql_text_pg import rendered_runs_sql

        return rendered_runs_sql(scope, order, limit)

    def columns(self, raw: Any, tables: Collection[str]) -> dict[str, set[str]]:
        found: dict[str, set[str]] = defaultdict(set)
        cur = raw.cursor()
        try:
            cur.execute(
                "SELECT table_name, column_name FROM information_schema.columns "
                "WHERE table_schema = current_schema()"
            )
            for table, column in cur.fetchall():
                found[str(table).lower()].add(str(column).lower())
        finally:
            cur.close()
            raw.rollback()
        return found


def _pg_driver(uri: str, *, fast_import: bool = False) -> Any:
    """The PostgreSQL driver module: psycopg 3; with ``fast_import``, psycopg2 when installed
    (a C extension that imports in tens of milliseconds, where psycopg 3 takes about 0.25 s:
    it imports asyncio; that is most of a short ``lineage runs`` call). Both come with
    ``lineage-tuner[postgres]``; either alone works."""
    if fast_import:
        try:
            import psycopg2
            import psycopg2.errors

            return psycopg2
        except ImportError:
            pass
    try:
        import psycopg
    except ImportError as exc:
        if not fast_import:
            try:
                import psycopg2
                import psycopg2.errors

                return psycopg2
            except ImportError:
                pass
        from lineage.uri import masked

        raise StoreError(
            f"{masked(uri) if uri else 'PostgreSQL'}: PostgreSQL stores need a driver: "
            "pip install 'lineage-tuner[postgres]'"
        ) from exc
    return psycopg


def dialect_for(uri: str) -> Dialect:
    """A fresh dialect object for a ``sqlite:`` or ``postgresql:`` URI."""
    from lineage.uri import scheme

    kind = scheme(uri)
    if kind == "sqlite":
        return SqliteDialect()
    if kind == "postgresql":
        return PostgresDialect()
    raise ValueError(f"not a SQL tracking URI: {kind!r}")


def map_error(dialect: Dialect, exc: BaseException, what: str) -> StoreError:
    """A driver error as one masked line: :class:`TransientError` when a retry may cure it."""
    from lineage._errors import one_line

    cls = TransientError if dialect.is_transient(exc) else StoreError
    return cls(f"{what}: {one_line(exc)}")
