"""Bulk recording into an MLflow SQL store, for tools that write many runs at once.

Training scripts use ``lineage.start_run``; a tool such as the tuner, which records a whole
campaign from one process, writes batches through :func:`sql_writer` instead of paying
MLflow's per-call cost.
"""

from __future__ import annotations

from lineage._recording._writer import Batch, Writer
from lineage._uri import is_sql_uri

__all__ = ["Batch", "Writer", "sql_writer"]


def sql_writer(uri: str) -> Writer | None:
    """A writer straight into the MLflow tables of a ``sqlite:`` or ``postgresql:`` store,
    or ``None`` for any other store (the caller then goes through MLflow's client)."""
    if not is_sql_uri(uri):
        return None
    from lineage._recording._sql import SqlWriter

    return SqlWriter(uri)
