"""The check contract, the finding it produces, and the run view it reads."""

from __future__ import annotations

import abc
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from lineage.diagnose import _names
from lineage.diagnose._thresholds import DEFAULT_THRESHOLDS, Thresholds

Severity = Literal["error", "warning"]
_FLOAT_MAX = sys.float_info.max
SEVERITIES: tuple[Severity, ...] = ("error", "warning")


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem a check found in one run.

    ``evidence`` always holds ``metric`` (or ``param``), ``step`` and ``value`` (the point that
    shows the problem, ``None`` when not a curve point) and ``window`` (``[first, last]`` steps
    the check looked at, or ``None``), plus check-specific figures. ``causes`` and
    ``next_steps`` are plain sentences from the accuracy-tuning checklist.
    """

    check: str
    severity: Severity
    summary: str
    evidence: dict[str, Any]
    causes: tuple[str, ...] = ()
    next_steps: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "severity": self.severity,
            "summary": self.summary,
            "evidence": dict(self.evidence),
            "causes": list(self.causes),
            "next_steps": list(self.next_steps),
        }


@dataclass(frozen=True, slots=True)
class Series:
    """One metric's history ordered by step, as float arrays (NaN and +/-Inf kept; the
    +/-1.797e308 that MLflow stores for +/-Inf are read back as +/-Inf)."""

    name: str
    steps: np.ndarray
    values: np.ndarray

    @classmethod
    def from_points(cls, name: str, points: Iterable[Any]) -> Series:
        steps: list[int] = []
        values: list[float] = []
        for point in points:
            if isinstance(point, tuple | list):
                step, value = point[0], point[1]
            else:  # lineage.store.MetricPoint or anything with .step/.value
                step, value = point.step, point.value
            steps.append(int(step))
            value = float(value)
            if abs(value) >= _FLOAT_MAX:  # MLflow stores +/-Inf as +/-max float
                value = math.copysign(math.inf, value)
            values.append(value)
        order = np.argsort(np.asarray(steps, dtype=np.int64), kind="stable")
        return cls(
            name,
            np.asarray(steps, dtype=np.int64)[order],
            np.asarray(values, dtype=np.float64)[order],
        )

    def __len__(self) -> int:
        return int(self.values.size)

    def finite(self) -> Series:
        keep = np.isfinite(self.values)
        return self if keep.all() else Series(self.name, self.steps[keep], self.values[keep])

    def window_size(self, t: Thresholds) -> int:
        return max(t.window_min_points, math.ceil(len(self) * t.window_fraction))

    def initial_level(self, t: Thresholds) -> float:
        return float(np.median(self.values[: self.window_size(t)]))

    def final_level(self, t: Thresholds) -> float:
        return float(np.median(self.values[-self.window_size(t) :]))

    def smoothed(self, t: Thresholds) -> np.ndarray:
        """Centred rolling median over one window (shorter windows at the edges)."""
        import pandas as pd  # its skip-list rolling median is O(n log w), numpy's is O(n w)

        w = self.window_size(t)
        rolled = pd.Series(self.values).rolling(w, center=True, min_periods=1).median()
        return np.asarray(rolled.to_numpy(), dtype=np.float64)

    def trailing(self, t: Thresholds) -> np.ndarray:
        """Rolling median over the window that *ends* at each point, from the first full
        window on (element ``j`` is the level of points ``j .. j + w - 1``): what a running
        trial's curve shows at each report, before the points after it exist."""
        import pandas as pd

        w = self.window_size(t)
        rolled = pd.Series(self.values).rolling(w).median().to_numpy()[w - 1 :]
        return np.asarray(rolled, dtype=np.float64)

    def step_at(self, index: int) -> int:
        return int(self.steps[index])

    def span(self) -> list[int] | None:
        return [int(self.steps[0]), int(self.steps[-1])] if len(self) else None


@dataclass(slots=True)
class RunData:
    """What the checks read about one run: metric histories, parameters, tags, and the
    MLflow status when known (``None`` for plain data)."""

    histories: dict[str, Series]
    params: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    run_id: str | None = None
    status: str | None = None

    @classmethod
    def build(
        cls,
        histories: Mapping[str, Iterable[Any]],
        params: Mapping[str, Any] | None = None,
        tags: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        status: str | None = None,
    ) -> RunData:
        series = {name: Series.from_points(name, pts) for name, pts in histories.items()}
        return cls(
            {k: s for k, s in series.items() if len(s)},
            {str(k): str(v) for k, v in (params or {}).items()},
            {str(k): str(v) for k, v in (tags or {}).items()},
            run_id,
            status,
        )

    def primary(self, kind: _names.Kind, role: _names.Role) -> Series | None:
        """The main loss/accuracy curve of a role (see :mod:`lineage.diagnose._names`)."""
        found = [
            s
            for name, s in self.histories.items()
            if _names.primary_kind(name) == kind and _names.role(name) == role
        ]
        if not found:
            return None
        return max(found, key=lambda s: (len(s), -len(s.name), s.name))

    def primaries(self, kind: _names.Kind, role: _names.Role) -> list[Series]:
        return [
            s
            for name, s in sorted(self.histories.items())
            if _names.primary_kind(name) == kind and _names.role(name) == role
        ]

    def matching(self, predicate: Any) -> list[Series]:
        return [s for name, s in sorted(self.histories.items()) if predicate(name)]


class Check(abc.ABC):
    """A diagnosis check: reads one run, returns the findings it supports (usually 0 or 1).

    Contract:

    - ``id`` is the stable check id written into every finding; ``causes`` and
      ``next_steps`` are the checklist sentences its findings carry.
    - ``run`` never raises on odd data (missing metrics, NaN, a single point): a check that
      lacks what it needs returns no finding. Precision over recall: a healthy run must give
      nothing.
    - ``suppressed_by`` lists check ids whose findings make this one redundant (a loss that ran
      to NaN is not also reported as slowly converging); :func:`~lineage.diagnose.diagnose_histories`
      drops the redundant findings.
    - Checks hold no state between runs and are safe to share across threads.
    """

    id: ClassVar[str]
    causes: ClassVar[tuple[str, ...]] = ()
    next_steps: ClassVar[tuple[str, ...]] = ()
    suppressed_by: ClassVar[tuple[str, ...]] = ()

    def __init__(self, *, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> None:
        self.thresholds = thresholds

    @abc.abstractmethod
    def run(self, data: RunData) -> list[Finding]:
        """The findings of this check on one run (empty when healthy or not applicable)."""

    def finding(
        self,
        severity: Severity,
        summary: str,
        *,
        metric: str | None = None,
        step: int | None = None,
        value: float | str | None = None,
        window: Sequence[int] | None = None,
        causes: Sequence[str] | None = None,
        next_steps: Sequence[str] | None = None,
        **extra: Any,
    ) -> Finding:
        evidence: dict[str, Any] = {}
        if metric is not None:
            evidence["metric"] = metric
        evidence.update(
            step=step,
            value=value,
            window=list(window) if window is not None else None,
            **{k: _plain(v) for k, v in extra.items()},
        )
        return Finding(
            check=self.id,
            severity=severity,
            summary=summary,
            evidence=evidence,
            causes=tuple(causes if causes is not None else self.causes),
            next_steps=tuple(next_steps if next_steps is not None else self.next_steps),
        )


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


def fmt(value: float) -> str:
    return f"{value:.4g}"
