"""``start_run``: create a run or attach to an existing one, and pick its writer."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lineage import environment
from lineage import tags as T
from lineage._errors import (
    EnvironmentValueError,
    LineageError,
    NotFoundError,
    StoreError,
    UsageError,
    exiting_on_bad_environment,
    one_line,
)
from lineage._params import types_tag_from_tags
from lineage._recording import _lifecycle
from lineage._recording._client import LazyClient
from lineage._recording._experiment import default_run_name, experiment_from_env
from lineage._recording._run import Run
from lineage._recording._spool import SpoolingWriter
from lineage._recording._writer import RunInfo, TransientError, Writer
from lineage.uri import checked_tracking_uri, masked


def _sql_writer(uri: str, *, warn: bool) -> Writer | None:
    """A writer straight into MLflow's tables, or None where MLflow's client must be used
    (not a SQL store, a schema this version does not know, or a SQLite file MLflow has not
    created yet: ``start_run`` asks again once the client has made and migrated it)."""
    from lineage.uri import is_sql_uri, scheme, sqlite_path

    if not is_sql_uri(uri) or not environment.sql_writer():
        return None
    if scheme(uri) == "sqlite":
        try:
            path = sqlite_path(uri)
        except UsageError:
            return None  # sqlite:// in memory: MLflow's client decides what that means
        if not os.path.exists(path):
            return None  # never create an empty file in MLflow's place
    from lineage._recording._sql import SchemaMismatch, SqlWriter

    try:
        return SqlWriter(uri)
    except SchemaMismatch as exc:
        if warn:
            import logging

            logging.getLogger("lineage.recording").warning(
                "lineage: writing through MlflowClient.log_batch instead of SQL: %s", exc
            )
        return None
    except UsageError:
        raise  # not an MLflow store: falling back would write MLflow's tables into it
    except Exception as exc:  # unreachable, driver missing, sqlite3 / psycopg errors
        raise StoreError(f"tracking store {masked(uri)} cannot be opened: {one_line(exc)}") from exc


def _http_writer(uri: str) -> Writer | None:
    """For an ``http(s)://`` server: its REST API, several requests in flight, with a local
    spool while it is unreachable (``LINEAGE_HTTP_WRITER=0``: MLflow's client instead)."""
    from lineage.uri import scheme

    if scheme(uri) not in ("http", "https") or not environment.http_writer():
        return None
    from lineage._recording._http import HttpWriter
    from lineage._recording._spool import SpoolingWriter

    return SpoolingWriter(HttpWriter(uri), uri)


def _read_run(writer: Writer | None, client: LazyClient, run_id: str) -> RunInfo | None:
    from lineage._recording._spool import SpoolingWriter
    from lineage._recording._sql import SqlWriter

    if isinstance(writer, SqlWriter):
        return writer.read_run(run_id)
    if isinstance(writer, SpoolingWriter):
        try:
            return writer.inner.read_run(run_id)
        except TransientError as exc:
            # The server is away: attach blind; what we write waits in the spool, and a
            # param the run already holds with another value is reported when it is back.
            writer.go_down(exc)
            return RunInfo(
                experiment_id=os.environ.get("MLFLOW_EXPERIMENT_ID", ""),
                status="RUNNING",
                lifecycle_stage="active",
                params={},
                tags={},
            )
    from mlflow.exceptions import MlflowException

    try:
        run = client.get().get_run(run_id)
    except MlflowException:
        return None
    return RunInfo(
        experiment_id=str(run.info.experiment_id),
        status=run.info.status,
        lifecycle_stage=run.info.lifecycle_stage,
        params=dict(run.data.params),
        tags=dict(run.data.tags),
    )


def start_run(
    experiment: str | None = None,
    run_name: str | None = None,
    params: Mapping[str, Any] | None = None,
    tags: Mapping[str, Any] | None = None,
    data: Iterable[str | os.PathLike[str]] | Mapping[str, str | os.PathLike[str]] | None = None,
    tracking_uri: str | None = None,
    *,
    run_id: str | None = None,
    flush_interval: float | None = None,
    record_identity: bool = True,
) -> Run:
    """Start recording a run; use as ``with lineage.start_run(...) as run:`` or keep the handle.

    Attaches to ``run_id`` or, when unset, the run named by ``MLFLOW_RUN_ID`` (set by the
    tuner); otherwise creates a run in ``experiment`` (created if missing; default
    ``MLFLOW_EXPERIMENT_ID``, ``MLFLOW_EXPERIMENT_NAME``, then ``Default``). ``data`` lists
    dataset files or folders (or maps names to them) to fingerprint. Identity tags (git, command
    line, host, versions) are recorded unless ``record_identity=False``. A new run without
    ``run_name`` is called ``<script>-<6 hex digits>``, distinct per run even when the script
    seeded ``random`` (MLflow's generated names repeat then); a new experiment is tagged for
    the MLflow UI's training view (see :func:`lineage.recording.ensure_experiment`).

    A variable of the environment that its rule refuses (a ``LINEAGE_*`` setting, an
    ``MLFLOW_RUN_ID`` naming no run, an ``MLFLOW_TRACKING_URI`` whose scheme MLflow cannot
    open) ends the process as a bad command-line flag does: one
    line on stderr naming the variable, exit status 2, and no run created or left RUNNING.

    Args:
        experiment: The experiment's name (created if missing).
        run_name: The run's name (default ``<script>-<6 hex digits>``).
        params: Hyperparameters to record at once (as `log_params`).
        tags: Tags to set at once (as `set_tags`).
        data: Dataset files or folders to fingerprint (as `log_dataset`), or names mapped to
            them.
        tracking_uri: The store (default ``MLFLOW_TRACKING_URI``, else
            ``sqlite:///mlflow.db``).
        run_id: An existing run to record into instead of creating one.
        flush_interval: Seconds between the writer thread's flushes (default
            ``LINEAGE_FLUSH_INTERVAL``, 0.5).
        record_identity: Whether to record the git commit, command line, host and versions.

    Returns:
        The run handle; a context manager that ends the run (FAILED when the block raised).

    Raises:
        UsageError: A run is already active in this process, or an argument breaks its rule.
        StoreError: The store cannot be opened or refuses the run.
    """
    with exiting_on_bad_environment():
        return _start_run(
            experiment,
            run_name,
            params,
            tags,
            data,
            tracking_uri,
            run_id=run_id,
            flush_interval=flush_interval,
            record_identity=record_identity,
        )


def _start_run(
    experiment: str | None,
    run_name: str | None,
    params: Mapping[str, Any] | None,
    tags: Mapping[str, Any] | None,
    data: Iterable[str | os.PathLike[str]] | Mapping[str, str | os.PathLike[str]] | None,
    tracking_uri: str | None,
    *,
    run_id: str | None,
    flush_interval: float | None,
    record_identity: bool,
) -> Run:
    environment.check()  # before anything is opened or created
    if _lifecycle.active() is not None:
        raise UsageError(
            f"a run is already active ({_lifecycle.active().run_id}); end it before starting another"  # type: ignore[union-attr]
        )
    uri = checked_tracking_uri(tracking_uri)
    client = LazyClient(uri)
    attach_id = run_id or os.environ.get("MLFLOW_RUN_ID") or None
    # Attaching reads the run through SQL (no MLflow import). Creating goes through MLflow,
    # which also creates and migrates a new store; the SQL writer is then opened again. Opening
    # it first also fails fast on an unreachable server (MLflow retries for about a minute).
    writer = _sql_writer(uri, warn=attach_id is not None) or _http_writer(uri)
    start_tags: dict[str, str] = {}
    if record_identity:
        from lineage._identity import identity_tags

        start_tags.update(identity_tags())
    try:
        opened = _open(
            writer,
            client,
            attach_id,
            by_env=run_id is None,
            experiment=experiment,
            run_name=run_name,
            tags=start_tags,
        )
    except BaseException:
        if writer is not None:
            writer.close()
        raise
    if writer is None and not attach_id:
        writer = _sql_writer(uri, warn=True)
    if writer is None:
        from lineage._recording._client import ClientWriter

        writer = ClientWriter(client.get())
    interval = flush_interval if flush_interval is not None else environment.flush_interval()
    run = Run(
        client=client,
        writer=writer,
        run_id=opened.run_id,
        experiment_id=opened.experiment_id,
        tracking_uri=uri,
        owns_run=opened.owns,
        existing_params=opened.params,
        existing_types=opened.types,
        interval=interval,
        flush_timeout=environment.flush_timeout(),
    )
    _lifecycle.register(run)
    try:
        _record_start(run, opened.tags, tags, params, data)
    except BaseException as exc:
        run._note_exception(type(exc), exc)
        run._end_quietly("FAILED")
        raise
    return run


def _open(
    writer: Any,
    client: LazyClient,
    attach_id: str | None,
    *,
    by_env: bool,
    experiment: str | None,
    run_name: str | None,
    tags: dict[str, str],
) -> _Opened:
    """The run to record into: ``attach_id`` when set (``by_env``: named by
    ``MLFLOW_RUN_ID``), else a new one, created through the spooling writer for an mlflow
    server and through MLflow otherwise."""
    if attach_id:
        opened = _attach(writer, client, attach_id, by_env=by_env, tags=tags)
        if run_name:
            opened.tags[T.MLFLOW_RUN_NAME] = run_name
        return opened
    if isinstance(writer, SpoolingWriter):
        experiment_id, created_id = _create_over_http(writer, experiment, run_name, tags)
        return _Opened(experiment_id, created_id)
    return _create(client, experiment, run_name, tags)


def _record_start(
    run: Run,
    opened_tags: Mapping[str, Any],
    tags: Mapping[str, Any] | None,
    params: Mapping[str, Any] | None,
    data: Iterable[str | os.PathLike[str]] | Mapping[str, str | os.PathLike[str]] | None,
) -> None:
    """What `start_run` records at once: the tags of the opening, the caller's tags and
    params, and the fingerprints of ``data``."""
    if opened_tags:
        run.set_tags(opened_tags)
    if tags:
        run.set_tags(tags)
    if params:
        run.log_params(params)
    if data:
        items = data.items() if isinstance(data, Mapping) else ((None, p) for p in data)
        for name, path in items:
            run.log_dataset(path, name)


@dataclass
class _Opened:
    """The run `start_run` records into: its experiment and id, whether this process ends it
    (``owns``), what it already holds (params, their types) and the tags still to set."""

    experiment_id: str
    run_id: str
    owns: bool = True
    params: dict[str, str] = field(default_factory=dict)
    types: dict[str, Any] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)


def _attach(
    writer: Writer | None, client: LazyClient, run_id: str, *, by_env: bool, tags: dict[str, str]
) -> _Opened:
    """Open existing run ``run_id`` (named by ``MLFLOW_RUN_ID`` when ``by_env``): refused when
    missing or deleted; set RUNNING again when this process ends it. ``tags``: this process's
    identity, less the creator's ``mlflow.*`` source tags."""
    existing = _read_run(writer, client, run_id)
    if existing is None:
        # Named by the environment, it is the process's input that is wrong, as a bad flag.
        error = EnvironmentValueError if by_env else NotFoundError
        raise error(
            f"{'MLFLOW_RUN_ID' if by_env else 'run_id'} names no run in {masked(client.uri)}, "
            f"got {run_id!r}"
        )
    if existing.lifecycle_stage != "active":
        raise UsageError(f"run {run_id} is deleted; cannot record into it")
    owns = not by_env or environment.end_attached_run()
    if (
        owns
        and existing.status != "RUNNING"
        and (writer is None or not writer.set_status(run_id, "RUNNING", None))
    ):
        client.get().update_run(run_id, status="RUNNING")
    return _Opened(
        experiment_id=existing.experiment_id,
        run_id=run_id,
        owns=owns,
        params=existing.params,
        types=_json_dict(types_tag_from_tags(existing.tags)),
        tags={
            k: v for k, v in tags.items() if not k.startswith("mlflow.") or k not in existing.tags
        },
    )


def _create(
    client: LazyClient, experiment: str | None, run_name: str | None, tags: dict[str, str]
) -> _Opened:
    """A new run in ``experiment`` (or the environment's), with ``tags`` set at creation."""
    try:
        experiment_id = experiment_from_env(client.get(), experiment)
        created = client.get().create_run(
            experiment_id, tags=tags, run_name=run_name or default_run_name()
        )
    except LineageError:
        raise
    except Exception as exc:  # MlflowException, SQLAlchemy and driver errors alike
        raise StoreError(
            f"tracking store {masked(client.uri)} refused the run: {one_line(exc)}"
        ) from exc
    return _Opened(experiment_id, created.info.run_id)


def _create_over_http(
    writer: SpoolingWriter, experiment: str | None, run_name: str | None, tags: dict[str, str]
) -> tuple[str, str]:
    """``(experiment id, run id)`` of a new run on the server; while the server is away, a
    run created in the spool (a provisional id, the experiment resolved on delivery)."""
    import time

    env_id = os.environ.get("MLFLOW_EXPERIMENT_ID") if experiment is None else None
    name = experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or "Default"
    run_name = run_name or default_run_name()
    start = int(time.time() * 1000)
    try:
        if env_id:
            if writer.inner.experiment_name(env_id) is None:
                raise NotFoundError(f"MLFLOW_EXPERIMENT_ID names no experiment, got {env_id!r}")
            experiment_id = env_id
        else:
            experiment_id = writer.inner.experiment_id(
                name, (T.EXPERIMENT_KIND, T.EXPERIMENT_KIND_TRAINING)
            )
        return experiment_id, writer.inner.create_run(
            experiment_id, run_name=run_name, tags=tags, start_time=start
        )
    except TransientError as exc:
        writer.go_down(exc)
        local = writer.create_spooled(
            experiment=env_id or name,
            by_name=not env_id,
            run_name=run_name,
            tags=tags,
            start_time=start,
        )
        return env_id or "", local


def _json_dict(text: str | None) -> dict[str, str]:
    import json

    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
