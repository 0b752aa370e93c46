"""A full disk under a campaign's records: recognised wherever it surfaces, said in one line.

A campaign writes to three places that can fill up: the Optuna study (a SQLite file), the
lineage store (``sqlite:///mlflow.db``, its artifacts) and, while an ``mlflow server`` is
away, lineage's local spool. Each layer reports a full disk its own way (sqlite3's
``database or disk is full``, ``OSError`` ENOSPC, lineage's `SpoolFullError`, the study's
`DiskFull`); nothing more can be recorded until space is freed, so the controller stops the
campaign as it stops for a signal and `disk_full` gives the one line it ends with: the path,
the free space there and the space needed, and ``tuner resume``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tuner.search import DiskFull

__all__ = ["disk_full"]

_RESUME = "free space there, then continue with tuner resume"


def disk_full(exc: BaseException, tracking_uri: str | None = None) -> DiskFull | None:
    """The campaign-ending `DiskFull` that ``exc`` (or what caused it) means, else ``None``.

    A write into ``tracking_uri`` (a ``sqlite:///`` store) that found the disk full is named
    by that file; one into any other file by the file the error names."""
    import errno

    from lineage.recording import SpoolFullError
    from tuner.search import DiskFull, exception_chain, is_disk_full

    for err in exception_chain(exc):
        if isinstance(err, DiskFull):
            return err
        if isinstance(err, SpoolFullError):
            return DiskFull(f"{err}; {_RESUME}")
    if not is_disk_full(exc):
        return None
    for err in exception_chain(exc):
        if isinstance(err, OSError) and err.errno == errno.ENOSPC and err.filename:
            return DiskFull.at(Path(str(err.filename)), "the campaign's records")
    store = _sqlite_file(tracking_uri)
    if store is not None:
        return DiskFull.at(store, "the lineage store")
    from lineage.masking import mask_uri

    where = mask_uri(tracking_uri) if tracking_uri else "a campaign file"
    return DiskFull(f"{where}: disk full (no space left on the device); {_RESUME}")


class _QuietDiskFull(logging.Filter):
    """MLflow's SQL store logs every ``OperationalError`` with its traceback before it raises
    it; a full disk is said once, by the controller as it stops, instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage().lower()
        return not any(t in text for t in ("database or disk is full", "no space left on"))


logging.getLogger("mlflow.store.db.utils").addFilter(_QuietDiskFull())


def _sqlite_file(uri: str | None) -> Path | None:
    if not uri or not uri.startswith("sqlite:"):
        return None
    from lineage.uri import sqlite_path

    try:
        return Path(sqlite_path(uri)).absolute()
    except Exception:  # a URI that names no file
        return None
