"""Read MLflow's SQL tables directly (SQLite via ``sqlite3``, PostgreSQL via ``psycopg``).

MLflow's own ``search_runs`` builds ORM objects for every param, metric and tag of every run;
reading the same rows with plain SQL is an order of magnitude faster and needs no
``import mlflow``. Each call reads afresh, so other writers are always visible (the optional
run-table cache of ``_cache.py`` is checked against SQLite's change counter first). A
selective ``--where`` arrives as a prefilter and becomes ``IN (SELECT ...)`` clauses; on
SQLite a query it states exactly can be rendered as JSON by SQLite itself (``runs_json``).
The SQL text lives in ``_sql_text.py``. The schema is checked when the store opens; a store
whose tables do not look like MLflow's raises :class:`SchemaMismatch` and ``open_store``
falls back to ``MlflowClient``.
"""

from __future__ import annotations

from collections.abc import Sequence

from lineage._errors import NotFoundError, UsageError
from lineage.store._base import MIN_PREFIX, RunStore, check_run_ref
from lineage.store._dialect import map_error
from lineage.store._prefilter import Prefilter
from lineage.store._records import Experiment, MetricPoint, RunRecord, metric_value
from lineage.store._sql_db import REQUIRED_COLUMNS, SchemaMismatch, connect
from lineage.store._sql_text import (
    ACTIVE,
    FROM,
    INDEXES,
    KEY_TABLES,
    RUN_COLUMNS,
    folded_sql,
    prefilter_sql,
    scope_sql,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["REQUIRED_COLUMNS", "SchemaMismatch", "SqlRunStore"]


class SqlRunStore(RunStore):
    """A :class:`RunStore` over an MLflow SQLite or PostgreSQL database."""

    def __init__(self, uri: str, *, cache: bool = False) -> None:
        self._db = connect(uri)
        self.uri = self._db.uri  # masked
        self._tracking_uri = uri
        # The run-table cache is set up on the first full read (``runs``), not here.
        self._cache_file: str | None = None
        if cache and self._db.dialect.name == "sqlite":
            from lineage.uri import sqlite_path

            self._cache_file = sqlite_path(uri)
        self._indexed: frozenset[str] | None = None
        try:
            self._db.check_schema()
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        self._db.close()

    def _value_indexed(self) -> frozenset[str]:
        """The tables whose values ``lineage index`` indexed (PostgreSQL: all, its planner
        decides)."""
        if self._indexed is None:
            if self._db.postgres:
                self._indexed = frozenset(KEY_TABLES.values())
            else:
                names = ", ".join(f"'{name}'" for name in INDEXES)
                rows = self._rows(
                    f"SELECT tbl_name FROM sqlite_master WHERE type = 'index' AND name IN ({names})"
                )
                self._indexed = frozenset(str(r[0]) for r in rows)
        return self._indexed

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._db.rows(sql, args)
        except Exception as exc:
            raise map_error(self._db.dialect, exc, f"query on {self.uri} failed") from exc

    def experiments(self) -> list[Experiment]:
        with self._db.snapshot():
            rows = self._rows(
                "SELECT experiment_id, name FROM experiments "
                "WHERE lifecycle_stage = 'active' ORDER BY experiment_id"
            )
        return [Experiment(str(i), str(n)) for i, n in rows]

    def experiment_tags(self, experiment_id: str) -> dict[str, str]:
        if not str(experiment_id).lstrip("-").isdigit():
            return {}
        rows = self._rows(
            "SELECT t.key, t.value FROM experiment_tags t JOIN experiments e "
            "ON e.experiment_id = t.experiment_id "
            "WHERE t.experiment_id = ? AND e.lifecycle_stage = 'active'",
            (int(experiment_id),),
        )
        return {str(k): str(v) for k, v in rows}

    def runs(self, experiments: Sequence[str] | None = None) -> list[RunRecord]:
        cache = None
        if self._cache_file is not None and self._db.dialect.renders_json:
            from lineage.store._cache import RunTableCache, cache_dir

            directory = cache_dir()
            if directory is not None:
                cache = RunTableCache(self._cache_file, directory)
        if cache is None:
            return self._read_runs(experiments)
        # Read the header before and after the query, outside any transaction: the table is
        # cached only if no write landed in between (same counter), so it is the snapshot.
        # What is cached is what SQLite returned (one JSON text, a few rows): saving and
        # loading it costs a few milliseconds, where marshalled records cost ~100.
        key = cache.key()
        raw = cache.load(key) if key is not None else None
        if raw is None:
            raw = self._read_json(None)
            if key is not None and cache.key() == key:
                cache.save(key, raw)
        from lineage.store._sql_rows import assemble_json

        records = assemble_json(*raw)
        if experiments is None:
            return records
        wanted = {str(e) for e in experiments}
        return [r for r in records if r.experiment_id in wanted]

    def candidates(
        self, experiments: Sequence[str] | None, prefilter: Prefilter | None
    ) -> list[RunRecord]:
        if prefilter is None:
            return self.runs(experiments)
        return self._read_runs(experiments, prefilter)

    def keys_present(
        self, kind: str, keys: Sequence[str], experiments: Sequence[str] | None
    ) -> set[str]:
        table = KEY_TABLES[kind]
        scope, args = scope_sql(experiments)
        if scope is None:
            return set(keys)
        present = set()
        with self._db.snapshot():
            # (key, run_uuid) is the primary key of each table: one index probe per key.
            for key in keys:
                if self._rows(
                    f"SELECT 1 FROM {table} x JOIN runs r ON r.run_uuid = x.run_uuid "
                    "JOIN experiments e ON e.experiment_id = r.experiment_id "
                    f"WHERE x.key = ? AND {scope} LIMIT 1",
                    [key, *args],
                ):
                    present.add(key)
            if len(present) < len(set(keys)) and not self._rows(
                f"SELECT 1 FROM {FROM} WHERE {scope} LIMIT 1", args
            ):
                return set(keys)
        return present

    def _read_runs(
        self, experiments: Sequence[str] | None, prefilter: Prefilter | None = None
    ) -> list[RunRecord]:
        from lineage.store._sql_rows import assemble, assemble_folded, assemble_json

        if self._db.dialect.renders_json:
            return assemble_json(*self._read_json(experiments, prefilter))
        where, args = scope_sql(experiments)
        if where is None:
            return []
        if prefilter is not None:
            extra, extra_args = prefilter_sql(prefilter, self._value_indexed())
            where, args = f"{where} AND {extra}", [*args, *extra_args]
        sub = f"SELECT r.run_uuid FROM {FROM} WHERE {where}"
        metrics_sql = (
            f"SELECT run_uuid, key, value, is_nan FROM latest_metrics WHERE run_uuid IN ({sub})"
        )
        order = "ORDER BY r.start_time DESC, r.run_uuid"
        with self._db.snapshot():
            if self._db.json_agg:
                # Params and tags folded into one JSON object per run by PostgreSQL (psycopg
                # parses it): 20x fewer rows to move.
                heads = self._rows(
                    f"SELECT {RUN_COLUMNS}, {folded_sql('params', 'p', 'json_object_agg')}, "
                    f"{folded_sql('tags', 't', 'json_object_agg')} "
                    f"FROM {FROM} WHERE {where} {order}",
                    args,
                )
                return assemble_folded(heads, self._rows(metrics_sql, args))
            heads = self._rows(f"SELECT {RUN_COLUMNS} FROM {FROM} WHERE {where} {order}", args)
            params = self._rows(
                f"SELECT run_uuid, key, value FROM params WHERE run_uuid IN ({sub})", args
            )
            metrics = self._rows(metrics_sql, args)
            tags = self._rows(
                f"SELECT run_uuid, key, value FROM tags WHERE run_uuid IN ({sub})", args
            )
        return assemble(heads, params, metrics, tags)

    @property
    def renders_json(self) -> bool:
        return self._db.dialect.renders_json

    def runs_json(
        self,
        experiments: Sequence[str] | None,
        limit: int | None,
        where: Prefilter | None = None,
        order: Sequence[tuple[str, str, bool]] = (),
    ) -> list[str] | None:
        # The database renders each run's output object (SQLite: floats as in
        # ``_read_json``). Selected runs with huge metric values, and databases whose dialect
        # renders nothing, take the general path.
        scope, args = scope_sql(experiments)
        if not self._db.dialect.renders_json:
            return None
        if scope is None:
            return []
        if where is not None:
            extra, extra_args = prefilter_sql(where, self._value_indexed())
            scope, args = f"{scope} AND {extra}", [*args, *extra_args]
        rendered = self._db.dialect.rendered_runs_sql(scope, order, limit)
        assert rendered is not None
        sql, order_args = rendered
        with self._db.snapshot():
            rows = self._rows(sql, [*args, *order_args])
        if any(row[1] for row in rows):
            return None
        return [row[0] for row in rows]

    def _read_json(
        self, experiments: Sequence[str] | None, prefilter: Prefilter | None = None
    ) -> tuple[str, list[tuple[Any, ...]]]:
        """The runs as one JSON document built by the database in one statement (one
        C-level parse instead of ~20 Python objects per row), and the exact values of huge
        metrics. Each run is an array of the run columns, then params, tags and metrics
        objects. A metric value is printed with 17 significant digits and embedded as a JSON
        number (SQLite keeps a number's text; its own rendering of a float rounds to 15
        digits); NaN is null. SQLite's printf is exact only below ~1e105, so values from
        1e100 up (MLflow stores an infinity as the largest float) are the text "big", and
        their exact values come from a second read in the same snapshot."""
        where, args = scope_sql(experiments)
        if where is None:
            return "[]", []
        if prefilter is not None:
            extra, extra_args = prefilter_sql(prefilter, self._value_indexed())
            where, args = f"{where} AND {extra}", [*args, *extra_args]
        sql = self._db.dialect.run_document_sql(where)
        assert sql is not None, "only for dialects that render the run document"
        with self._db.snapshot():
            doc = self._rows(sql, args)[0][0]
            doc = str(doc)
            big: list[tuple[Any, ...]] = []
            if '"big"' in doc:  # rare: spare every other query a scan of latest_metrics
                big = self._rows(
                    "SELECT run_uuid, key, value FROM latest_metrics "
                    "WHERE abs(value) >= 1e100 AND NOT is_nan"
                )
        return doc, big

    def _find(self, run_id: str) -> tuple[Any, ...]:
        ref = check_run_ref(run_id)
        cols = f"{RUN_COLUMNS}, r.lifecycle_stage, e.lifecycle_stage"
        rows = self._rows(f"SELECT {cols} FROM {FROM} WHERE r.run_uuid = ?", [ref])
        if not rows and len(ref) >= MIN_PREFIX:
            rows = self._rows(
                f"SELECT {cols} FROM {FROM} WHERE substr(r.run_uuid, 1, ?) = ? "
                f"AND {ACTIVE} ORDER BY r.run_uuid LIMIT 6",
                [len(ref), ref],
            )
            if len(rows) > 1:
                shown = ", ".join(str(r[0]) for r in rows[:5])
                raise UsageError(
                    f"run id prefix {ref!r} is ambiguous: it matches {shown}"
                    f"{' and more' if len(rows) > 5 else ''}; give more characters"
                )
        if not rows:
            raise NotFoundError(f"run {ref!r} not found in {self.uri}")
        row = rows[0]
        if row[-2] != "active" or row[-1] != "active":
            raise NotFoundError(f"run {row[0]!r} is deleted in {self.uri}")
        return row[:-2]

    def get_run(self, run_id: str) -> RunRecord:
        with self._db.snapshot():
            head = self._find(run_id)
            rid = [head[0]]
            params = self._rows("SELECT run_uuid, key, value FROM params WHERE run_uuid = ?", rid)
            metrics = self._rows(
                "SELECT run_uuid, key, value, is_nan FROM latest_metrics WHERE run_uuid = ?", rid
            )
            tags = self._rows("SELECT run_uuid, key, value FROM tags WHERE run_uuid = ?", rid)
        from lineage.store._sql_rows import assemble

        return assemble([head], params, metrics, tags)[0]

    def metric_histories(self, run_id: str) -> dict[str, list[MetricPoint]]:
        with self._db.snapshot():
            rid = self._find(run_id)[0]
            rows = self._rows(
                "SELECT key, step, value, is_nan, timestamp FROM metrics WHERE run_uuid = ? "
                "ORDER BY key, step, timestamp",
                [rid],
            )
        out: dict[str, list[MetricPoint]] = {}
        for key, step, value, is_nan, ts in rows:
            out.setdefault(key, []).append(
                MetricPoint(int(step), metric_value(float(value), is_nan), int(ts))
            )
        return out

    def artifact_uri(self, run_id: str) -> str | None:
        with self._db.snapshot():
            return self._find(run_id)[7]
