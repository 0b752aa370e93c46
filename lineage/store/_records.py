"""The plain values a :class:`~lineage.store.RunStore` hands out.

Plain classes (see :mod:`lineage._values`): ``lineage runs`` loads this module on every call.
"""

from __future__ import annotations

from lineage._values import Value

_LARGEST = 1.7976931348623157e308


def metric_value(value: float, is_nan: bool = False) -> float:
    """A stored metric value as it was logged. MLflow's SQL stores keep a NaN as 0 with a flag
    (``is_nan``) and an infinity as the largest float, which every reader here turns back into
    NaN, ``inf`` and ``-inf``: a diverged loss then reads ``inf``, not ``1.79769e+308``."""
    if is_nan:
        return float("nan")
    if -_LARGEST < value < _LARGEST or value != value:
        return value
    return float("inf") if value > 0 else float("-inf")


class Experiment(Value):
    """An active MLflow experiment."""

    _fields = ("experiment_id", "name")
    __slots__ = _fields

    def __init__(self, experiment_id: str, name: str) -> None:
        self.experiment_id = experiment_id
        self.name = name


class MetricPoint(Value):
    """One logged value of a metric. ``timestamp`` is in milliseconds since the epoch."""

    _fields = ("step", "value", "timestamp")
    __slots__ = _fields

    def __init__(self, step: int, value: float, timestamp: int) -> None:
        self.step = step
        self.value = value
        self.timestamp = timestamp


class RunRecord(Value):
    """One MLflow run, flattened: everything a query, a diff or an analysis needs.

    Treat it as read-only. ``params`` are MLflow's raw strings; ``metrics`` hold each
    metric's latest value (MLflow's rule: highest step, then latest timestamp; NaN stays
    NaN). Times are milliseconds since the epoch, ``end_time`` is ``None`` while the run is
    unfinished.
    """

    _fields = (
        "run_id",
        "experiment_id",
        "experiment",
        "name",
        "status",
        "start_time",
        "end_time",
        "params",
        "metrics",
        "tags",
        "artifact_uri",
    )
    __slots__ = _fields

    def __init__(
        self,
        run_id: str,
        experiment_id: str,
        experiment: str,
        name: str,
        status: str,
        start_time: int | None,
        end_time: int | None,
        params: dict[str, str] | None = None,
        metrics: dict[str, float] | None = None,
        tags: dict[str, str] | None = None,
        artifact_uri: str | None = None,
    ) -> None:
        self.run_id = run_id
        self.experiment_id = experiment_id
        self.experiment = experiment
        self.name = name
        self.status = status
        self.start_time = start_time
        self.end_time = end_time
        self.params: dict[str, str] = {} if params is None else params
        self.metrics: dict[str, float] = {} if metrics is None else metrics
        self.tags: dict[str, str] = {} if tags is None else tags
        self.artifact_uri = artifact_uri

    __hash__ = None  # type: ignore[assignment]  # mutable dicts inside, like a dataclass

    @property
    def duration(self) -> float | None:
        """Wall-clock seconds from start to end, ``None`` while the run has not ended."""
        if self.start_time is None or self.end_time is None:
            return None
        return (self.end_time - self.start_time) / 1000.0
