"""The one SQL layer over MLflow's tables: a connection with its :class:`Dialect`, and the
schema check that decides whether the tables may be read or written directly.

Used by the reader (:class:`~lineage.store._sql.SqlRunStore`), the writer
(:class:`~lineage._recording._sql.SqlWriter`) and ``lineage index``. A database whose
tables are not the MLflow schema this layer knows raises :class:`SchemaMismatch`, and the
caller goes through ``MlflowClient`` instead; a database that is not an MLflow store at all
(an Optuna study, say) raises :class:`~lineage.UsageError`, because falling back to MLflow
would run its migrations and write its tables into someone else's database.
"""

from __future__ import annotations

from collections.abc import Sequence

from lineage._errors import StoreError, UsageError
from lineage.store._dialect import Dialect, dialect_for, map_error

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "REQUIRED_COLUMNS",
    "WRITTEN_COLUMNS",
    "Connection",
    "SchemaMismatch",
    "connect",
]

#: Tables and columns the reader reads; present in every MLflow schema since 1.x.
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

#: Tables the writer inserts into, with exactly these columns: a column MLflow adds later
#: might be NOT NULL without a default, and our inserts would fail or leave it wrong.
WRITTEN_COLUMNS: dict[str, frozenset[str]] = {
    table: REQUIRED_COLUMNS[table] for table in ("metrics", "latest_metrics", "params", "tags")
}


class SchemaMismatch(StoreError):
    """The database is reachable but its tables are not an MLflow schema this layer knows."""


class Connection:
    """A DB-API connection and the :class:`Dialect` that speaks to it.

    One thread at a time. ``uri`` is the masked URI, for messages."""

    __slots__ = ("dialect", "raw", "uri")

    def __init__(self, raw: Any, dialect: Dialect, uri: str) -> None:
        self.raw = raw
        self.dialect = dialect
        self.uri = uri

    @property
    def postgres(self) -> bool:
        return self.dialect.postgres

    @property
    def json_agg(self) -> str | None:
        return self.dialect.json_agg

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one statement (``?`` placeholders); driver errors as they come."""
        cur = self.raw.cursor()
        try:
            cur.execute(self.dialect.sql(sql), tuple(args))
            return list(cur.fetchall())
        finally:
            cur.close()

    def snapshot(self) -> _Snapshot:
        """``with db.snapshot():`` one read transaction: every statement in it sees the same
        committed state, and nothing is held between calls, so the next call sees other
        writers' changes."""
        return _Snapshot(self)

    def columns(self) -> dict[str, set[str]]:
        return self.dialect.columns(self.raw, REQUIRED_COLUMNS)

    def check_schema(self, *, write: bool = False) -> None:
        """Raise :class:`SchemaMismatch` unless the tables are an MLflow schema this layer
        reads (``write``: and writes), :class:`~lineage.UsageError` if the database is not
        an MLflow store at all, :class:`~lineage.StoreError` if it cannot be inspected."""
        try:
            present = self.columns()
        except Exception as exc:
            raise map_error(self.dialect, exc, f"cannot read the schema of {self.uri}") from exc
        if present and not ({"runs", "experiments"} & set(present)):
            raise UsageError(
                f"{self.uri} is not an MLflow tracking store "
                f"(it has tables {', '.join(sorted(present)[:5])}, but no runs or experiments)"
            )
        missing = [
            f"{table}.{col}"
            for table, cols in REQUIRED_COLUMNS.items()
            for col in sorted(cols - present.get(table, set()))
        ]
        if missing:
            raise SchemaMismatch(
                f"{self.uri} is not an MLflow schema this reader knows "
                f"(missing {', '.join(missing[:5])})"
            )
        if write:
            for table, expected in WRITTEN_COLUMNS.items():
                if present[table] != expected:
                    raise SchemaMismatch(
                        f"{self.uri}: table {table} has columns {sorted(present[table])}, "
                        f"this writer knows {sorted(expected)}"
                    )

    def close(self) -> None:
        self.raw.close()


class _Snapshot:
    # A class, not @contextmanager: ``import contextlib`` is one more module on the query path.
    __slots__ = ("db",)

    def __init__(self, db: Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.dialect.begin_read(self.db.raw)

    def __exit__(self, *exc: object) -> None:
        self.db.dialect.end_read(self.db.raw)


def connect(uri: str, *, write: bool = False, timeout: float = 30.0) -> Connection:
    """A :class:`Connection` to the MLflow database of a ``sqlite:`` or ``postgresql:`` URI,
    read-only unless ``write``. The schema is not checked here (see
    :meth:`Connection.check_schema`). Raises :class:`~lineage.NotFoundError` for a SQLite
    file that does not exist, :class:`~lineage.UsageError` for a URI naming no file,
    :class:`~lineage.TransientError` for an unreachable or locked database,
    :class:`~lineage.StoreError` otherwise."""
    from lineage.uri import masked

    dialect = dialect_for(uri)
    raw = dialect.connect(uri, write=write, timeout=timeout)
    return Connection(raw, dialect, masked(uri))
