"""Recording for tools that write runs themselves (the tuner), beside ``lineage.start_run``.

Training scripts use ``lineage.start_run``. A tool that records a whole campaign from one
process creates its experiment with :func:`ensure_experiment` and writes batches through
:func:`sql_writer` instead of paying MLflow's per-call cost:

    from lineage.recording import Batch, ensure_experiment, sql_writer
    experiment_id = ensure_experiment(client, "campaign")       # or a tracking URI
    writer = sql_writer(uri)               # None: not a SQL store, use MlflowClient.log_batch
    writer.write(run_id, Batch(points=[("loss", 0.5, 1733212800000, 1)], tags={...}))
    writer.set_status(run_id, "FINISHED", end_time_ms); writer.set_name(run_id, "trial-3")
    writer.set_start_time(run_id, start_ms)    # a run created ahead of its work
    writer.close()

A :class:`Writer` is used from one thread at a time; ``write`` is idempotent (a batch sent
again after a failure duplicates nothing) and raises :class:`~lineage.TransientError` for
failures worth retrying.
"""

from __future__ import annotations

from lineage._errors import TransientError
from lineage._recording._experiment import default_run_name, ensure_experiment
from lineage._recording._writer import Batch, Writer, WriteResult
from lineage.uri import is_sql_uri

__all__ = [
    "Batch",
    "TransientError",
    "WriteResult",
    "Writer",
    "default_run_name",
    "ensure_experiment",
    "sql_writer",
]


def sql_writer(uri: str) -> Writer | None:
    """A writer straight into the MLflow tables of a ``sqlite:`` or ``postgresql:`` store,
    or ``None`` for any other store (the caller then goes through MLflow's client).

    Raises :class:`~lineage.StoreError` when the tables are not a schema it knows (use the
    client then) or the database cannot be read, :class:`~lineage.TransientError` (a
    ``StoreError``) for an unreachable one, :class:`~lineage.NotFoundError` for a SQLite
    file that does not exist (it never creates one), :class:`~lineage.UsageError` for a
    database that is not an MLflow store."""
    if not is_sql_uri(uri):
        return None
    from lineage._recording._sql import SqlWriter

    return SqlWriter(uri)
