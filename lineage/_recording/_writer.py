"""Where buffered records go: the contract every writer fills in.

A writer receives batches from the recorder's background thread only, so implementations
need not be thread-safe. ``write`` must be idempotent: after a failure the recorder sends the
same batch again, so a retried batch must not duplicate metric points or fail on params it
already wrote.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from lineage._errors import TransientError

__all__ = [
    "Batch",
    "Point",
    "RunInfo",
    "TransientError",
    "WriteResult",
    "Writer",
    "latest_per_key",
    "merge_params",
    "sanitize",
]

# (key, value, timestamp ms, step), exactly as the training thread handed them over
Point = tuple[str, float, int, int]

MAX_FLOAT = 1.7976931348623157e308


def sanitize(value: float) -> tuple[float, bool]:
    """MLflow's SQL storage of a value: NaN as (0, is_nan), +-Inf as +-max float."""
    if math.isnan(value):
        return 0.0, True
    if math.isinf(value):
        return (MAX_FLOAT if value > 0 else -MAX_FLOAT), False
    return value, False


@dataclass
class Batch:
    """One unit of work: metric points, params (already encoded) and tags, for one run."""

    points: list[Point] = field(default_factory=list)
    params: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.points or self.params or self.tags)

    def __len__(self) -> int:
        return len(self.points) + len(self.params) + len(self.tags)


@dataclass
class RunInfo:
    """What attaching to an existing run needs to know about it."""

    experiment_id: str
    status: str
    lifecycle_stage: str
    params: dict[str, str]
    tags: dict[str, str]


@dataclass
class WriteResult:
    """What a successful ``write`` could not apply: params whose stored value differs."""

    rejected_params: dict[str, tuple[str, str]] = field(default_factory=dict)


class Writer(ABC):
    """Sends batches to one tracking store, for one run at a time.

    ``write`` either applies the whole batch (one transaction where the store has them) or
    raises; it never partially applies metrics. It raises :class:`~lineage.TransientError` for failures
    worth retrying (a locked database, a dropped connection) and any other exception for
    failures that will not heal. Params already stored with the same value are skipped; ones
    stored with a different value are left as they are and reported in the result.
    """

    kind: str = "abstract"

    @abstractmethod
    def write(self, run_id: str, batch: Batch) -> WriteResult: ...

    def set_status(self, run_id: str, status: str, end_time: int | None) -> bool:
        """Set the run's status (and end time, when given) as ``MlflowClient.update_run``
        does; False when this writer cannot, and the caller should use the client."""
        return False

    def set_start_time(self, run_id: str, start_ms: int) -> bool:
        """Move an active run's start time to ``start_ms`` (ms since the epoch), for a run
        created ahead of the work it records. MLflow's API has no such call, so a writer
        that goes through the client returns False and the run keeps its creation time."""
        return False

    def set_name(self, run_id: str, name: str) -> bool:
        """Rename the run (``runs.name`` and the ``mlflow.runName`` tag, as MLflow keeps
        both); False when this writer cannot, and the caller should use the client."""
        return False

    def sync(self) -> bool:
        """Deliver what this writer keeps aside (a spool) if it can now; True when nothing
        waits. Called by the recorder when it has nothing else to write."""
        return True

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections. Safe to call twice."""


def latest_per_key(
    rows: Sequence[tuple[str, float, int, int, bool]],
) -> dict[str, tuple[float, int, int, bool]]:
    """For each key, the point MLflow would keep in ``latest_metrics``: the greatest
    ``(step, timestamp, value)`` (values as stored, NaN as 0)."""
    best: dict[str, tuple[float, int, int, bool]] = {}
    for key, value, ts, step, is_nan in rows:
        cur = best.get(key)
        if cur is None or (step, ts, value) > (cur[2], cur[1], cur[0]):
            best[key] = (value, ts, step, is_nan)
    return best


def merge_params(
    existing: Mapping[str, str], new: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """Split ``new`` into params still to insert and ones conflicting with ``existing``."""
    from lineage._params import same_param_value

    to_insert: dict[str, str] = {}
    rejected: dict[str, tuple[str, str]] = {}
    for key, value in new.items():
        if key in existing:
            if not same_param_value(existing[key], value):
                rejected[key] = (existing[key], value)
        else:
            to_insert[key] = value
    return to_insert, rejected
