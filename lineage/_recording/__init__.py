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
from lineage._recording._spool import JournalWriter, SpoolFullError, SpoolingWriter, drain
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
    "JournalWriter",
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
    """Record one point of a metric in the active run; returns at once (a writer thread
    stores it).

    Args:
        key: The metric's name (MLflow's rules: letters, digits, ``_ - . / `` and spaces).
        value: A number; NaN and infinities are stored as they are.
        step: The step of the point (default 0), e.g. the epoch or the optimizer step.
        timestamp: Milliseconds since the epoch (default: now).

    Raises:
        UsageError: No run is active, the name breaks MLflow's rules, or the value is not a
            number.
    """
    _run().log_metric(key, value, step, timestamp)


def log_metrics(
    metrics: Mapping[str, float], step: int | None = None, timestamp: int | None = None
) -> None:
    """Record several metrics of the active run at one step and timestamp.

    Args:
        metrics: Metric name to number.
        step: The step of the points (default 0).
        timestamp: Milliseconds since the epoch (default: now, the same for every metric).

    Raises:
        UsageError: No run is active, or a name or value is refused (as `log_metric`).
    """
    _run().log_metrics(metrics, step, timestamp)


def log_params(params: Mapping[str, Any]) -> None:
    """Record hyperparameters of the active run; nested mappings become dotted keys
    (``{"optimizer": {"lr": 0.1}}`` is ``optimizer.lr``), and secret-looking names are stored
    masked.

    Args:
        params: Name to value; values are stored as text, their types in a tag so that
            queries compare numbers as numbers.

    Raises:
        UsageError: No run is active, or a parameter already holds another value (MLflow
            parameters cannot change once logged: use a metric or a tag for values that do).
    """
    _run().log_params(params)


def set_tags(tags: Mapping[str, Any]) -> None:
    """Set tags of the active run (the last value of a tag wins); secret-looking names and
    passwords in URIs are stored masked.

    Args:
        tags: Name to value (stored as text).

    Raises:
        UsageError: No run is active, a name breaks MLflow's rules, or a value is longer than
            MLflow keeps.
    """
    _run().set_tags(tags)


def log_dataset(path: str, name: str | None = None) -> DataFingerprint:
    """Fingerprint a dataset file or folder into the active run's tags
    ``lineage.data.<name>.{path,fingerprint,size,files}``, so that two runs on different data
    tell apart in ``lineage diff``.

    Args:
        path: The file or folder (a folder is hashed file by file, in name order).
        name: The dataset's name in the tags (default: from the path).

    Returns:
        The fingerprint: path, SHA-256, size in bytes and number of files.

    Raises:
        UsageError: No run is active, or the path does not exist.
    """
    return _run().log_dataset(path, name)


def end_run(status: str = "FINISHED") -> None:
    """Flush and end the active run, if any (nothing happens when none is active).

    Args:
        status: ``FINISHED``, ``FAILED`` or ``KILLED``. A run the script attached to by
            ``MLFLOW_RUN_ID`` (a tuner trial's) keeps the status its owner gives it.

    Raises:
        UsageError: ``status`` is not one of the three.
        StoreError: The store did not take the records within ``LINEAGE_FLUSH_TIMEOUT``;
            they are saved to a local file that a line on stderr names.
    """
    run = active_run()
    if run is not None:
        run.end(status)
