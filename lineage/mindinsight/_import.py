"""Write training runs read from summary files into an MLflow experiment, once each.

Every imported run carries ``mindinsight.train_id`` (its directory, relative to the base
directory, as MindInsight names it), ``mindinsight.base_dir`` and, written last,
``mindinsight.sha256`` (of its summary files' content). A later import of the same directory
skips runs whose content is already in the experiment, imports new ones, and replaces a run
whose files changed (a training that was still writing, or evaluated since):
the old run is deleted (MLflow's soft delete, restorable) and the new content imported. A run
left without ``mindinsight.sha256`` by an interrupted import is replaced the same way.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lineage import tags as T
from lineage._errors import LineageError, StoreError, UsageError
from lineage.mindinsight._convert import TrainingRecord, read_run
from lineage.mindinsight._discover import SummaryRun, find_runs

__all__ = ["ImportResult", "import_summaries", "record_into", "record_summary_dir"]

KEY_TAG = "mindinsight.train_id"
BASE_TAG = "mindinsight.base_dir"
HASH_TAG = "mindinsight.sha256"


@dataclass
class ImportResult:
    """What happened to one training run: ``imported``, ``unchanged`` (already there),
    ``replaced`` (its files changed since the last import) or ``failed`` (``error`` says
    why, naming the file)."""

    train_id: str
    status: str
    run_id: str | None = None
    error: str | None = None
    params: int = 0
    metrics: int = 0
    points: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "train_id": self.train_id,
            "status": self.status,
            "run_id": self.run_id,
            "error": self.error,
            "params": self.params,
            "metrics": self.metrics,
            "points": self.points,
        }


def record_into(run: Any, record: TrainingRecord) -> dict[str, str]:
    """Log ``record`` into an open ``lineage.Run``. A param the run already holds with another
    value keeps the stored one; the summary's values are returned (``{name: value}``) and
    written to the tag ``mindinsight.conflicts``, not raised."""
    rejected: dict[str, str] = {}
    for key, value in record.params.items():
        try:
            run.log_params({key: value})
        except UsageError:
            rejected[key] = str(value)
    if rejected:
        run.set_tags({"mindinsight.conflicts": json.dumps(rejected)[:5000]})
    for key, value, step, ts in record.metrics:
        run.log_metric(key, value, step=step, timestamp=ts)
    if record.tags:
        run.set_tags(record.tags)
    if record.artifacts:
        with tempfile.TemporaryDirectory(prefix="lineage-mi-") as tmp:
            for rel, doc in record.artifacts.items():
                path = Path(tmp) / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
                parent = Path(rel).parent.as_posix()
                run.log_artifact(path, None if parent == "." else parent)
            run.flush()
    return rejected


def import_summaries(
    base_dir: str | os.PathLike[str],
    *,
    experiment: str | None = None,
    tracking_uri: str | None = None,
    on_start: Callable[[int], None] | None = None,
    on_result: Callable[[ImportResult], None] | None = None,
) -> list[ImportResult]:
    """Import every training run under ``base_dir`` into ``experiment`` (default: the base
    directory's name). One result per run, in :func:`find_runs` order.

    A damaged file fails its run only (status ``failed``); a store that cannot be reached
    raises :class:`~lineage.StoreError`. ``on_start(total)`` and ``on_result(result)`` report
    progress.
    """
    base = Path(base_dir)
    if not base.exists():
        raise UsageError(f"SUMMARY_BASE_DIR must be an existing directory, got {str(base)!r}")
    if not base.is_dir():
        raise UsageError(f"SUMMARY_BASE_DIR must be a directory, got the file {str(base)!r}")
    base = base.resolve()
    runs = find_runs(base)
    if on_start is not None:
        on_start(len(runs))
    if not runs:
        return []
    from lineage.uri import resolve_tracking_uri

    uri = resolve_tracking_uri(tracking_uri)
    name = experiment or base.name or "mindinsight"
    client = _client(uri)
    experiment_id = _experiment(client, name)
    hashes, by_id = _existing(uri, experiment_id, base)
    results = []
    for run in runs:
        result = _import_one(client, uri, experiment_id, run, hashes, by_id)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


def _client(uri: str) -> Any:
    try:
        from mlflow.tracking import MlflowClient

        return MlflowClient(tracking_uri=uri)
    except Exception as exc:
        raise StoreError(f"tracking store {_safe(uri)} cannot be opened: {_line(exc)}") from exc


def _experiment(client: Any, name: str) -> str:
    # A new experiment carries the experiment kind tag, as every experiment lineage creates.
    from lineage.recording import ensure_experiment

    try:
        return ensure_experiment(client, name)
    except LineageError:
        raise
    except Exception as exc:
        raise StoreError(f"experiment {name!r} cannot be created: {_line(exc)}") from exc


def _existing(uri: str, experiment_id: str, base: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Content hashes already imported into the experiment, and run ids by train id of runs
    imported from ``base``."""
    from lineage.store import open_store

    hashes: dict[str, str] = {}  # content hash -> run id (from any base directory)
    by_id: dict[str, str] = {}
    with open_store(uri) as store:
        for record in store.runs([experiment_id]):
            tags = record.tags
            if KEY_TAG not in tags:
                continue
            if tags.get(HASH_TAG):
                hashes[tags[HASH_TAG]] = record.run_id
            if tags.get(BASE_TAG) == str(base):
                by_id[tags[KEY_TAG]] = record.run_id
    return hashes, by_id


def _import_one(
    client: Any,
    uri: str,
    experiment_id: str,
    run: SummaryRun,
    hashes: dict[str, str],
    by_id: dict[str, str],
) -> ImportResult:
    result = ImportResult(train_id=run.train_id, status="imported")
    try:
        digest = run.content_hash()
        if digest in hashes:
            result.status = "unchanged"
            result.run_id = hashes[digest]
            return result
        record = read_run(run)
    except LineageError as exc:
        result.status, result.error = "failed", str(exc)
        return result
    except OSError as exc:
        result.status = "failed"
        result.error = f"{exc.filename or run.summary_dir}: cannot be read ({exc.strerror or exc})"
        return result
    previous = by_id.get(run.train_id)
    if previous is not None:
        result.status = "replaced"
    # MLflow prints "View run ... at: <url>" on stdout when a run on a server ends; stdout
    # belongs to the caller (the CLI's --format json).
    with contextlib.redirect_stdout(io.StringIO()):
        result.run_id = _write(client, uri, experiment_id, run, record, digest)
    if previous is not None:
        try:
            client.delete_run(previous)
        except Exception as exc:
            raise StoreError(f"run {previous} could not be replaced: {_line(exc)}") from exc
    hashes[digest] = by_id[run.train_id] = result.run_id
    result.params = len(record.params)
    result.metrics = len(record.metric_keys())
    result.points = len(record.metrics)
    return result


def _write(
    client: Any,
    uri: str,
    experiment_id: str,
    run: SummaryRun,
    record: TrainingRecord,
    digest: str,
) -> str:
    import lineage

    name = run.train_id.removeprefix("./") or run.base_dir.name
    start_tags = {
        KEY_TAG: run.train_id,
        BASE_TAG: str(run.base_dir),
        T.IMPORT_SOURCE: "mindinsight",
        T.MLFLOW_SOURCE_NAME: str(run.summary_dir),
        T.MLFLOW_SOURCE_TYPE: "LOCAL",
    }
    try:
        created = client.create_run(
            experiment_id, start_time=record.start_ms, tags=start_tags, run_name=name
        )
    except Exception as exc:
        raise StoreError(f"tracking store {_safe(uri)} refused the run: {_line(exc)}") from exc
    run_id = str(created.info.run_id)
    with lineage.start_run(run_id=run_id, tracking_uri=uri, record_identity=False) as handle:
        record_into(handle, record)
        handle.set_tags({HASH_TAG: digest})
    status = "FINISHED" if record.complete else "KILLED"
    try:
        client.set_terminated(run_id, status, end_time=record.end_ms)
    except Exception as exc:
        raise StoreError(f"run {run_id} could not be closed: {_line(exc)}") from exc
    return run_id


def _safe(uri: str) -> str:
    from lineage.masking import mask_uri

    return mask_uri(uri)


def _line(exc: BaseException) -> str:
    from lineage._errors import one_line

    return one_line(exc)


def record_summary_dir(
    summary_dir: str | os.PathLike[str],
    *,
    base_dir: str | os.PathLike[str] | None = None,
    run: Any = None,
) -> SummaryRun | None:
    """Record the training in ``summary_dir`` into ``run`` (default: the active
    ``lineage`` run, else the run named by ``MLFLOW_RUN_ID``), with the tags
    :func:`import_summaries` writes, so that a later import of ``base_dir`` (default: the
    directory above) finds it already there. Returns the run recorded, or None when the
    directory holds no summary. Raises :class:`RecordError` for a damaged file.
    """
    import dataclasses

    import lineage

    directory = Path(summary_dir).resolve()
    base = Path(base_dir).resolve() if base_dir is not None else directory.parent
    found = [r for r in find_runs(directory) if r.summary_dir == directory]
    if not found:
        return None
    summary = dataclasses.replace(found[0], base_dir=base)
    record = read_run(summary)
    digest = summary.content_hash()
    tags = {
        KEY_TAG: summary.train_id,
        BASE_TAG: str(base),
        T.IMPORT_SOURCE: "mindinsight",
    }
    handle = run if run is not None else lineage.active_run()
    if handle is not None:
        record_into(handle, record)
        handle.set_tags({**tags, HASH_TAG: digest})
        handle.flush()
        return summary
    with lineage.start_run(record_identity=False) as attached:
        record_into(attached, record)
        attached.set_tags({**tags, HASH_TAG: digest})
    return summary
