"""MLflow's own client, made on first use, and batches sent through its ``log_batch``: any
store MLflow can reach (file:, http:)."""

from __future__ import annotations

from typing import Any

from lineage._errors import StoreError, one_line
from lineage._recording._writer import Batch, TransientError, Writer, WriteResult, merge_params
from lineage.uri import masked

_METRICS_PER_CALL = 1000  # MLflow's MAX_METRICS_PER_BATCH
_PARAMS_TAGS_PER_CALL = 100  # MLflow's MAX_PARAMS_TAGS_PER_BATCH


class ClientWriter(Writer):
    """Slower but universal; used for non-SQL stores and SQL schemas this package does not know."""

    kind = "mlflow-client"

    def __init__(self, client: Any) -> None:
        self._client = client

    def set_name(self, run_id: str, name: str) -> bool:
        self._client.update_run(run_id, name=name)
        return True

    def write(self, run_id: str, batch: Batch) -> WriteResult:
        from mlflow.entities import Metric, Param, RunTag
        from mlflow.exceptions import MlflowException

        result = WriteResult()
        try:
            params: dict[str, str] = {}
            if batch.params:
                existing = self._client.get_run(run_id).data.params
                params, result.rejected_params = merge_params(existing, batch.params)
            entities = [Param(k, v) for k, v in params.items()]
            tags = [RunTag(k, v) for k, v in batch.tags.items()]
            for i in range(0, len(entities), _PARAMS_TAGS_PER_CALL):
                self._client.log_batch(run_id, params=entities[i : i + _PARAMS_TAGS_PER_CALL])
            for i in range(0, len(tags), _PARAMS_TAGS_PER_CALL):
                self._client.log_batch(run_id, tags=tags[i : i + _PARAMS_TAGS_PER_CALL])
            points = batch.points
            for i in range(0, len(points), _METRICS_PER_CALL):
                chunk = [
                    Metric(k, v, ts, step) for k, v, ts, step in points[i : i + _METRICS_PER_CALL]
                ]
                self._client.log_batch(run_id, metrics=chunk)
        except MlflowException as exc:
            code = getattr(exc, "error_code", "")
            if code in ("TEMPORARILY_UNAVAILABLE", "INTERNAL_ERROR", "RESOURCE_EXHAUSTED"):
                raise TransientError(str(exc)) from exc
            raise
        except OSError as exc:
            raise TransientError(str(exc)) from exc
        return result


class LazyClient:
    """An ``MlflowClient`` made on first use: attaching to a run on a SQL store needs none,
    which spares a tuner trial the ~2 s ``import mlflow`` costs."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._client: Any = None

    def get(self) -> Any:
        if self._client is None:
            from mlflow.tracking import MlflowClient

            try:
                self._client = MlflowClient(tracking_uri=self.uri)
            except Exception as exc:  # MlflowException, SQLAlchemy and driver errors alike
                raise StoreError(
                    f"tracking store {masked(self.uri)} cannot be opened: {one_line(exc)}"
                ) from exc
        return self._client
