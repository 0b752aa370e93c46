"""A sample of the first training batch as the network receives it (after the pipeline).

What the recorder logs once per run (``data_sample``): per dataset column, its kind
(``image``, ``label`` or ``tensor``), dtype, batch shape and min/mean/max/std over the whole
batch; for images the value range the serialized pipeline implies (``Normalize``'s mean and
std, ``Rescale``, ``ToTensor``, ``Decode``) and the denormalisation that draws them; for
labels the class count (the network's output size). The numbers go to the lineage store
(metrics ``data.<role>.<column>.{min,mean,max,std}`` at step 0 and the tag
``lineage.data.<role>.columns``) where ``lineage diagnose`` reads them; the pictures are drawn
by :mod:`lineage.mindspore._sample_figures`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lineage.training import SAME_RANGE_OPS, metric_key

_LABEL_NAMES = {"label", "labels", "target", "targets", "y", "class", "classes", "cls"}
_CHANNELS = (1, 3, 4)


@dataclass
class ColumnSample:
    """One dataset column of the sampled batch."""

    name: str
    kind: str  # image | label | tensor
    dtype: str
    shape: list[int]
    rows: np.ndarray  # the first ``count`` rows
    batch: np.ndarray  # the whole batch
    stats: dict[str, float] = field(default_factory=dict)
    #: Per channel ``(low, high)`` the pipeline implies (images only), else None.
    channel_ranges: list[tuple[float, float]] | None = None
    #: The pipeline operations that set the range, as ``Name(arg=value, ...)``.
    range_source: str | None = None
    layout: str | None = None  # NCHW | NHWC | NHW (images)
    classes: int | None = None  # labels: the network's output size

    @property
    def implied_range(self) -> list[float] | None:
        if not self.channel_ranges:
            return None
        return [
            min(lo for lo, _ in self.channel_ranges),
            max(hi for _, hi in self.channel_ranges),
        ]

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "dtype": self.dtype, "shape": self.shape}
        if self.layout:
            out["layout"] = self.layout
        if self.implied_range is not None:
            out["implied_range"] = [_round(v) for v in self.implied_range]
            out["range_source"] = self.range_source
        if self.classes is not None:
            out["classes"] = self.classes
        return out


@dataclass
class DataSample:
    """The sampled batch: one `ColumnSample` per dataset column, in column order."""

    role: str
    columns: list[ColumnSample]
    count: int

    def metrics(self) -> dict[str, float]:
        return {
            metric_key(self.role, c.name, stat): value
            for c in self.columns
            for stat, value in c.stats.items()
        }

    def describe(self) -> dict[str, Any]:
        return {c.name: c.describe() for c in self.columns}

    def images(self) -> ColumnSample | None:
        return next((c for c in self.columns if c.kind == "image"), None)

    def label(self) -> ColumnSample | None:
        return next((c for c in self.columns if c.kind == "label"), None)

    def tabular(self) -> list[ColumnSample]:
        """Columns drawn as a table: every non-image column when there is no image column,
        else the non-image columns other than the label (drawn under each image)."""
        if self.images() is None:
            return list(self.columns)
        return [c for c in self.columns if c.kind == "tensor"]


def _round(v: float) -> float:
    return float(f"{v:.6g}")


def _kind(name: str, a: np.ndarray) -> tuple[str, str | None]:
    tokens = set(re.split(r"[^a-z0-9]+", name.lower()))
    integer = np.issubdtype(a.dtype, np.integer)
    vector = a.ndim == 1 or (a.ndim == 2 and a.shape[1] == 1)
    if vector and (tokens & _LABEL_NAMES or integer):
        return "label", None
    numeric = np.issubdtype(a.dtype, np.number) and not np.issubdtype(a.dtype, np.complexfloating)
    if not numeric or tokens & _LABEL_NAMES:
        return "tensor", None
    if a.ndim == 4:
        if a.shape[1] in _CHANNELS and min(a.shape[2:]) >= 4:
            return "image", "NCHW"
        if a.shape[3] in _CHANNELS and min(a.shape[1:3]) >= 4:
            return "image", "NHWC"
    if a.ndim == 3 and min(a.shape[1:]) >= 4 and (not integer or a.dtype == np.uint8):
        return "image", "NHW"
    return "tensor", None


def network_outputs(network: Any) -> int | None:
    """The network's output size: ``num_classes`` when it says, else the ``out_channels``
    of its last ``Dense``-like cell (the classifier head, in definition order)."""
    if network is None:
        return None
    n = getattr(network, "num_classes", None)
    if isinstance(n, int) and not isinstance(n, bool) and n > 0:
        return n
    last = None
    try:
        for _, cell in network.cells_and_names():
            if type(cell).__name__ == "Dense":
                last = getattr(cell, "out_channels", None)
    except Exception:  # no class count: the sample is drawn without one
        return None
    return int(last) if isinstance(last, int) and last > 0 else None


# -- what the serialized pipeline says about a column ------------------------------------------
def _ops(node: dict[str, Any], column: str) -> Iterator[dict[str, Any]]:
    """The tensor operations applied to ``column``, source first (children are upstream)."""
    for child in node.get("children") or ():
        if isinstance(child, dict):
            yield from _ops(child, column)
    if node.get("op_type") == "Map" and column in (node.get("input_columns") or ()):
        for op in node.get("operations") or ():
            if isinstance(op, dict):
                yield op


def _call(op: dict[str, Any]) -> str:
    params = op.get("tensor_op_params") or {}
    args = ", ".join(
        f"{k}={_short(v)}" for k, v in params.items() if k not in ("device_target", "is_hwc")
    )
    return f"{op.get('tensor_op_name')}({args})"


def _short(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list):
        return "[" + ", ".join(_short(x) for x in v) + "]"
    return str(v)


def implied_ranges(
    pipeline: dict[str, Any] | None, column: str, channels: int
) -> tuple[list[tuple[float, float]] | None, str | None]:
    """Per-channel value range of ``column`` implied by the pipeline's operations, and the
    operations that set it; ``(None, None)`` when the pipeline does not say.

    A ``Normalize`` whose means are all <= 1 is read as working on [0, 1] input, otherwise
    on [0, 255] (MindSpore's examples pass ``mean=[0.485 * 255, ...]``); ``Decode`` gives
    [0, 255], ``ToTensor`` [0, 1], a ``Rescale`` of 1/255 reads [0, 255]; a later ``Rescale``
    maps the range; resizing, cropping, flipping, layout and type casts keep it.
    """
    if not pipeline or channels < 1:
        return None, None
    ranges: list[tuple[float, float]] | None = None
    source: list[str] = []
    for op in _ops(pipeline, column):
        name = str(op.get("tensor_op_name") or "")
        p = op.get("tensor_op_params") or {}
        try:
            if name == "Decode":
                ranges, source = [(0.0, 255.0)] * channels, [_call(op)]
            elif name == "ToTensor":
                ranges, source = [(0.0, 1.0)] * channels, [_call(op)]
            elif name == "Rescale":
                r, s = float(p["rescale"]), float(p["shift"])
                if ranges is None and math.isclose(r * 255.0, 1.0, rel_tol=1e-3):
                    ranges = [(0.0, 255.0)] * channels
                if ranges is not None:
                    ranges = [tuple(sorted((lo * r + s, hi * r + s))) for lo, hi in ranges]  # type: ignore[misc]
                    source.append(_call(op))
            elif name == "Normalize":
                mean = [float(m) for m in np.ravel(p["mean"])]
                std = [float(s) for s in np.ravel(p["std"])]
                if len(mean) not in (1, channels) or len(std) not in (1, channels):
                    return None, None
                if ranges is None:
                    top = 1.0 if max(mean) <= 1.0 else 255.0
                    ranges = [(0.0, top)] * channels
                    source = []
                mean = mean * channels if len(mean) == 1 else mean
                std = std * channels if len(std) == 1 else std
                ranges = [
                    ((lo - m) / s, (hi - m) / s)
                    for (lo, hi), m, s in zip(ranges, mean, std, strict=True)
                ]
                source.append(_call(op))
            elif name not in SAME_RANGE_OPS and ranges is not None:
                source.append(_call(op))  # shown, assumed to keep the range
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            return None, None
    if ranges is None:
        return None, None
    return ranges, " -> ".join(source)


# -- building the sample -----------------------------------------------------------------------
def _host(value: Any) -> np.ndarray:
    if hasattr(value, "asnumpy"):
        return np.asarray(value.asnumpy())
    return np.asarray(value)


def _stats(a: np.ndarray) -> dict[str, float]:
    if a.size == 0 or not (np.issubdtype(a.dtype, np.number) or a.dtype == np.bool_):
        return {}
    f = a.astype(np.float64, copy=False)
    return {
        "min": float(f.min()),
        "mean": float(f.mean()),
        "max": float(f.max()),
        "std": float(f.std()),
    }


def build_sample(
    role: str,
    names: Sequence[str],
    batch: Sequence[Any],
    *,
    count: int,
    pipeline: dict[str, Any] | None = None,
    classes: int | None = None,
) -> DataSample:
    """Describe one batch (one array per column, rows first)."""
    columns: list[ColumnSample] = []
    for name, value in zip(names, batch, strict=False):
        a = _host(value)
        kind, layout = _kind(name, a) if a.ndim >= 1 else ("tensor", None)
        col = ColumnSample(
            name=str(name),
            kind=kind,
            dtype=str(a.dtype),
            shape=[int(s) for s in a.shape],
            rows=a[:count] if a.ndim else a.reshape(1),
            batch=a if a.ndim else a.reshape(1),
            stats=_stats(a),
            layout=layout,
        )
        if kind == "image":
            channels = 1 if layout == "NHW" else a.shape[1] if layout == "NCHW" else a.shape[3]
            col.channel_ranges, col.range_source = implied_ranges(pipeline, col.name, channels)
        elif kind == "label" and classes is not None and np.issubdtype(a.dtype, np.integer):
            col.classes = classes
        columns.append(col)
    return DataSample(role=role, columns=columns, count=count)
