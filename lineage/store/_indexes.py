"""Covering indexes that make ``--where`` fast on a large SQLite store (``lineage index``).

MLflow indexes ``params``, ``latest_metrics`` and ``tags`` by ``(key, run_uuid)`` and by
``run_uuid``, not by value: a filter such as ``params.optimizer = 'adam'`` reads every run's
row for that key to compare its value (~10 ms at 10,000 runs for each condition). An index on
``(key, value, run_uuid)`` answers the same condition from the index alone (<1 ms).

These are ordinary indexes inside the MLflow database, so SQLite updates them in the same
transaction as every write, by MLflow or anyone else: they never go stale, and a query never
has to check them. MLflow ignores them (its schema check compares migration versions only);
each costs one more index update per row written; the three add about a quarter to the
file's size.
``lineage index --drop`` removes them. SQLite only: PostgreSQL limits a B-tree entry to
~2.7 kB, and a longer param value (MLflow allows 8,000 characters) would make MLflow's own
insert fail.
"""

from __future__ import annotations

from collections.abc import Sequence

from lineage._errors import StoreError, UsageError, one_line
from lineage.store._sql_text import INDEXES
from lineage.uri import masked, resolve_tracking_uri, scheme

__all__ = ["INDEXES", "IndexState", "drop_indexes", "ensure_indexes", "index_states"]


class IndexState:
    """One of :data:`INDEXES` and what happened to it: ``present``, ``absent``, ``created``
    or ``dropped``."""

    __slots__ = ("columns", "name", "state", "table")

    def __init__(self, name: str, table: str, columns: Sequence[str], state: str) -> None:
        self.name = name
        self.table = table
        self.columns = tuple(columns)
        self.state = state

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "table": self.table,
            "columns": list(self.columns),
            "state": self.state,
        }


def index_states(tracking_uri: str | None = None) -> list[IndexState]:
    """Which of :data:`INDEXES` the store has (read-only)."""
    with _Db(tracking_uri, write=False) as db:
        present = db.present()
    return [
        IndexState(name, table, cols, "present" if name in present else "absent")
        for name, (table, cols) in INDEXES.items()
    ]


def ensure_indexes(tracking_uri: str | None = None) -> list[IndexState]:
    """Create the missing :data:`INDEXES` in one transaction (all or none)."""
    return _change(tracking_uri, create=True)


def drop_indexes(tracking_uri: str | None = None) -> list[IndexState]:
    """Drop :data:`INDEXES` where present, in one transaction."""
    return _change(tracking_uri, create=False)


def _change(tracking_uri: str | None, *, create: bool) -> list[IndexState]:
    out = []
    with _Db(tracking_uri, write=True) as db:
        db.execute("BEGIN IMMEDIATE")  # waits for other writers (busy timeout), then holds
        try:
            present = db.present()
            for name, (table, cols) in INDEXES.items():
                if create and name not in present:
                    db.execute(f'CREATE INDEX "{name}" ON "{table}" ({", ".join(cols)})')
                    state = "created"
                elif not create and name in present:
                    db.execute(f'DROP INDEX "{name}"')
                    state = "dropped"
                else:
                    state = "present" if create else "absent"
                out.append(IndexState(name, table, cols, state))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    return out


class _Db:
    """A connection to the SQLite file of an MLflow store; anything else is a usage error."""

    def __init__(self, tracking_uri: str | None, *, write: bool) -> None:
        import sqlite3

        from lineage.store._sql_db import REQUIRED_COLUMNS, connect

        uri = resolve_tracking_uri(tracking_uri)
        self.uri = masked(uri)
        kind = scheme(uri)
        if kind != "sqlite":
            raise UsageError(
                f"--tracking-uri {self.uri}: `lineage index` works on SQLite stores only "
                f"(got a {kind!r} URI); PostgreSQL limits index entries to ~2.7 kB, which a "
                "long param value would exceed, failing MLflow's own writes"
            )
        self._raw = connect(uri, write=write).raw
        try:
            tables = {
                str(r[0])
                for r in self._raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except sqlite3.Error as exc:
            self._raw.close()
            raise StoreError(f"cannot read {self.uri}: {one_line(exc)}") from exc
        wanted = {table for table, _ in INDEXES.values()}
        if not {"runs", "experiments"} <= tables or not wanted <= set(REQUIRED_COLUMNS) & tables:
            self._raw.close()
            raise UsageError(
                f"{self.uri} is not an MLflow tracking store (no runs, params, tags and "
                "latest_metrics tables)"
            )

    def __enter__(self) -> _Db:
        return self

    def __exit__(self, *exc: object) -> None:
        self._raw.close()

    def execute(self, sql: str) -> None:
        import sqlite3

        try:
            self._raw.execute(sql)
        except sqlite3.Error as exc:
            if sql in ("COMMIT", "ROLLBACK") and not self._raw.in_transaction:
                return
            hint = " (is the file writable?)" if "readonly" in str(exc) else ""
            raise StoreError(
                f"{sql.split(' ON ')[0]} on {self.uri} failed: {one_line(exc)}{hint}"
            ) from exc

    def present(self) -> set[str]:
        rows = self._raw.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        return {str(r[0]) for r in rows} & set(INDEXES)
