"""Pictures and statistics of what a PyTorch training reads: the first batch and the pipeline.

``describe_batch`` turns the first batch (a tensor, a tuple/list of tensors or a dict of them)
into named numpy columns with min/mean/max/std, the metrics ``data.train.<column>.<stat>``
that ``lineage diagnose`` reads. ``draw_sample`` draws image columns as a grid (denormalised
by the pipeline's ``Normalize`` mean and std when it has one, the label underneath) and other
columns as a table; ``draw_pipeline`` draws the dataset chain as one box per step.
matplotlib is imported only to draw.

``render`` draws both from a folder the watcher wrote (``job.json`` and ``sample.npz``); the
watcher runs this file as a script in a child process, ``python _sample.py FOLDER``, so the
drawing never holds the training process's interpreter lock. The script imports numpy,
matplotlib and the framework-neutral :mod:`lineage.training`, never torch.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lineage.training import error_line, metric_key

_LABELS = {"label", "labels", "target", "targets", "y"}


def _numpy(value: Any) -> np.ndarray | None:
    if hasattr(value, "detach"):
        return (
            value.detach().float().cpu().numpy()
            if value.is_floating_point()
            else (value.detach().cpu().numpy())
        )
    if isinstance(value, np.ndarray):
        return value
    return None


def columns(batch: Any) -> dict[str, np.ndarray]:
    """The batch's tensors by name: dict keys, else ``input``/``label`` for a pair, else
    ``column<i>``."""
    if isinstance(batch, Mapping):
        items = [(str(k), _numpy(v)) for k, v in batch.items()]
    elif isinstance(batch, Sequence) and not isinstance(batch, str):
        names = ["input", "label"] if len(batch) == 2 else [f"column{i}" for i in range(len(batch))]
        items = [(n, _numpy(v)) for n, v in zip(names, batch, strict=True)]
    else:
        items = [("input", _numpy(batch))]
    return {n: a for n, a in items if a is not None and a.size}


def statistics(cols: Mapping[str, np.ndarray], role: str = "train") -> dict[str, float]:
    out: dict[str, float] = {}
    for name, a in cols.items():
        f = a.astype(np.float64, copy=False)
        for stat, value in (
            ("min", f.min()),
            ("mean", f.mean()),
            ("max", f.max()),
            ("std", f.std()),
        ):
            if np.isfinite(value):
                out[metric_key(role, name, stat)] = float(value)
    return out


def describe(cols: Mapping[str, np.ndarray], *, classes: int | None = None) -> dict[str, Any]:
    """Each column's kind, dtype and batch shape; label columns also get ``classes`` (the
    network's output size), which the ``labels_out_of_range`` check compares them with."""
    out: dict[str, Any] = {}
    for name, a in cols.items():
        info: dict[str, Any] = {
            "kind": _kind(name, a),
            "dtype": str(a.dtype),
            "shape": list(a.shape),
        }
        if info["kind"] == "label" and classes:
            info["classes"] = classes
        out[name] = info
    return out


def _kind(name: str, a: np.ndarray) -> str:
    if name.lower() in _LABELS or (a.ndim == 1 and a.dtype.kind in "iu"):
        return "label"
    if (a.ndim == 4 and a.shape[1] in (1, 3, 4)) or (a.ndim == 3 and min(a.shape[1:]) >= 4):
        return "image"
    return "tensor"


def _normalize(steps: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, np.ndarray] | None:
    for step in steps:
        if step.get("op") == "Normalize" and "mean" in step and "std" in step:
            return np.asarray(step["mean"], float), np.asarray(step["std"], float)
    return None


def draw_sample(
    cols: Mapping[str, np.ndarray],
    directory: Path,
    *,
    count: int,
    steps: Sequence[Mapping[str, Any]] = (),
) -> list[Path]:
    """Draw the first ``count`` rows into ``directory``; the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []
    kinds = {n: _kind(n, a) for n, a in cols.items()}
    labels = next((a for n, a in cols.items() if kinds[n] == "label"), None)
    images = next((a for n, a in cols.items() if kinds[n] == "image"), None)
    if images is not None:
        rows = images[:count].astype(np.float64)
        if rows.ndim == 4:
            norm = _normalize(steps)
            if norm is not None:
                mean, std = norm
                rows = rows * std.reshape(1, -1, 1, 1) + mean.reshape(1, -1, 1, 1)
            rows = rows.transpose(0, 2, 3, 1)
            if rows.shape[-1] == 1:
                rows = rows[..., 0]
        side = math.ceil(math.sqrt(len(rows)))
        fig, axes = plt.subplots(side, side, figsize=(1.6 * side, 1.8 * side), squeeze=False)
        for i, ax in enumerate(axes.flat):
            ax.axis("off")
            if i < len(rows):
                ax.imshow(rows[i], cmap="gray" if rows[i].ndim == 2 else None)
                if labels is not None and i < len(labels):
                    ax.set_title(str(labels[i]), fontsize=8)
        fig.suptitle("first training batch (after the pipeline)", fontsize=9)
        path = directory / "train_sample.png"
        fig.savefig(path, dpi=80)
        plt.close(fig)
        written.append(path)
    table_cols = {n: a for n, a in cols.items() if kinds[n] != "image"}
    if table_cols:
        n_rows = min(count, min(len(a) for a in table_cols.values()))
        cells = [
            [
                np.array2string(np.asarray(a[i]).ravel()[:6], precision=3)
                for a in table_cols.values()
            ]
            for i in range(n_rows)
        ]
        fig, ax = plt.subplots(figsize=(2.5 * len(table_cols) + 1, 0.3 * n_rows + 1))
        ax.axis("off")
        ax.table(cellText=cells, colLabels=list(table_cols), loc="center").auto_set_font_size(False)
        ax.set_title("first training batch (first 6 values of each row)", fontsize=9)
        path = directory / "train_sample_table.png"
        fig.savefig(path, dpi=80)
        plt.close(fig)
        written.append(path)
    return written


def draw_pipeline(steps: Sequence[Mapping[str, Any]], path: Path, *, title: str) -> Path:
    """One box per step, the source on top and the last step (what the loader batches) below."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = max(len(steps), 1)
    fig, ax = plt.subplots(figsize=(5, 0.9 * n + 0.8))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, n)
    ax.axis("off")
    for i, step in enumerate(steps):
        y = n - i - 0.5
        extra = ", ".join(
            f"{k}={v}" for k, v in step.items() if k not in {"op", "module"} and len(str(v)) < 40
        )
        ax.text(
            0.5,
            y,
            f"{step.get('op')}\n{extra}"[:120],
            ha="center",
            va="center",
            fontsize=8,
            bbox={"boxstyle": "round", "fc": "#e8f0fe", "ec": "#3367d6"},
        )
        if i:
            ax.annotate(
                "", xy=(0.5, y + 0.28), xytext=(0.5, y + 0.72), arrowprops={"arrowstyle": "->"}
            )
    ax.set_title(title, fontsize=9)
    fig.savefig(path, dpi=80, bbox_inches="tight")
    plt.close(fig)
    return path


def render(folder: Path) -> dict[str, str]:
    """Draw ``folder/job.json``'s pipeline and ``folder/sample.npz``'s rows into
    ``folder/out``; the errors, by tag field (``graph_error``, ``sample_error``), are also
    written to ``folder/errors.json``."""
    job = json.loads((folder / "job.json").read_text(encoding="utf-8"))
    out = folder / "out"
    out.mkdir(exist_ok=True)
    errors: dict[str, str] = {}
    steps = job.get("steps")
    if steps is not None:
        try:
            draw_pipeline(steps, out / "train_pipeline.png", title=job["title"])
        except Exception as exc:  # recorded as the run's graph_error tag
            errors["graph_error"] = error_line(exc)
    if job.get("count"):
        try:
            with np.load(folder / "sample.npz") as arrays:
                cols = {n: arrays[f"arr_{i}"] for i, n in enumerate(job["names"])}
            draw_sample(cols, out, count=job["count"], steps=steps or ())
        except Exception as exc:  # recorded as the run's sample_error tag
            errors["sample_error"] = error_line(exc)
    (folder / "errors.json").write_text(json.dumps(errors), encoding="utf-8")
    return errors


if __name__ == "__main__":
    # Below the training in the scheduler's eyes: the pictures wait for an idle core.
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        if hasattr(os, "nice"):
            os.nice(19)
    render(Path(sys.argv[1]))
