"""Read runs back from any MLflow tracking store, fast.

``open_store(uri)`` returns a :class:`RunStore`: plain SQL over MLflow's own tables for
SQLite and PostgreSQL stores, MLflow's REST search with the filter pushed down for an
``mlflow server``, ``MlflowClient`` for everything else. Queries over the runs
(``--where``, sorting) live in :mod:`lineage.query`.
"""

from __future__ import annotations

from lineage.store._base import RunStore
from lineage.store._open import open_store
from lineage.store._records import Experiment, MetricPoint, RunRecord

__all__ = ["Experiment", "MetricPoint", "RunRecord", "RunStore", "open_store"]
