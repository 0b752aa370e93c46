"""Any other MLflow store (``file:``, ``http(s)://`` tracking servers, unknown schemas),
read through ``MlflowClient``. Slower than the SQL reader, but it speaks every backend MLflow
does."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from lineage import tags as T
from lineage._errors import NotFoundError, StoreError, UsageError
from lineage.store._base import MIN_PREFIX, RunStore, check_run_ref
from lineage.store._records import Experiment, MetricPoint, RunRecord, metric_value


class ClientRunStore(RunStore):
    """A :class:`RunStore` over ``mlflow.tracking.MlflowClient``."""

    def __init__(self, uri: str) -> None:
        try:
            from mlflow.tracking import MlflowClient
        except ImportError as exc:  # pragma: no cover - mlflow is a hard dependency
            raise StoreError(f"reading {uri} needs mlflow: pip install mlflow") from exc
        from lineage.uri import local_path, masked

        self.uri = masked(uri)
        self._tracking_uri = uri
        local = local_path(uri)
        if local is not None:
            if not os.path.isdir(local):
                raise NotFoundError(
                    f"no MLflow store at {uri}: folder {os.path.abspath(local)} does not exist"
                )
            # MLflow 3 refuses file stores unless asked; reading an existing one is safe.
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        self._client = self._call("opening the store", MlflowClient, tracking_uri=uri)

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from mlflow.exceptions import MlflowException

        try:
            return fn(*args, **kwargs)
        except MlflowException as exc:
            if getattr(exc, "error_code", "") == "RESOURCE_DOES_NOT_EXIST":
                raise NotFoundError(f"{what} not found in {self.uri}") from exc
            message = " ".join(str(exc).split()) or type(exc).__name__
            raise StoreError(f"{what} on {self.uri} failed: {message}") from exc
        except OSError as exc:
            raise StoreError(f"{what} on {self.uri} failed: {' '.join(str(exc).split())}") from exc

    def experiments(self) -> list[Experiment]:
        from mlflow.entities import ViewType

        found: list[Experiment] = []
        token = None
        while True:
            page = self._call(
                "listing experiments",
                self._client.search_experiments,
                view_type=ViewType.ACTIVE_ONLY,
                max_results=1000,
                page_token=token,
            )
            found.extend(Experiment(e.experiment_id, e.name) for e in page)
            token = page.token
            if not token:
                break
        return sorted(found, key=lambda e: (_id_key(e.experiment_id), e.experiment_id))

    def runs(self, experiments: Sequence[str] | None = None) -> list[RunRecord]:
        from mlflow.entities import ViewType

        exps = self.experiments()
        names = {e.experiment_id: e.name for e in exps}
        ids = list(names) if experiments is None else [e for e in experiments if e in names]
        if not ids:
            return []
        out: list[RunRecord] = []
        token = None
        while True:
            page = self._call(
                "searching runs",
                self._client.search_runs,
                ids,
                run_view_type=ViewType.ACTIVE_ONLY,
                max_results=50000,
                order_by=["attributes.start_time DESC"],
                page_token=token,
            )
            out.extend(_record(run, names) for run in page)
            token = page.token
            if not token:
                break
        out.sort(key=lambda r: r.run_id)
        out.sort(key=lambda r: -(r.start_time or 0))
        return out

    def get_run(self, run_id: str) -> RunRecord:
        from mlflow.exceptions import MlflowException

        ref = check_run_ref(run_id)
        try:
            run = self._client.get_run(ref)
        except MlflowException:
            run = None
        if run is None:
            if len(ref) < MIN_PREFIX:
                raise NotFoundError(f"run {ref!r} not found in {self.uri}")
            matches = [r for r in self.runs() if r.run_id.startswith(ref)]
            if len(matches) > 1:
                shown = ", ".join(r.run_id for r in matches[:5])
                raise UsageError(f"run id prefix {ref!r} is ambiguous: it matches {shown}")
            if not matches:
                raise NotFoundError(f"run {ref!r} not found in {self.uri}")
            return matches[0]
        exp = self._call("reading experiment", self._client.get_experiment, run.info.experiment_id)
        if run.info.lifecycle_stage != "active" or exp.lifecycle_stage != "active":
            raise NotFoundError(f"run {ref!r} is deleted in {self.uri}")
        return _record(run, {exp.experiment_id: exp.name})

    def metric_histories(self, run_id: str) -> dict[str, list[MetricPoint]]:
        record = self.get_run(run_id)
        out = {}
        for key in sorted(record.metrics):
            points = self._call(
                f"metric {key!r} of run {record.run_id}",
                self._client.get_metric_history,
                record.run_id,
                key,
            )
            out[key] = sorted(
                (
                    MetricPoint(int(p.step), metric_value(float(p.value)), int(p.timestamp))
                    for p in points
                ),
                key=lambda p: (p.step, p.timestamp),
            )
        return out

    def artifact_uri(self, run_id: str) -> str | None:
        return self.get_run(run_id).artifact_uri


def _id_key(experiment_id: str) -> tuple[int, int]:
    return (0, int(experiment_id)) if experiment_id.isdigit() else (1, 0)


def _record(run: Any, names: dict[str, str]) -> RunRecord:
    info, data = run.info, run.data
    metrics = {k: metric_value(float(v)) for k, v in data.metrics.items()}
    return RunRecord(
        run_id=info.run_id,
        experiment_id=str(info.experiment_id),
        experiment=names.get(str(info.experiment_id), str(info.experiment_id)),
        name=info.run_name or data.tags.get(T.MLFLOW_RUN_NAME, ""),
        status=str(info.status),
        start_time=info.start_time,
        end_time=info.end_time,
        params=dict(data.params),
        metrics=metrics,
        tags=dict(data.tags),
        artifact_uri=info.artifact_uri,
    )
