"""The SQL text :class:`~lineage.store._sql.SqlRunStore` sends: scopes, prefilters, and the
statements with which SQLite renders runs as JSON itself."""

from __future__ import annotations

from collections.abc import Sequence

from lineage.store._prefilter import AllOf, AnyOf, AttrCondition, KeyCondition, Prefilter
from lineage.tags import MLFLOW_RUN_NAME, RUN_KIND_TRAINING, RUN_KINDS_APART, RUN_TYPE

#: A run's ``kind`` in a rendered run object (``lineage.query._table.run_kind``).
RUN_KIND = (
    "coalesce((SELECT t.value FROM tags t WHERE t.run_uuid = r.run_uuid "
    f"AND t.key = '{RUN_TYPE}' AND t.value IN ({', '.join(repr(k) for k in RUN_KINDS_APART)})), "
    f"'{RUN_KIND_TRAINING}')"
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RUN_COLUMNS = (
    "r.run_uuid, r.experiment_id, e.name, r.name, r.status, r.start_time, r.end_time, "
    "r.artifact_uri"
)
ACTIVE = "r.lifecycle_stage = 'active' AND e.lifecycle_stage = 'active'"
FROM = "runs r JOIN experiments e ON e.experiment_id = r.experiment_id"


KEY_TABLES = {"params": "params", "metrics": "latest_metrics", "tags": "tags"}
#: What ``lineage index`` adds, name -> (table, columns). The names are ours, prefixed, so
#: ``--drop`` never touches MLflow's own indexes.
INDEXES: dict[str, tuple[str, tuple[str, ...]]] = {
    "lineage_params_key_value": ("params", ("key", "value", "run_uuid")),
    "lineage_latest_metrics_key_value": (
        "latest_metrics",
        ("key", "value", "is_nan", "run_uuid"),
    ),
    "lineage_tags_key_value": ("tags", ("key", "value", "run_uuid")),
}

_ATTR_COLUMNS = {"status": "r.status", "start_time": "r.start_time", "end_time": "r.end_time"}
_SQL_OPS = frozenset({"=", "<", "<=", ">", ">="})
#: Sortable run attributes (numbers) as SQL expressions.
ORDER_ATTRIBUTES = {
    "start_time": "r.start_time",
    "end_time": "r.end_time",
    "duration": "CASE WHEN r.start_time IS NULL OR r.end_time IS NULL THEN NULL "
    "ELSE (r.end_time - r.start_time) / 1000.0 END",
}


def scope_sql(experiments: Sequence[str] | None) -> tuple[str | None, list[Any]]:
    """The WHERE clause selecting active runs of ``experiments``; ``None`` if none can match."""
    if experiments is None:
        return ACTIVE, []
    ids = [int(e) for e in experiments if str(e).lstrip("-").isdigit()]
    if not ids:
        return None, []
    return f"{ACTIVE} AND r.experiment_id IN ({', '.join('?' * len(ids))})", list(ids)


def prefilter_sql(
    pf: Prefilter, indexed: frozenset[str] = frozenset(KEY_TABLES.values())
) -> tuple[str, list[Any]]:
    """``pf`` as a condition on ``r``. ``indexed``: the tables whose values are indexed
    (``lineage index``; on PostgreSQL the planner chooses, so all)."""
    if isinstance(pf, AllOf | AnyOf):
        parts = []
        for i, item in enumerate(pf.items):
            # An unindexed key condition costs a pass over every row of its key when it is
            # an IN (SELECT ...) list. In an AND, the first one drives and the others are
            # checked per candidate run through the (key, run_uuid) primary key: at 10,000
            # runs that is ~30% less SQL time.
            if (
                isinstance(pf, AllOf)
                and i > 0
                and isinstance(item, KeyCondition)
                and KEY_TABLES[item.kind] not in indexed
                and isinstance(pf.items[0], KeyCondition)
            ):
                parts.append(_key_sql(item, exists=True))
            else:
                parts.append(prefilter_sql(item, indexed))
        joiner = " AND " if isinstance(pf, AllOf) else " OR "
        return "(" + joiner.join(p for p, _ in parts) + ")", [a for _, args in parts for a in args]
    if isinstance(pf, AttrCondition):
        column = _ATTR_COLUMNS[pf.column]
        return _value_test(column, pf.op, pf.values)
    # An uncorrelated ``IN (SELECT ...)``: SQLite walks the (key, run_uuid) primary key once
    # and probes runs by id, 2x faster than a correlated EXISTS probing every run.
    return _key_sql(pf, exists=False)


def _key_sql(pf: KeyCondition, *, exists: bool) -> tuple[str, list[Any]]:
    table = KEY_TABLES[pf.kind]
    if exists:
        sql = f"EXISTS (SELECT 1 FROM {table} x WHERE x.key = ? AND x.run_uuid = r.run_uuid"
    else:
        sql = f"r.run_uuid IN (SELECT x.run_uuid FROM {table} x WHERE x.key = ?"
    args: list[Any] = [pf.key]
    # A pattern only requires the key here: SQLite's LIKE ignores ASCII case, PostgreSQL's
    # reads a backslash as an escape; the exact filter tests it afterwards.
    if pf.op is not None and pf.op not in ("like", "ilike"):
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


def folded_sql(table: str, alias: str, agg: str = "json_group_object") -> str:
    return (
        f"coalesce((SELECT {agg}({alias}.key, {alias}.value) FROM {table} {alias} "
        f"WHERE {alias}.run_uuid = r.run_uuid), '{{}}')"
    )


def order_keys(
    order: Sequence[tuple[str, str, bool]], attributes: dict[str, str]
) -> tuple[list[str], list[Any]]:
    """The ORDER BY terms for ``order`` (metrics by their latest value, else the run attribute
    expressions in ``attributes``, which differ by dialect) and their arguments."""
    keys: list[str] = []
    args: list[Any] = []
    for kind, key, descending in order:
        if kind == "metrics":
            value = (
                "(SELECT CASE WHEN o.is_nan THEN NULL ELSE o.value END FROM latest_metrics o "
                "WHERE o.key = ? AND o.run_uuid = r.run_uuid)"
            )
            args += [key, key]  # the expression appears twice below
        else:
            value = attributes[key]
        # Missing and NaN last either way; ties keep the default order, as a stable sort.
        keys.append(f"{value} IS NULL, {value} {'DESC' if descending else 'ASC'}")
    return keys, args


def rendered_runs_sql(
    scope: str, order: Sequence[tuple[str, str, bool]], limit: int | None
) -> tuple[str, list[Any]]:
    """SQLite: each run of ``scope`` as the JSON object of ``run_to_dict``, and whether it
    holds a metric of 1e100 or more (printf is inexact from ~1e105 up: such a run sends the
    query down the general path); sorted by ``order`` (see ``RunStore.runs_json``), then
    newest first. Returns the statement and the arguments of its ORDER BY, which follow the
    scope's."""
    keys, args = order_keys(order, ORDER_ATTRIBUTES)
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
        f"WHERE t.run_uuid = r.run_uuid AND t.key = '{MLFLOW_RUN_NAME}'), '')"
    )
    sql = (
        "SELECT json_object('run_id', r.run_uuid, "
        "'experiment_id', CAST(r.experiment_id AS TEXT), 'experiment', e.name, "
        f"'run_name', {run_name}, 'status', coalesce(r.status, ''), "
        "'start_time', r.start_time, 'end_time', r.end_time, "
        f"'duration', {ORDER_ATTRIBUTES['duration']}, "
        f"'params', json({folded_sql('params', 'p')}), 'metrics', json({metrics}), "
        f"'tags', json({tags}), 'kind', {RUN_KIND}), "
        "EXISTS (SELECT 1 FROM latest_metrics b WHERE b.run_uuid = r.run_uuid "
        "AND abs(b.value) >= 1e100 AND NOT b.is_nan) "
        f"FROM {FROM} WHERE {scope} "
        f"ORDER BY {''.join(k + ', ' for k in keys)}coalesce(r.start_time, 0) DESC, r.run_uuid"
    )
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return sql, args


def run_document_sql(scope: str) -> str:
    """SQLite: the runs of ``scope`` as one JSON array (see ``SqlRunStore._read_json``)."""
    metrics = (
        "coalesce((SELECT json_group_object(m.key, CASE WHEN m.is_nan THEN NULL "
        "WHEN abs(m.value) < 1e100 THEN json(printf('%!.17g', m.value)) "
        "ELSE 'big' END) FROM latest_metrics m "
        "WHERE m.run_uuid = r.run_uuid), '{}')"
    )
    return (
        "SELECT json_group_array(json_array("
        f"{RUN_COLUMNS}, json({folded_sql('params', 'p')}), "
        f"json({folded_sql('tags', 't')}), json({metrics}))) "
        f"FROM {FROM} WHERE {scope}"
    )
