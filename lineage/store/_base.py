"""The read contract every lineage store backend fulfils."""

from __future__ import annotations

import abc
import os
from collections.abc import Sequence

from lineage._errors import NotFoundError, StoreError, UsageError
from lineage.store._records import Experiment, MetricPoint, RunRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lineage.store._prefilter import Prefilter


class RunStore(abc.ABC):
    """Read access to the runs of one MLflow tracking store.

    Contract shared by every backend (checked by ``tests/store``):

    - Only *active* experiments and runs are visible; deleted ones do not exist for a store.
    - Every call reads the store afresh: runs that another process adds, updates or deletes
      are visible to the next call, never served from a stale cache. One call sees one
      consistent snapshot.
    - ``runs`` returns :class:`RunRecord` objects ordered by start time, newest first (ties by
      run id), for the experiments named (ids) or for all active ones when ``None``.
    - ``get_run`` accepts a full run id or a unique prefix of one (at least 4 characters).
      An unknown, deleted or ambiguous id raises :class:`~lineage.NotFoundError`
      (ambiguous: :class:`~lineage.UsageError`); both exit 2.
    - ``metric_history`` returns the points of one metric ordered by step then timestamp;
      an unknown metric or run raises :class:`~lineage.NotFoundError`.
    - ``candidates`` may narrow ``runs`` by a prefilter (a necessary condition) and
      ``keys_present`` answers which keys exist; both have correct, slower defaults here.
    - An unreachable or broken store raises :class:`~lineage.StoreError`.
    - A store object may be used from one thread at a time; open one per thread. Any number of
      processes may read the same store while others write it.
    """

    #: The tracking URI this store reads, its password masked (for messages).
    uri: str
    #: The same URI unmasked, for the MLflow clients a store may need (remote artifacts).
    _tracking_uri: str = ""

    @abc.abstractmethod
    def experiments(self) -> list[Experiment]:
        """All active experiments, ordered by id."""

    @abc.abstractmethod
    def runs(self, experiments: Sequence[str] | None = None) -> list[RunRecord]:
        """Active runs of the given experiment ids (all active experiments when ``None``)."""

    @abc.abstractmethod
    def get_run(self, run_id: str) -> RunRecord:
        """The active run with this id or unique id prefix."""

    @abc.abstractmethod
    def metric_histories(self, run_id: str) -> dict[str, list[MetricPoint]]:
        """Every metric of a run with all its points (step, then timestamp order)."""

    @abc.abstractmethod
    def artifact_uri(self, run_id: str) -> str | None:
        """Where the run's artifacts live, as MLflow recorded it."""

    def candidates(
        self, experiments: Sequence[str] | None, prefilter: Prefilter | None
    ) -> list[RunRecord]:
        """Runs that may satisfy ``prefilter`` (a necessary condition, see
        :mod:`lineage.store._prefilter`): a superset of those that do, in ``runs`` order.
        Backends that cannot evaluate it return every run."""
        return self.runs(experiments)

    def keys_present(
        self, kind: str, keys: Sequence[str], experiments: Sequence[str] | None
    ) -> set[str]:
        """Which of ``keys`` some active run of ``experiments`` has among its ``kind``
        (params, metrics, tags). With no run selected at all, every key counts as present:
        there is nothing to hold it against."""
        runs = self.runs(experiments)
        if not runs:
            return set(keys)
        return {k for k in keys if any(k in getattr(r, kind) for r in runs)}

    @property
    def renders_json(self) -> bool:
        """Whether :meth:`runs_json` may render runs (else it always returns ``None``, and
        callers skip what they would prepare for it)."""
        return False

    def runs_json(
        self,
        experiments: Sequence[str] | None,
        limit: int | None,
        where: Prefilter | None = None,
        order: Sequence[tuple[str, str, bool]] = (),
    ) -> list[str] | None:
        """The runs of :meth:`runs` that satisfy ``where`` (an *exact* condition, see
        ``lineage.query._pushdown.exact_prefilter``), sorted by ``order`` then newest first,
        at most ``limit``, each already rendered as the JSON object of
        ``lineage.query._table.run_to_dict`` (same keys and values; spacing and float digits
        may differ); ``None`` where the backend cannot render them itself.

        ``order`` holds ``(kind, key, descending)`` with kind ``metrics`` or ``attributes``
        (``start_time``, ``end_time``, ``duration``): numbers, sorted as
        ``lineage.query.sort_runs`` does, missing values and NaN last either way. Lets
        ``lineage runs --format json`` skip building Python objects."""
        del experiments, limit, where, order
        return None

    def experiment_tags(self, experiment_id: str) -> dict[str, str]:
        """The tags of one active experiment (empty for an unknown id). This default asks
        MLflow's client; SQL stores read the table directly."""
        from mlflow.tracking import MlflowClient

        try:
            exp = MlflowClient(tracking_uri=self._tracking_uri or self.uri).get_experiment(
                experiment_id
            )
        except Exception as exc:
            if getattr(exc, "error_code", "") == "RESOURCE_DOES_NOT_EXIST":
                return {}
            raise StoreError(f"reading experiment {experiment_id} of {self.uri}: {exc}") from exc
        return dict(exp.tags or {}) if exp.lifecycle_stage == "active" else {}

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release connections. The store must not be used afterwards."""

    # Derived operations, written once on top of the abstract ones.

    def resolve_experiments(self, names_or_ids: Sequence[str] | None) -> list[Experiment]:
        """Experiments by name (first) or id; ``None`` or empty means all active ones."""
        known = self.experiments()
        if not names_or_ids:
            return known
        by_name = {e.name: e for e in known}
        by_id = {e.experiment_id: e for e in known}
        chosen: list[Experiment] = []
        for ref in names_or_ids:
            exp = by_name.get(ref) or by_id.get(ref)
            if exp is None:
                names = ", ".join(sorted(by_name)) or "none"
                raise NotFoundError(
                    f"experiment {ref!r} not found in {self.uri} "
                    f"(no active experiment has this name or id; known: {names})"
                )
            if exp not in chosen:
                chosen.append(exp)
        return chosen

    def metric_history(self, run_id: str, key: str) -> list[MetricPoint]:
        """The points of one metric; :class:`~lineage.NotFoundError` if the run never logged it."""
        histories = self.metric_histories(run_id)
        if key not in histories:
            known = ", ".join(sorted(histories)) or "none"
            raise NotFoundError(f"metric {key!r} not found in run {run_id} (known: {known})")
        return histories[key]

    def artifacts(self, run_id: str) -> list[str]:
        """Paths of every artifact file of the run, relative to its artifact root, sorted."""
        uri = self.artifact_uri(run_id)
        if not uri:
            return []
        from lineage.uri import local_path

        local = local_path(uri)
        if local is not None:
            if not os.path.isdir(local):
                return []
            found = []
            for root, _dirs, files in os.walk(local):
                for name in files:
                    found.append(os.path.relpath(os.path.join(root, name), local))
            return sorted(p.replace(os.sep, "/") for p in found)
        return _remote_artifacts(uri, self._tracking_uri or self.uri, run_id)

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _remote_artifacts(artifact_uri: str, tracking_uri: str, run_id: str) -> list[str]:
    # Remote artifact stores (S3, mlflow-artifacts:/ proxies, ...) need MLflow's own clients.
    try:
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=tracking_uri)
        found: list[str] = []
        pending = [""]
        while pending:
            path = pending.pop()
            for info in client.list_artifacts(run_id, path or None):
                (pending if info.is_dir else found).append(info.path)
        return sorted(found)
    except Exception as exc:
        raise StoreError(
            f"cannot list artifacts at {artifact_uri} for run {run_id}: {' '.join(str(exc).split())}"
        ) from exc


def check_run_ref(run_id: str) -> str:
    """A run id or prefix as typed by a user, stripped; rejects empty and whitespace ones."""
    ref = run_id.strip()
    if not ref or any(c.isspace() for c in ref):
        raise UsageError(f"run id must be a run id or a unique prefix of one, got {run_id!r}")
    return ref


MIN_PREFIX = 4
