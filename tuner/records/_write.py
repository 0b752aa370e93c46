"""How a batch of params, tags and metric points reaches a run: straight into MLflow's SQL
tables through lineage's writer when the store is SQL; to an ``mlflow server`` through
lineage's http writer, which keeps records in a local spool while the server is away; else
through MLflow's client in chunks it accepts."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = [
    "close_writer",
    "create_run",
    "open_http_writer",
    "open_sql_writer",
    "set_name",
    "set_start_time",
    "set_status",
    "write_batch",
]

_log = logging.getLogger(__name__)
_MAX_BATCH = 900  # MLflow accepts 1,000 metrics per log_batch


def open_sql_writer(uri: str) -> Any:
    """lineage's SQL writer for ``uri``, or None (not a SQL store, or one it cannot write)."""
    from lineage.recording import sql_writer

    try:
        return sql_writer(uri)
    except Exception as exc:  # schema it does not know, driver missing: use MlflowClient
        _log.info("tuner lineage: MlflowClient instead of direct SQL writes: %s", exc)
        return None


def open_http_writer(uri: str) -> Any:
    """lineage's spooling http writer for an ``http(s)://`` server, or None."""
    from lineage.recording import http_writer

    return http_writer(uri)


def close_writer(writer: Any, wait: float | None = None) -> None:
    """Deliver what a spooling writer still holds, waiting up to ``$LINEAGE_SPOOL_WAIT``
    seconds (default 30; at most ``wait``) for a server that is away; what it still holds then stays in the
    spool for the next process, which delivers it; close it. The campaign's closing records
    (the parent run's status among them) are the last ones written, often just after the
    server came back and before the spool tried it again."""
    from lineage import environment
    from lineage.recording import SpoolingWriter

    if isinstance(writer, SpoolingWriter):
        if writer.down:
            waited = environment.spool_wait(default=30.0)
            writer.wait(waited if wait is None else min(waited, wait))
        writer.close()


def write_batch(
    client: Any,
    sql: Any,
    run_id: str,
    guard: Callable[[str, Callable[[], Any]], Any],
    *,
    params: Mapping[str, str] | None = None,
    tags: Mapping[str, str] | None = None,
    metrics: Sequence[tuple[str, float, int, float]] = (),
) -> None:
    """Write to ``run_id``; each store call goes through ``guard("log", call)``, which keeps a
    failure from reaching the campaign. ``metrics`` are ``(key, value, step, time_s)``."""
    if sql is not None:
        from lineage.recording import Batch

        batch = Batch(
            points=[(k, v, int(t * 1000), s) for k, v, s, t in metrics],
            params=dict(params or {}),
            tags=dict(tags or {}),
        )
        if batch:
            guard("log", lambda: sql.write(run_id, batch))
        return
    from mlflow.entities import Metric, Param, RunTag

    param_list = [Param(k, v) for k, v in (params or {}).items()]
    tag_list = [RunTag(k, v) for k, v in (tags or {}).items()]
    metric_list = [Metric(k, v, int(t * 1000), s) for k, v, s, t in metrics]
    while metric_list or param_list or tag_list:
        chunk, metric_list = metric_list[:_MAX_BATCH], metric_list[_MAX_BATCH:]
        p, param_list = param_list[:100], param_list[100:]
        t, tag_list = tag_list[:100], tag_list[100:]
        guard(
            "log",
            lambda c=chunk, p=p, t=t: client.log_batch(  # type: ignore[misc]
                run_id, metrics=c, params=p, tags=t
            ),
        )


def create_run(client: Any, writer: Any, experiment_id: str | None, tags: dict[str, Any]) -> str:
    """A new run in ``experiment_id`` with ``tags``; its id."""
    create = getattr(writer, "create_run", None)
    if create is not None:
        # An mlflow server: waits (one warning line) while it is away, since the trial
        # needs the run's id; created once even when an answer is lost.
        return str(create(experiment_id, tags=tags))
    run = client.create_run(experiment_id, tags=tags)
    return str(run.info.run_id)


def set_name(client: Any, writer: Any, run_id: str, name: str) -> None:
    """Name the run (a SQL writer names it with its ``mlflow.runName`` tag already)."""
    # MLflow keeps the run name in runs.name as well as in the mlflow.runName tag; the SQL
    # writer sets both when it writes that tag (with the trial's other tags).
    if writer is None:
        client.update_run(run_id, name=name)


def set_status(
    client: Any, writer: Any, run_id: str, status: str, end_ms: int | None = None
) -> None:
    """End the run with ``status`` at ``end_ms`` (default now)."""
    end_ms = end_ms if end_ms is not None else int(time.time() * 1000)
    if writer is None or not writer.set_status(run_id, status, end_ms):
        client.set_terminated(run_id, status, end_time=end_ms)


def set_start_time(writer: Any, run_id: str, start_ms: int) -> None:
    """Move the run's start time to ``start_ms``, where the writer can."""
    # MLflow's API cannot change start_time (update_run_info takes status, end time and
    # name): without a writer that can, the run keeps the time it was created at, which
    # is when the trial started (no run is created ahead then; see the recorder's text).
    if writer is not None:
        writer.set_start_time(run_id, start_ms)
