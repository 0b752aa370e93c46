"""Read runs back from any MLflow tracking store, fast.

``open_store(uri)`` returns a :class:`RunStore`: plain SQL over MLflow's own tables for
SQLite and PostgreSQL stores, MLflow's REST search with the filter pushed down for an
``mlflow server``, ``MlflowClient`` for everything else. Queries over the runs
(``--where``, sorting) live in :mod:`lineage.query`.
"""

from __future__ import annotations

from lineage.lazy import lazy_names
from lineage.store._base import RunStore
from lineage.store._open import open_store
from lineage.store._prefilter import AllOf, AnyOf, AttrCondition, KeyCondition, Prefilter
from lineage.store._records import Experiment, MetricPoint, RunRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lineage.store._dialect import Dialect, map_error
    from lineage.store._indexes import drop_indexes, ensure_indexes, index_states
    from lineage.store._schema_lock import schema_lock
    from lineage.store._sql_db import Connection, SchemaMismatch, connect

# The SQL layer, the index maintenance and the schema lock load on first use: a store behind
# a tracking server, and every caller that only reads records, do not pay for them.
_LAZY = {
    "Dialect": "lineage.store._dialect",
    "map_error": "lineage.store._dialect",
    "drop_indexes": "lineage.store._indexes",
    "ensure_indexes": "lineage.store._indexes",
    "index_states": "lineage.store._indexes",
    "Connection": "lineage.store._sql_db",
    "SchemaMismatch": "lineage.store._sql_db",
    "connect": "lineage.store._sql_db",
    "schema_lock": "lineage.store._schema_lock",
}

__getattr__ = lazy_names(globals(), _LAZY)


__all__ = [
    "AllOf",
    "AnyOf",
    "AttrCondition",
    "Connection",
    "Dialect",
    "Experiment",
    "KeyCondition",
    "MetricPoint",
    "Prefilter",
    "RunRecord",
    "RunStore",
    "SchemaMismatch",
    "connect",
    "drop_indexes",
    "ensure_indexes",
    "index_states",
    "map_error",
    "open_store",
    "schema_lock",
]
