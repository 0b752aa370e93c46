"""An ``mlflow server`` read through its REST API, with the filter pushed to the server.

``MlflowClient`` turns every run of a search into protobuf messages and entity objects; a
table of 10,000 runs costs seconds of client time on top of the server's. This reader posts
the same ``runs/search`` requests (``requests``; no ``import mlflow``, a second of start-up
saved per CLI call) and builds :class:`RunRecord` objects from the JSON. A ``--where``
arrives as a prefilter and becomes MLflow filter strings (``_mlflow_filter.py``), each
searched once, concurrently, merged by run id. A search that does not fit one page is split
into 16 searches by the first hex digit of the run id (``attributes.run_id ILIKE '3%'``),
fetched 4 at a time: the server's workers share the work, and no page token is forged (their
format is private to MLflow). MLflow makes every run id with ``uuid4().hex``.

Credentials come from MLflow's own environment variables (``MLFLOW_TRACKING_USERNAME`` and
``_PASSWORD``, ``MLFLOW_TRACKING_TOKEN``, ``MLFLOW_TRACKING_INSECURE_TLS``,
``MLFLOW_TRACKING_SERVER_CERT_PATH``, ``MLFLOW_TRACKING_CLIENT_CERT_PATH``). Single runs,
metric histories and artifacts go through ``MlflowClient`` as before (:class:`ClientRunStore`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence

from lineage import tags as T
from lineage._errors import NotFoundError, StoreError
from lineage.store._client import ClientRunStore, _id_key
from lineage.store._mlflow_filter import mlflow_filters, presence_filter
from lineage.store._records import Experiment, RunRecord, metric_value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from lineage.store._prefilter import Prefilter

#: Runs per page of the first request; a search that fills it is split.
FIRST_PAGE = 1000
#: The most MLflow's search returns in one page.
MAX_PAGE = 50000
#: Requests in flight at once.
WORKERS = 4
_HEX = "0123456789abcdef"
_SEARCH = "/api/2.0/mlflow/runs/search"


class HttpRunStore(ClientRunStore):
    """A :class:`RunStore` over an ``http(s)://`` MLflow tracking server."""

    def __init__(self, uri: str) -> None:
        from lineage.uri import masked

        self.uri = masked(uri)
        self._tracking_uri = uri
        self._base = uri.rstrip("/")
        self._local = threading.local()
        self._mlflow: Any = None
        self._sessions: list[Any] = []
        self._lock = threading.Lock()

    @property
    def _client(self) -> Any:
        # MlflowClient only for what the REST reads here do not cover (one run, histories).
        if self._mlflow is None:
            from mlflow.tracking import MlflowClient

            self._mlflow = self._call("opening the store", MlflowClient, tracking_uri=self._base)
        return self._mlflow

    def close(self) -> None:
        with self._lock:
            for session in self._sessions:
                session.close()
            self._sessions.clear()

    # -- REST ---------------------------------------------------------------------------------
    def _session(self) -> Any:
        session = getattr(self._local, "session", None)
        if session is None:
            import requests

            session = requests.Session()
            env = os.environ.get
            user, password = env("MLFLOW_TRACKING_USERNAME"), env("MLFLOW_TRACKING_PASSWORD")
            if user and password:
                session.auth = (user, password)
            elif env("MLFLOW_TRACKING_TOKEN"):
                session.headers["Authorization"] = f"Bearer {env('MLFLOW_TRACKING_TOKEN')}"
            if (env("MLFLOW_TRACKING_INSECURE_TLS") or "").lower() == "true":
                session.verify = False
            elif env("MLFLOW_TRACKING_SERVER_CERT_PATH"):
                session.verify = str(env("MLFLOW_TRACKING_SERVER_CERT_PATH"))
            if env("MLFLOW_TRACKING_CLIENT_CERT_PATH"):
                session.cert = env("MLFLOW_TRACKING_CLIENT_CERT_PATH")
            self._local.session = session
            with self._lock:
                self._sessions.append(session)
        return session

    def _post(self, what: str, endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
        import requests

        try:
            resp = self._session().post(f"{self._base}{endpoint}", json=body, timeout=120)
        except requests.RequestException as exc:
            raise StoreError(f"{what} on {self.uri} failed: {' '.join(str(exc).split())}") from exc
        try:
            data: dict[str, Any] = resp.json()
        except ValueError:
            data = {}
        if resp.status_code != 200:
            message = data.get("message") or resp.text[:200] or resp.reason
            if data.get("error_code") == "RESOURCE_DOES_NOT_EXIST":
                raise NotFoundError(f"{what} not found in {self.uri}: {message}")
            raise StoreError(
                f"{what} on {self.uri} failed: HTTP {resp.status_code}: {' '.join(message.split())}"
            )
        return data

    # -- reads --------------------------------------------------------------------------------
    def experiments(self) -> list[Experiment]:
        found: list[Experiment] = []
        body: dict[str, Any] = {"max_results": 1000, "view_type": "ACTIVE_ONLY"}
        while True:
            page = self._post("listing experiments", "/api/2.0/mlflow/experiments/search", body)
            found.extend(
                Experiment(str(e["experiment_id"]), str(e.get("name", "")))
                for e in page.get("experiments", ())
            )
            token = page.get("next_page_token")
            if not token:
                break
            body = {**body, "page_token": token}
        return sorted(found, key=lambda e: (_id_key(e.experiment_id), e.experiment_id))

    def runs(self, experiments: Sequence[str] | None = None) -> list[RunRecord]:
        return self.candidates(experiments, None)

    def candidates(
        self, experiments: Sequence[str] | None, prefilter: Prefilter | None
    ) -> list[RunRecord]:
        names = {e.experiment_id: e.name for e in self.experiments()}
        ids = list(names) if experiments is None else [e for e in experiments if e in names]
        if not ids:
            return []
        filters = mlflow_filters(prefilter)
        found: dict[str, dict[str, Any]] = {}
        for pages in _each(lambda where: self._search_all(ids, where), filters):
            for run in pages:
                found.setdefault(run["info"]["run_id"], run)
        out = [_record(run, names) for run in found.values()]
        out.sort(key=lambda r: r.run_id)
        out.sort(key=lambda r: -(r.start_time or 0))
        return out

    def keys_present(
        self, kind: str, keys: Sequence[str], experiments: Sequence[str] | None
    ) -> set[str]:
        names = {e.experiment_id for e in self.experiments()}
        ids = list(names) if experiments is None else [e for e in experiments if e in names]
        if not ids:
            return set(keys)
        wanted = sorted(set(keys))
        # A metric holding only NaN fails this probe and reads as missing: the caller then
        # reads every run to name the known keys, and finds it there.
        probes = [presence_filter(kind, key) for key in wanted]
        hits = _each(lambda where: self._search(ids, where, 1)[0], [*probes, ""])
        present = {key for key, hit in zip(wanted, hits, strict=False) if hit}
        return set(keys) if not hits[-1] else present

    def _search(
        self, ids: Sequence[str], where: str, max_results: int, token: str | None = None
    ) -> tuple[list[dict[str, Any]], str | None]:
        body: dict[str, Any] = {
            "experiment_ids": list(ids),
            "filter": where,
            "run_view_type": "ACTIVE_ONLY",
            "max_results": max_results,
            "order_by": ["attributes.start_time DESC"],
        }
        if token:
            body["page_token"] = token
        page = self._post("searching runs", _SEARCH, body)
        return list(page.get("runs", ())), page.get("next_page_token") or None

    def _search_all(self, ids: Sequence[str], where: str) -> list[dict[str, Any]]:
        first, token = self._search(ids, where, FIRST_PAGE)
        if token is None:
            return first
        parts = [
            f"{where} AND attributes.run_id ILIKE '{h}%'"
            if where
            else f"attributes.run_id ILIKE '{h}%'"
            for h in _HEX
        ]
        out: list[dict[str, Any]] = []
        for pages in _each(lambda where: self._paged(ids, where), parts):
            out.extend(pages)
        return out

    def _paged(self, ids: Sequence[str], where: str) -> list[dict[str, Any]]:
        out, token = self._search(ids, where, MAX_PAGE)
        while token:
            more, token = self._search(ids, where, MAX_PAGE, token)
            out.extend(more)
        return out


def _each(fn: Callable[[str], Any], items: Sequence[str]) -> list[Any]:
    """``fn`` of each item, in order, at most :data:`WORKERS` calls running at once."""
    if len(items) == 1:
        return [fn(items[0])]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(WORKERS, len(items))) as pool:
        return list(pool.map(fn, items))


def _number(value: Any) -> float:
    # Protobuf's JSON writes NaN and the infinities as strings.
    return metric_value(float(value))


def _record(run: dict[str, Any], names: dict[str, str]) -> RunRecord:
    info, data = run["info"], run.get("data", {})
    tags = {t["key"]: t.get("value", "") for t in data.get("tags", ())}
    start, end = info.get("start_time"), info.get("end_time")
    exp_id = str(info.get("experiment_id", ""))
    return RunRecord(
        run_id=info["run_id"],
        experiment_id=exp_id,
        experiment=names.get(exp_id, exp_id),
        name=info.get("run_name") or tags.get(T.MLFLOW_RUN_NAME, ""),
        status=str(info.get("status", "")),
        start_time=None if start is None else int(start),
        end_time=None if end is None else int(end),
        params={p["key"]: p.get("value", "") for p in data.get("params", ())},
        metrics={m["key"]: _number(m.get("value", 0.0)) for m in data.get("metrics", ())},
        tags=tags,
        artifact_uri=info.get("artifact_uri"),
    )
