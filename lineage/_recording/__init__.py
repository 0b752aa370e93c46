"""The recording API training scripts use: ``start_run`` and module-level shortcuts.

Nothing here imports MLflow until a run starts, so ``import lineage`` stays cheap.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lineage._errors import UsageError
from lineage._fingerprint import DataFingerprint
from lineage._recording._experiment import default_run_name, ensure_experiment
from lineage._recording._http import HttpWriter
from lineage._recording._run import Run, active_run
from lineage._recording._spool import SpoolFullError, SpoolingWriter, drain
from lineage._recording._start import start_run
from lineage._recording._writer import Batch, Writer, WriteResult
from lineage.lazy import lazy_names

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lineage._recording._sql import SqlWriter

# The SQL writer loads the store's SQL layer: it comes in on first use, for SQL stores only.
_LAZY = {
    "SqlWriter": "lineage._recording._sql",
}

__getattr__ = lazy_names(globals(), _LAZY)


__all__ = [
    "Batch",
    "DataFingerprint",
    "HttpWriter",
    "Run",
    "SpoolFullError",
    "SpoolingWriter",
    "SqlWriter",
    "WriteResult",
    "Writer",
    "active_run",
    "default_run_name",
    "drain",
    "end_run",
    "ensure_experiment",
    "log_dataset",
    "log_metric",
    "log_metrics",
    "log_params",
    "set_tags",
    "start_run",
]


def _run() -> Run:
    run = active_run()
    if run is None:
        raise UsageError("no active run: call lineage.start_run(...) first")
    return run


def log_metric(
    key: str, value: float, step: int | None = None, timestamp: int | None = None
) -> None:
    """``active_run().log_metric``; :class:`UsageError` when no run is active."""
    _run().log_metric(key, value, step, timestamp)


def log_metrics(
    metrics: Mapping[str, float], step: int | None = None, timestamp: int | None = None
) -> None:
    _run().log_metrics(metrics, step, timestamp)


def log_params(params: Mapping[str, Any]) -> None:
    _run().log_params(params)


def set_tags(tags: Mapping[str, Any]) -> None:
    _run().set_tags(tags)


def log_dataset(path: str, name: str | None = None) -> DataFingerprint:
    return _run().log_dataset(path, name)


def end_run(status: str = "FINISHED") -> None:
    """End the active run, if any."""
    run = active_run()
    if run is not None:
        run.end(status)
