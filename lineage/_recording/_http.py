"""Batches sent straight to an ``mlflow server``'s REST API, several requests in flight.

``MlflowClient.log_batch`` sends one request of at most 1,000 points at a time and retries a
dead server for minutes. This writer splits a batch into requests of 1,000 points across
keys (MLflow's limit per ``runs/log-batch``), keeps up to ``in_flight`` of them on the wire at
once, and gives up on a request after a few seconds with :class:`~lineage.TransientError`, so
that the caller (the recorder, the spool) decides what to do while the server is away.

Why concurrent requests keep every point once and in order: a metric point's identity in
MLflow's SQL store is ``(run, key, timestamp, step, value)`` (its primary key), and the server
skips a point it already holds, so a request sent again after a lost response stores nothing
twice; a key's history is read back sorted by ``(timestamp, step, value)``, whatever order
the requests arrived in.
"""

from __future__ import annotations

import base64
import math
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lineage import environment
from lineage._errors import (
    LineageError,
    NotFoundError,
    StoreError,
    TransientError,
    UsageError,
    one_line,
)
from lineage._recording._writer import Batch, Point, RunInfo, Writer, WriteResult, merge_params

METRICS_PER_REQUEST = 1000  # MLflow's MAX_METRICS_PER_BATCH
PARAMS_TAGS_PER_REQUEST = 100  # MLflow's MAX_PARAMS_TAGS_PER_BATCH
_API = "/api/2.0/mlflow"
_TRANSIENT_CODES = {"TEMPORARILY_UNAVAILABLE", "INTERNAL_ERROR", "RESOURCE_EXHAUSTED"}


def _number(value: float) -> float | str:
    # Protobuf's JSON form of a double: NaN and the infinities as strings.
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


class HttpError(StoreError):
    """The server answered with an error that retrying will not fix."""

    def __init__(self, message: str, code: str, status: int) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


class Api:
    """A few MLflow REST calls with short timeouts and no retries of its own.

    Credentials as MLflow's client reads them: ``MLFLOW_TRACKING_TOKEN`` (bearer) or
    ``MLFLOW_TRACKING_USERNAME`` / ``MLFLOW_TRACKING_PASSWORD`` (basic);
    ``MLFLOW_TRACKING_INSECURE_TLS=true`` skips certificate checks. Safe across threads (one
    ``requests.Session`` per thread)."""

    def __init__(self, uri: str, *, timeout: float | None = None) -> None:
        self.uri = uri.rstrip("/")
        # (connect, read): a refused or unanswered connection is a server away; a slow answer
        # is a busy server, given time (a request timed out may have been applied; resending
        # it stores nothing twice).
        read = timeout if timeout is not None else environment.http_timeout()
        self.timeout = (min(5.0, read), read)
        self._local = threading.local()
        self._headers = {"Content-Type": "application/json"}
        token = os.environ.get("MLFLOW_TRACKING_TOKEN")
        user = os.environ.get("MLFLOW_TRACKING_USERNAME")
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        elif user:
            pw = os.environ.get("MLFLOW_TRACKING_PASSWORD", "")
            self._headers["Authorization"] = "Basic " + base64.b64encode(
                f"{user}:{pw}".encode()
            ).decode("ascii")
        self._verify = os.environ.get("MLFLOW_TRACKING_INSECURE_TLS", "").lower() != "true"

    def _session(self) -> Any:
        session = getattr(self._local, "session", None)
        if session is None:
            import requests

            session = self._local.session = requests.Session()
            session.headers.update(self._headers)
            session.verify = self._verify
        return session

    def call(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """``POST``/``GET`` ``path`` under ``/api/2.0/mlflow``; the decoded answer.
        :class:`TransientError` for an unreachable or overloaded server, :class:`HttpError`
        for an answer that retrying will not change."""
        import requests

        url = f"{self.uri}{_API}/{path}"
        try:
            if method == "GET":
                resp = self._session().get(url, params=body, timeout=self.timeout)
            else:
                resp = self._session().post(url, json=body, timeout=self.timeout)
        except requests.Timeout as exc:
            raise TransientError(f"{self.uri}: no answer in {self.timeout[1]:g} s") from exc
        except requests.ConnectionError as exc:
            why = "connection refused" if "refused" in str(exc) else one_line(exc, limit=160)
            raise TransientError(f"{self.uri}: {why}") from exc
        except requests.RequestException as exc:
            raise TransientError(f"{self.uri}: {one_line(exc, limit=160)}") from exc
        if resp.status_code == 200:
            return dict(resp.json() or {})
        try:
            answer = resp.json()
        except ValueError:
            answer = {}
        code = str(answer.get("error_code", ""))
        message = (
            f"{self.uri}: HTTP {resp.status_code} {code}: {answer.get('message', resp.text[:300])}"
        )
        if resp.status_code in (429, 502, 503, 504) or code in _TRANSIENT_CODES:
            raise TransientError(message)
        if resp.status_code >= 500:
            raise TransientError(message)
        raise HttpError(message, code, resp.status_code)

    def close(self) -> None:
        session = getattr(self._local, "session", None)
        if session is not None:
            session.close()
            self._local.session = None


def chunk_points(points: Sequence[Point], size: int = METRICS_PER_REQUEST) -> list[list[Point]]:
    return [list(points[i : i + size]) for i in range(0, len(points), size)]


class HttpWriter(Writer):
    """Writes to an ``http(s)://`` tracking server through its REST API."""

    kind = "mlflow-http"

    def __init__(self, uri: str, *, in_flight: int | None = None, api: Api | None = None) -> None:
        self.api = api or Api(uri)
        self.in_flight = in_flight or environment.http_in_flight()
        self._pool: ThreadPoolExecutor | None = None

    # -- reads and run creation (used by start_run and the spool) -----------------------------
    def read_run(self, run_id: str) -> RunInfo | None:
        try:
            run = self.api.call("GET", "runs/get", {"run_id": run_id})["run"]
        except HttpError as exc:
            if exc.code == "RESOURCE_DOES_NOT_EXIST" or exc.status == 404:
                return None
            raise
        info, data = run["info"], run.get("data", {})
        return RunInfo(
            experiment_id=str(info["experiment_id"]),
            status=str(info.get("status", "RUNNING")),
            lifecycle_stage=str(info.get("lifecycle_stage", "active")),
            params={p["key"]: p.get("value", "") for p in data.get("params", [])},
            tags={t["key"]: t.get("value", "") for t in data.get("tags", [])},
        )

    # -- Writer --------------------------------------------------------------------------------
    def write(self, run_id: str, batch: Batch) -> WriteResult:
        result = WriteResult()
        params: dict[str, str] = {}
        if batch.params:
            info = self.read_run(run_id)
            if info is None:
                raise NotFoundError(f"run {run_id} does not exist in {self.api.uri}")
            params, result.rejected_params = merge_params(info.params, batch.params)
        requests_: list[dict[str, Any]] = []
        p_items = [{"key": k, "value": v} for k, v in params.items()]
        t_items = [{"key": k, "value": v} for k, v in batch.tags.items()]
        # Params and tags first, in order (a tag may be set twice; the last must win).
        for i in range(0, len(p_items), PARAMS_TAGS_PER_REQUEST):
            self._post(run_id, {"params": p_items[i : i + PARAMS_TAGS_PER_REQUEST]})
        for i in range(0, len(t_items), PARAMS_TAGS_PER_REQUEST):
            self._post(run_id, {"tags": t_items[i : i + PARAMS_TAGS_PER_REQUEST]})
        for chunk in chunk_points(batch.points):
            requests_.append(
                {
                    "metrics": [
                        {"key": k, "value": _number(v), "timestamp": ts, "step": step}
                        for k, v, ts, step in chunk
                    ]
                }
            )
        if len(requests_) <= 1 or self.in_flight <= 1:
            for body in requests_:
                self._post(run_id, body)
            return result
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.in_flight, thread_name_prefix="lineage-http")
        futures = [self._pool.submit(self._post, run_id, body) for body in requests_]
        first: BaseException | None = None
        for future in futures:
            exc = None if future.cancelled() else future.exception()
            if exc is not None and (first is None or isinstance(first, TransientError)):
                first = exc  # a lasting failure outranks a transient one
                for later in futures:
                    later.cancel()  # the whole batch is sent again; no use queueing the rest
        if first is not None:
            raise first
        return result

    def _post(self, run_id: str, body: dict[str, Any]) -> None:
        try:
            self.api.call("POST", "runs/log-batch", {"run_id": run_id, **body})
        except HttpError as exc:
            if exc.code == "RESOURCE_DOES_NOT_EXIST":
                raise NotFoundError(f"run {run_id} does not exist in {self.api.uri}") from exc
            if exc.code == "INVALID_STATE":
                raise LineageError(f"run {run_id} is deleted; records were not stored") from exc
            raise

    def set_status(self, run_id: str, status: str, end_time: int | None) -> bool:
        body: dict[str, Any] = {"run_id": run_id, "status": status}
        if end_time is not None:
            body["end_time"] = end_time
        self.api.call("POST", "runs/update", body)
        return True

    def set_name(self, run_id: str, name: str) -> bool:
        self.api.call("POST", "runs/update", {"run_id": run_id, "run_name": name})
        return True

    def create_run(
        self,
        experiment_id: str,
        *,
        run_name: str | None,
        tags: dict[str, str],
        start_time: int | None,
    ) -> str:
        body: dict[str, Any] = {
            "experiment_id": experiment_id,
            "tags": [{"key": k, "value": v} for k, v in tags.items()],
        }
        if run_name:
            body["run_name"] = run_name
        if start_time is not None:
            body["start_time"] = start_time
        return str(self.api.call("POST", "runs/create", body)["run"]["info"]["run_id"])

    def find_run(self, experiment_id: str, tag: str, value: str) -> str | None:
        answer = self.api.call(
            "POST",
            "runs/search",
            {
                "experiment_ids": [experiment_id],
                "filter": f"tags.`{tag}` = '{value}'",
                "max_results": 1,
                "run_view_type": "ALL",
            },
        )
        runs = answer.get("runs") or []
        return str(runs[0]["info"]["run_id"]) if runs else None

    def experiment_name(self, experiment_id: str) -> str | None:
        try:
            got = self.api.call("GET", "experiments/get", {"experiment_id": experiment_id})
        except HttpError as exc:
            if exc.code == "RESOURCE_DOES_NOT_EXIST" or exc.status == 404:
                return None
            raise
        return str(got["experiment"]["name"])

    def experiment_id(self, name: str, kind_tag: tuple[str, str] | None = None) -> str:
        """The id of the active experiment ``name``, created (with ``kind_tag``) if missing;
        :class:`~lineage.UsageError` when it is deleted."""
        try:
            got = self.api.call("GET", "experiments/get-by-name", {"experiment_name": name})
            if got["experiment"].get("lifecycle_stage", "active") != "active":
                raise UsageError(
                    f"experiment {name!r} is deleted; restore it or choose another name"
                )
            return str(got["experiment"]["experiment_id"])
        except HttpError as exc:
            if exc.code != "RESOURCE_DOES_NOT_EXIST" and exc.status != 404:
                raise
        body: dict[str, Any] = {"name": name}
        if kind_tag:
            body["tags"] = [{"key": kind_tag[0], "value": kind_tag[1]}]
        try:
            return str(self.api.call("POST", "experiments/create", body)["experiment_id"])
        except HttpError:
            got = self.api.call("GET", "experiments/get-by-name", {"experiment_name": name})
            return str(got["experiment"]["experiment_id"])

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self.api.close()
