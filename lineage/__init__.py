"""Hyperparameter lineage over MLflow: record runs, query them, rank and diagnose.

The recording API (``lineage.start_run`` and friends) is what training scripts import; the
query, importance and diagnosis APIs back the ``lineage`` CLI.
"""

from __future__ import annotations

from lineage._errors import LineageError, NotFoundError, QuerySyntaxError, StoreError, UsageError
from lineage._uri import DEFAULT_TRACKING_URI, resolve_tracking_uri

__all__ = [
    "DEFAULT_TRACKING_URI",
    "LineageError",
    "NotFoundError",
    "QuerySyntaxError",
    "StoreError",
    "UsageError",
    "resolve_tracking_uri",
]
