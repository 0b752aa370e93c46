"""PostgreSQL: the statements with which the database renders runs as JSON itself, the
counterparts of ``run_document_sql`` and ``rendered_runs_sql`` in ``_sql_text.py``.

PostgreSQL (12+) prints a ``float8`` with the shortest digits that read back exactly, in
JSON too, so every finite metric arrives exact; an infinity (MLflow clamps one to the largest
float; a foreign writer's true infinity has no JSON number) takes the "big" path, or prints
as ``"inf"``/``"-inf"``. Each
statement returns text (``::text``): one ``json.loads`` in Python, no per-value driver
conversion.
"""

from __future__ import annotations

from collections.abc import Sequence

from lineage.store._sql_text import FROM, RUN_COLUMNS, RUN_KIND, order_keys
from lineage.tags import MLFLOW_RUN_NAME

# The largest float, which MLflow stores for an infinity (see ``lineage.store.metric_value``).
_LARGEST = "'1.7976931348623157e308'::float8"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_PARAMS = (
    "coalesce((SELECT json_object_agg(p.key, p.value) FROM params p "
    "WHERE p.run_uuid = r.run_uuid), '{}'::json)"
)
_TAGS = (
    "coalesce((SELECT json_object_agg(t.key, {value}) FROM tags t "
    "WHERE t.run_uuid = r.run_uuid), '{{}}'::json)"
)
_DURATION = (
    "CASE WHEN r.start_time IS NULL OR r.end_time IS NULL THEN NULL "
    "ELSE ((r.end_time - r.start_time) / 1000.0)::float8 END"
)
_ORDER_ATTRIBUTES = {"start_time": "r.start_time", "end_time": "r.end_time", "duration": _DURATION}


def run_document_sql(scope: str) -> str:
    """The runs of ``scope`` as one JSON array (see ``SqlRunStore._read_json``)."""
    metrics = (
        "coalesce((SELECT json_object_agg(m.key, CASE WHEN m.is_nan THEN NULL "
        "WHEN m.value IN ('Infinity', '-Infinity') "
        f"OR abs(m.value) >= {_LARGEST} THEN to_json('big'::text) "
        "ELSE to_json(m.value) END) FROM latest_metrics m "
        "WHERE m.run_uuid = r.run_uuid), '{}'::json)"
    )
    return (
        f"SELECT coalesce(json_agg(json_build_array({RUN_COLUMNS}, {_PARAMS}, "
        f"{_TAGS.format(value='t.value')}, {metrics})), '[]'::json)::text "
        f"FROM {FROM} WHERE {scope}"
    )


def rendered_runs_sql(
    scope: str, order: Sequence[tuple[str, str, bool]], limit: int | None
) -> tuple[str, list[Any]]:
    """Each run of ``scope`` as the JSON object of ``run_to_dict`` and ``false`` (nothing
    here is too big to print exactly), sorted by ``order`` then newest first; the statement
    and the arguments of its ORDER BY."""
    keys, args = order_keys(order, _ORDER_ATTRIBUTES)
    metrics = (
        "coalesce((SELECT json_object_agg(m.key, CASE WHEN m.is_nan THEN to_json('nan'::text) "
        f"WHEN m.value >= {_LARGEST} THEN to_json('inf'::text) "
        f"WHEN m.value <= -{_LARGEST} THEN to_json('-inf'::text) "
        "ELSE to_json(m.value) END) FROM latest_metrics m "
        "WHERE m.run_uuid = r.run_uuid), '{}'::json)"
    )
    tags = _TAGS.format(value="coalesce(t.value, '')")
    run_name = (
        "coalesce(nullif(r.name, ''), (SELECT coalesce(t.value, '') FROM tags t "
        f"WHERE t.run_uuid = r.run_uuid AND t.key = '{MLFLOW_RUN_NAME}'), '')"
    )
    sql = (
        "SELECT json_build_object('run_id', r.run_uuid, "
        "'experiment_id', r.experiment_id::text, 'experiment', e.name, "
        f"'run_name', {run_name}, 'status', coalesce(r.status, ''), "
        "'start_time', r.start_time, 'end_time', r.end_time, "
        f"'duration', {_DURATION}, 'params', {_PARAMS}, 'metrics', {metrics}, "
        f"'tags', {tags}, 'kind', {RUN_KIND})::text, "
        "false "
        f"FROM {FROM} WHERE {scope} "
        f"ORDER BY {''.join(k + ', ' for k in keys)}coalesce(r.start_time, 0) DESC, "
        'r.run_uuid COLLATE "C"'
    )
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return sql, args
