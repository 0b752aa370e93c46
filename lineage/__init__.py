"""Hyperparameter lineage over MLflow: record runs, query them, rank and diagnose.

The recording API (``lineage.start_run`` and friends) is what training scripts import; the
query, importance and diagnosis APIs back the ``lineage`` CLI. Other tools (the tuner) use
the public modules :mod:`lineage.recording` (experiments, bulk SQL writers),
:mod:`lineage.uri`, :mod:`lineage.tags`, :mod:`lineage.masking`, :mod:`lineage.console`,
:mod:`lineage.store`, :mod:`lineage.query` and :mod:`lineage.lazy` (names a package loads
on first use); underscore modules are internal.
"""

from __future__ import annotations

from lineage._errors import (
    EnvironmentValueError,
    LineageError,
    NotFoundError,
    QuerySyntaxError,
    StoreError,
    TransientError,
    UsageError,
)
from lineage.lazy import lazy_names
from lineage.uri import DEFAULT_TRACKING_URI, resolve_tracking_uri

TYPE_CHECKING = False
if TYPE_CHECKING:
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

# The recording API loads on first use: the CLIs import ``lineage`` for its errors and
# store, and should not pay for the recorder's threads, signals and fingerprinting at start-up.
_RECORDING = (
    "DataFingerprint",
    "Run",
    "active_run",
    "end_run",
    "log_dataset",
    "log_metric",
    "log_metrics",
    "log_params",
    "set_tags",
    "start_run",
)
__getattr__ = lazy_names(globals(), dict.fromkeys(_RECORDING, "lineage._recording"))


__all__ = [
    "DEFAULT_TRACKING_URI",
    "DataFingerprint",
    "EnvironmentValueError",
    "LineageError",
    "NotFoundError",
    "QuerySyntaxError",
    "Run",
    "StoreError",
    "TransientError",
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
