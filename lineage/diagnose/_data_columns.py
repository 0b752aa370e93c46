"""What a run recorded about the first batch of its data, column by column.

Written by ``lineage.mindspore`` (``data_sample``), readable from any recorder:

- metrics ``data.<role>.<column>.{min,mean,max,std}`` (the first value of each is read; the
  MindSpore recorder logs them once, at step 0), over the whole first batch;
- the tag ``lineage.data.<role>.columns``: a JSON object, per column, with ``kind``
  (``image``, ``label`` or ``tensor``), ``shape`` (the batch's), ``implied_range``
  (``[low, high]`` the pipeline's operations imply, named in ``range_source``) and, for
  labels, ``classes`` (the network's output size).

Without the tag a column's kind is read from its name (``label``, ``target``, ``y``...).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from lineage.diagnose._base import RunData
from lineage.tags import data_tag

_METRIC = re.compile(
    r"^data\.(?P<role>train|val|test)\.(?P<column>.+)\.(?P<stat>min|mean|max|std)$"
)
_LABEL_NAMES = {"label", "labels", "target", "targets", "y", "class", "classes", "cls"}


@dataclass
class DataColumn:
    role: str
    name: str
    stats: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        kind = self.info.get("kind")
        if isinstance(kind, str):
            return kind
        return "label" if self.name.lower() in _LABEL_NAMES else "tensor"

    @property
    def rows(self) -> int | None:
        shape = self.info.get("shape")
        if isinstance(shape, list) and shape and isinstance(shape[0], int):
            return shape[0]
        return None

    def metric(self, stat: str) -> str:
        return f"data.{self.role}.{self.name}.{stat}"

    def number(self, key: str) -> float | None:
        value = self.info.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        return None

    def pair(self, key: str) -> tuple[float, float] | None:
        value = self.info.get(key)
        if (
            isinstance(value, list)
            and len(value) == 2
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
            and all(math.isfinite(v) for v in value)
            and value[0] <= value[1]
        ):
            return float(value[0]), float(value[1])
        return None


def data_columns(data: RunData) -> list[DataColumn]:
    """Every column with recorded statistics, in (role, name) order."""
    found: dict[tuple[str, str], DataColumn] = {}
    for name, series in data.histories.items():
        m = _METRIC.match(name)
        if m is None or not len(series):
            continue
        key = (m["role"], m["column"])
        col = found.setdefault(key, DataColumn(m["role"], m["column"]))
        col.stats[m["stat"]] = float(series.values[0])
    for role in {r for r, _ in found}:
        raw = data.tags.get(data_tag(role, "columns"))
        try:
            described = json.loads(raw) if raw else {}
        except ValueError:
            described = {}
        if not isinstance(described, dict):
            continue
        for cname, info in described.items():
            described_col = found.get((role, _safe(str(cname))))
            if described_col is not None and isinstance(info, dict):
                described_col.info = info
    return [found[k] for k in sorted(found)]


def _safe(column: str) -> str:
    # As lineage.mindspore names the metrics (MLflow-safe characters only).
    return re.sub(r"[^A-Za-z0-9_\-]+", "_", column).strip("_") or "column"
