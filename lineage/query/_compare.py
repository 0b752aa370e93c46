"""What ``show`` and ``diff`` compute: metric summaries, identity, and run differences."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lineage import tags as T
from lineage.query._fields import to_number
from lineage.query._goal import metric_goal
from lineage.store import MetricPoint, RunRecord

ABSENT = "<absent>"


def is_identity(key: str) -> bool:
    if key in T.NOT_IDENTITY:
        return False
    return key in T.IDENTITY_KEYS or key.startswith(T.IDENTITY_PREFIXES)


def identity(run: RunRecord) -> dict[str, str]:
    """Git commit and dirty flag, command, host, Python and framework versions, data
    fingerprints: the ``lineage.*`` and ``mlflow.source.*`` tags of a run."""
    return {k: v for k, v in sorted(run.tags.items()) if is_identity(k)}


def other_tags(run: RunRecord) -> dict[str, str]:
    return {k: v for k, v in sorted(run.tags.items()) if not is_identity(k)}


@dataclass(frozen=True, slots=True)
class MetricSummary:
    """``best`` is ``min`` or ``max`` according to ``goal`` (see :func:`metric_goal`)."""

    key: str
    last: float
    last_step: int
    best: float
    best_step: int
    goal: str
    min: float
    max: float
    count: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "last": self.last,
            "last_step": self.last_step,
            "best": self.best,
            "best_step": self.best_step,
            "goal": self.goal,
            "min": self.min,
            "max": self.max,
            "count": self.count,
        }


def summarize(key: str, points: Sequence[MetricPoint], goal: str | None = None) -> MetricSummary:
    """Last (highest step, then latest), best, min and max of one metric; NaN ignored for
    best/min/max unless every point is NaN. ``goal`` (``min``/``max``): the experiment's for
    a target metric; else guessed from the name."""
    last = max(points, key=lambda p: (p.step, p.timestamp))
    finite = [p for p in points if not math.isnan(p.value)] or list(points)
    low = min(finite, key=lambda p: p.value)
    high = max(finite, key=lambda p: p.value)
    goal = goal or metric_goal(key)
    best = low if goal == "min" else high
    return MetricSummary(
        key, last.value, last.step, best.value, best.step, goal, low.value, high.value, len(points)
    )


def summarize_all(
    histories: Mapping[str, Sequence[MetricPoint]], targets: Sequence[tuple[str, str]] = ()
) -> list[MetricSummary]:
    """Every metric's summary: the ``targets`` (``(metric, goal)``, an experiment's) first,
    with their goals, then the others by name."""
    goals: dict[str, str] = {}
    for metric, goal in targets:
        goals.setdefault(metric, goal)
    order = {m: i for i, m in enumerate(goals)}
    keys = sorted(histories, key=lambda k: (order.get(k, len(order)), k))
    return [summarize(k, histories[k], goals.get(k)) for k in keys if histories[k]]


@dataclass(frozen=True, slots=True)
class Difference:
    """One key compared across two runs. ``a``/``b`` are ``None`` when the run lacks it."""

    section: str  # params | metrics | identity | tags
    key: str
    a: Any
    b: Any

    @property
    def state(self) -> str:
        if self.a is None:
            return "only_b"
        if self.b is None:
            return "only_a"
        return "same" if _same(self.a, self.b) else "changed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "section": self.section,
            "key": self.key,
            "a": self.a,
            "b": self.b,
            "state": self.state,
        }


def _same(a: Any, b: Any) -> bool:
    if a == b:
        return True
    na, nb = to_number(a), to_number(b)
    if na is not None and nb is not None:
        return na == nb  # "0.1" and "0.10" are the same hyperparameter value
    if isinstance(a, float) and isinstance(b, float):
        return math.isnan(a) and math.isnan(b)
    return False


#: Order of the sections in a diff: hyperparameters first, as when comparing a run with the
#: benchmark script it should reproduce (default values included).
SECTIONS = ("params", "metrics", "identity", "tags")


def diff_runs(a: RunRecord, b: RunRecord, *, include_same: bool = False) -> list[Difference]:
    """Params, metrics, identity and other tags of two runs, key by key, params first.

    Only keys whose values differ (or that one run lacks) unless ``include_same``.
    """
    pairs: dict[str, tuple[Mapping[str, Any], Mapping[str, Any]]] = {
        "params": (a.params, b.params),
        "metrics": (a.metrics, b.metrics),
        "identity": (identity(a), identity(b)),
        "tags": (_plain_tags(a), _plain_tags(b)),
    }
    out = []
    for section in SECTIONS:
        left, right = pairs[section]
        for key in sorted(set(left) | set(right)):
            diff = Difference(section, key, left.get(key), right.get(key))
            if include_same or diff.state != "same":
                out.append(diff)
    return out


def _plain_tags(run: RunRecord) -> dict[str, str]:
    # The run name is shown in the header; lineage.param_types mirrors the params.
    skip = {T.MLFLOW_RUN_NAME, T.PARAM_TYPES, T.PID}
    return {k: v for k, v in other_tags(run).items() if k not in skip}
