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

For an ``http(s)://`` tracking server, :func:`http_writer` sends batches through its REST API
with several requests in flight, and keeps them in a local spool while the server is away
(see the recording guide, "When the tracking server is down"); :func:`drain_spool` delivers
what processes that ended left there (also ``python -m lineage.recording drain URI``).

A :class:`Writer` is used from one thread at a time; ``write`` is idempotent (a batch sent
again after a failure duplicates nothing) and raises :class:`~lineage.TransientError` for
failures worth retrying.
"""

from __future__ import annotations

import sys

from lineage._errors import TransientError
from lineage._recording import (
    Batch,
    JournalWriter,
    SpoolFullError,
    SpoolingWriter,
    Writer,
    WriteResult,
    default_run_name,
    ensure_experiment,
)
from lineage.uri import is_sql_uri, scheme

__all__ = [
    "Batch",
    "JournalWriter",
    "SpoolFullError",
    "SpoolingWriter",
    "TransientError",
    "WriteResult",
    "Writer",
    "default_run_name",
    "drain_spool",
    "ensure_experiment",
    "http_writer",
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
    from lineage._recording import SqlWriter

    return SqlWriter(uri)


def http_writer(uri: str) -> SpoolingWriter | None:
    """A writer to an ``http(s)://`` tracking server through its REST API (up to
    ``$LINEAGE_HTTP_IN_FLIGHT``, default 4, requests of 1,000 points in flight), spooling to
    local disk while the server is unreachable; ``None`` for any other store.

    ``write``, ``set_status`` and ``set_name`` return at once while the server is away (the
    records wait in the spool); ``create_run`` waits for the server (a run id handed to
    another process cannot be provisional). ``close`` leaves undelivered records on disk for
    the next process. Raises :class:`SpoolFullError` when the spool's disk is full."""
    if scheme(uri) not in ("http", "https"):
        return None
    from lineage._recording import HttpWriter

    return SpoolingWriter(HttpWriter(uri), uri)


def drain_spool(uri: str, *, timeout: float = 0.0) -> int:
    """Deliver the records that processes which ended left in the spool for ``uri`` (a
    tracking server, or a SQL store a stopped tuner controller could not finish writing to);
    the number delivered. Waits up to ``timeout`` seconds for the store, then raises
    :class:`~lineage.TransientError`."""
    from lineage._recording import drain

    return drain(uri, timeout=timeout)


def _main(argv: list[str]) -> int:
    import argparse

    from lineage._errors import LineageError

    ap = argparse.ArgumentParser(prog="python -m lineage.recording")
    sub = ap.add_subparsers(dest="command", required=True)
    d = sub.add_parser("drain", help="deliver spooled records to a tracking server or SQL store")
    d.add_argument("uri")
    d.add_argument("--wait", type=float, default=0.0, help="seconds to wait for the server")
    args = ap.parse_args(argv)
    try:
        done = drain_spool(args.uri, timeout=args.wait)
    except LineageError as exc:
        print(f"lineage: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"{done} spooled records delivered")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
