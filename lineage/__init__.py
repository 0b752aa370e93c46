"""Hyperparameter lineage over MLflow: record runs, query them, rank and diagnose.

The recording API (``lineage.start_run`` and friends) is what training scripts import; the
query, importance and diagnosis APIs back the ``lineage`` CLI.
"""

from __future__ import annotations

from lineage._errors import LineageError, NotFoundError, QuerySyntaxError, StoreError, UsageError
from lineage._recording import (
    DataFingerprint,
    Run,
    active_run,
    end_run,
    log_dataset,
    log_metric,
    log_metrics,
    log_params,
    set_tags,
    start_run,
)
from lineage._uri import DEFAULT_TRACKING_URI, resolve_tracking_uri

__all__ = [
    "DEFAULT_TRACKING_URI",
    "DataFingerprint",
    "LineageError",
    "NotFoundError",
    "QuerySyntaxError",
    "Run",
    "StoreError",
    "UsageError",
    "active_run",
    "end_run",
    "log_dataset",
    "log_metric",
    "log_metrics",
    "log_params",
    "resolve_tracking_uri",
    "set_tags",
    "start_run",
]
