"""Read MLflow's SQL tables directly (SQLite via ``sqlite3``, PostgreSQL via ``psycopg``).

MLflow's own ``search_runs`` builds ORM objects for every param, metric and tag of every run;
reading the same rows with plain SQL is an order of magnitude faster and needs no
``import mlflow``. Each call reads afresh, so other writers are always visible (the optional
run-table cache of ``_cache.py`` is checked against SQLite's change counter first). A
selective ``--where`` arrives as a prefilter and becomes ``IN (SELECT ...)`` clauses. The schema is checked when the store opens; a store whose tables do not look like MLflow's
raises :class:`SchemaMismatch` and ``open_store`` falls back to ``MlflowClient``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from lineage._errors import NotFoundError, StoreError, UsageError
from lineage._secrets import mask_uri
from lineage.store._base import MIN_PREFIX, RunStore, check_run_ref
from lineage.store._prefilter import AllOf, AnyOf, AttrCondition, Prefilter
from lineage.store._records import Experiment, MetricPoint, RunRecord
from lineage.store._sql_db import (
    REQUIRED_COLUMNS,
    SchemaMismatch,
    connect_postgres,
    connect_sqlite,
    mask,
    one_line,
    sqlite_path,
)
from lineage.store._sql_rows import assemble, assemble_folded, assemble_json

__all__ = ["REQUIRED_COLUMNS", "SchemaMismatch", "SqlRunStore", "sqlite_path"]

_RUN_COLUMNS = (
    "r.run_uuid, r.experiment_id, e.name, r.name, r.status, r.start_time, r.end_time, "
    "r.artifact_uri"
)
_ACTIVE = "r.lifecycle_stage = 'active' AND e.lifecycle_stage = 'active'"
_FROM = "runs r JOIN experiments e ON e.experiment_id = r.experiment_id"


_KEY_TABLES = {"params": "params", "metrics": "latest_metrics", "tags": "tags"}
_ATTR_COLUMNS = {"status": "r.status", "start_time": "r.start_time", "end_time": "r.end_time"}
_SQL_OPS = frozenset({"=", "<", "<=", ">", ">="})


def _scope(experiments: Sequence[str] | None) -> tuple[str | None, list[Any]]:
    """The WHERE clause selecting active runs of ``experiments``; ``None`` if none can match."""
    if experiments is None:
        return _ACTIVE, []
    ids = [int(e) for e in experiments if str(e).lstrip("-").isdigit()]
    if not ids:
        return None, []
    return f"{_ACTIVE} AND r.experiment_id IN ({', '.join('?' * len(ids))})", list(ids)


def _prefilter_sql(pf: Prefilter) -> tuple[str, list[Any]]:
    if isinstance(pf, AllOf | AnyOf):
        parts = [_prefilter_sql(item) for item in pf.items]
        joiner = " AND " if isinstance(pf, AllOf) else " OR "
        return "(" + joiner.join(p for p, _ in parts) + ")", [a for _, args in parts for a in args]
    if isinstance(pf, AttrCondition):
        column = _ATTR_COLUMNS[pf.column]
        return _value_test(column, pf.op, pf.values)
    # An uncorrelated ``IN (SELECT ...)``: SQLite walks the (key, run_uuid) primary key once
    # and probes runs by id, 2x faster than a correlated EXISTS probing every run.
    table = _KEY_TABLES[pf.kind]
    sql = f"r.run_uuid IN (SELECT x.run_uuid FROM {table} x WHERE x.key = ?"
    args: list[Any] = [pf.key]
    if pf.op is not None:
        test, test_args = _value_test("x.value", pf.op, pf.values)
        sql += f" AND {test}"
        args += test_args
        if pf.kind == "metrics":
            sql += " AND NOT x.is_nan"
    return sql + ")", args


def _value_test(column: str, op: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
    if op == "in":
        return f"{column} IN ({', '.join('?' * len(values))})", list(values)
    if op not in _SQL_OPS:
        raise ValueError(f"unsupported prefilter operator {op!r}")
    return f"{column} {op} ?", [values[0]]


def _folded_sql(table: str, alias: str, agg: str = "json_group_object") -> str:
    return (
        f"coalesce((SELECT {agg}({alias}.key, {alias}.value) FROM {table} {alias} "
        f"WHERE {alias}.run_uuid = r.run_uuid), '{{}}')"
    )


class SqlRunStore(RunStore):
    """A :class:`RunStore` over an MLflow SQLite or PostgreSQL database."""

    def __init__(self, uri: str, *, cache: bool = False) -> None:
        self.uri = mask(uri)
        scheme = uri.split(":", 1)[0].split("+", 1)[0].lower()
        self._db = connect_sqlite(uri) if scheme == "sqlite" else connect_postgres(uri)
        self._cache = None
        if cache and scheme == "sqlite":
            from lineage.store._cache import RunTableCache, cache_dir

            directory = cache_dir()
            if directory is not None:
                self._cache = RunTableCache(sqlite_path(uri), directory)
        try:
            self._check_schema()
        except BaseException:
            self._db.close()
            raise

    def _check_schema(self) -> None:
        try:
            present = self._db.columns()
        except Exception as exc:
            raise StoreError(f"cannot read the schema of {self.uri}: {one_line(exc)}") from exc
        missing = [
            f"{table}.{col}"
            for table, cols in REQUIRED_COLUMNS.items()
            for col in sorted(cols - present.get(table, set()))
        ]
        if present and not ({"runs", "experiments"} & set(present)):
            # Someone else's database (an Optuna study, say): falling back to MlflowClient
            # would run MLflow's migrations and write its tables into it.
            raise UsageError(
                f"{mask_uri(self.uri)} is not an MLflow tracking store "
                f"(it has tables {', '.join(sorted(present)[:5])}, but no runs or experiments)"
            )
        if missing:
            raise SchemaMismatch(
                f"{self.uri} is not an MLflow schema this reader knows "
                f"(missing {', '.join(missing[:5])})"
            )

    def close(self) -> None:
        self._db.close()

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._db.rows(sql, args)
        except Exception as exc:
            raise StoreError(f"query on {self.uri} failed: {one_line(exc)}") from exc

    def experiments(self) -> list[Experiment]:
        with self._db.snapshot():
            rows = self._rows(
                "SELECT experiment_id, name FROM experiments "
                "WHERE lifecycle_stage = 'active' ORDER BY experiment_id"
            )
        return [Experiment(str(i), str(n)) for i, n in rows]

    def runs(self, experiments: Sequence[str] | None = None) -> list[RunRecord]:
        if self._cache is None or not self._db.json_agg:
            return self._read_runs(experiments)
        # Read the header before and after the query, outside any transaction: the table is
        # cached only if no write landed in between (same counter), so it is the snapshot.
        # What is cached is what SQLite returned (one JSON text, a few rows): saving and
        # loading it costs a few milliseconds, where marshalled records cost ~100.
        key = self._cache.key()
        raw = self._cache.load(key) if key is not None else None
        if raw is None:
            raw = self._read_json(None)
            if key is not None and self._cache.key() == key:
                self._cache.save(key, raw)
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
        table = _KEY_TABLES[kind]
        scope, args = _scope(experiments)
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
                f"SELECT 1 FROM {_FROM} WHERE {scope} LIMIT 1", args
            ):
                return set(keys)
        return present

    def _read_runs(
        self, experiments: Sequence[str] | None, prefilter: Prefilter | None = None
    ) -> list[RunRecord]:
        if not self._db.postgres and self._db.json_agg:
            return assemble_json(*self._read_json(experiments, prefilter))
        where, args = _scope(experiments)
        if where is None:
            return []
        if prefilter is not None:
            extra, extra_args = _prefilter_sql(prefilter)
            where, args = f"{where} AND {extra}", [*args, *extra_args]
        sub = f"SELECT r.run_uuid FROM {_FROM} WHERE {where}"
        metrics_sql = (
            f"SELECT run_uuid, key, value, is_nan FROM latest_metrics WHERE run_uuid IN ({sub})"
        )
        order = "ORDER BY r.start_time DESC, r.run_uuid"
        with self._db.snapshot():
            if self._db.json_agg:
                # Params and tags folded into one JSON object per run by PostgreSQL (psycopg
                # parses it): 20x fewer rows to move.
                heads = self._rows(
                    f"SELECT {_RUN_COLUMNS}, {_folded_sql('params', 'p', 'json_object_agg')}, "
                    f"{_folded_sql('tags', 't', 'json_object_agg')} "
                    f"FROM {_FROM} WHERE {where} {order}",
                    args,
                )
                return assemble_folded(heads, self._rows(metrics_sql, args))
            heads = self._rows(f"SELECT {_RUN_COLUMNS} FROM {_FROM} WHERE {where} {order}", args)
            params = self._rows(
                f"SELECT run_uuid, key, value FROM params WHERE run_uuid IN ({sub})", args
            )
            metrics = self._rows(metrics_sql, args)
            tags = self._rows(
                f"SELECT run_uuid, key, value FROM tags WHERE run_uuid IN ({sub})", args
            )
        return assemble(heads, params, metrics, tags)

    def runs_json(self, experiments: Sequence[str] | None, limit: int | None) -> list[str] | None:
        # SQLite renders each run's output object; floats as in ``_read_json``. Huge metric
        # values (printf is inexact there) and databases without JSON1 take the general path.
        if self._db.postgres or not self._db.json_agg:
            return None
        where, args = _scope(experiments)
        if where is None:
            return []
        metrics = (
            "coalesce((SELECT json_group_object(m.key, CASE WHEN m.is_nan THEN 'nan' "
            "ELSE json(printf('%!.17g', m.value)) END) FROM latest_metrics m "
            "WHERE m.run_uuid = r.run_uuid), '{}')"
        )
        tags = (
            "coalesce((SELECT json_group_object(t.key, coalesce(t.value, '')) FROM tags t "
            "WHERE t.run_uuid = r.run_uuid), '{}')"
        )
        run_name = (
            "coalesce(nullif(r.name, ''), (SELECT coalesce(t.value, '') FROM tags t "
            "WHERE t.run_uuid = r.run_uuid AND t.key = 'mlflow.runName'), '')"
        )
        sql = (
            "SELECT json_object('run_id', r.run_uuid, "
            "'experiment_id', CAST(r.experiment_id AS TEXT), 'experiment', e.name, "
            f"'run_name', {run_name}, 'status', coalesce(r.status, ''), "
            "'start_time', r.start_time, 'end_time', r.end_time, 'duration', "
            "CASE WHEN r.start_time IS NULL OR r.end_time IS NULL THEN NULL "
            "ELSE (r.end_time - r.start_time) / 1000.0 END, "
            f"'params', json({_folded_sql('params', 'p')}), 'metrics', json({metrics}), "
            f"'tags', json({tags})) "
            f"FROM {_FROM} WHERE {where} "
            "ORDER BY coalesce(r.start_time, 0) DESC, r.run_uuid"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._db.snapshot():
            if self._rows(
                "SELECT 1 FROM latest_metrics WHERE abs(value) >= 1e100 AND NOT is_nan LIMIT 1"
            ):
                return None
            return [row[0] for row in self._rows(sql, args)]

    def _read_json(
        self, experiments: Sequence[str] | None, prefilter: Prefilter | None = None
    ) -> tuple[str, list[tuple[Any, ...]]]:
        """SQLite only: the runs as one JSON document built by SQLite in one statement (one
        C-level parse instead of ~20 Python objects per row), and the exact values of huge
        metrics. Each run is an array of the run columns, then params, tags and metrics
        objects. A metric value is printed with 17 significant digits and embedded as a JSON
        number (SQLite keeps a number's text; its own rendering of a float rounds to 15
        digits); NaN is null. SQLite's printf is exact only below ~1e105, so values from
        1e100 up (MLflow stores an infinity as the largest float) are the text "big", and
        their exact values come from a second read in the same snapshot."""
        where, args = _scope(experiments)
        if where is None:
            return "[]", []
        if prefilter is not None:
            extra, extra_args = _prefilter_sql(prefilter)
            where, args = f"{where} AND {extra}", [*args, *extra_args]
        metrics = (
            "coalesce((SELECT json_group_object(m.key, CASE WHEN m.is_nan THEN NULL "
            "WHEN abs(m.value) < 1e100 THEN json(printf('%!.17g', m.value)) "
            "ELSE 'big' END) FROM latest_metrics m "
            "WHERE m.run_uuid = r.run_uuid), '{}')"
        )
        with self._db.snapshot():
            doc = self._rows(
                "SELECT json_group_array(json_array("
                f"{_RUN_COLUMNS}, json({_folded_sql('params', 'p')}), "
                f"json({_folded_sql('tags', 't')}), json({metrics}))) "
                f"FROM {_FROM} WHERE {where}",
                args,
            )[0][0]
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
        cols = f"{_RUN_COLUMNS}, r.lifecycle_stage, e.lifecycle_stage"
        rows = self._rows(f"SELECT {cols} FROM {_FROM} WHERE r.run_uuid = ?", [ref])
        if not rows and len(ref) >= MIN_PREFIX:
            rows = self._rows(
                f"SELECT {cols} FROM {_FROM} WHERE substr(r.run_uuid, 1, ?) = ? "
                f"AND {_ACTIVE} ORDER BY r.run_uuid LIMIT 6",
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
        nan = math.nan
        for key, step, value, is_nan, ts in rows:
            out.setdefault(key, []).append(
                MetricPoint(int(step), nan if is_nan else float(value), int(ts))
            )
        return out

    def artifact_uri(self, run_id: str) -> str | None:
        with self._db.snapshot():
            return self._find(run_id)[7]
