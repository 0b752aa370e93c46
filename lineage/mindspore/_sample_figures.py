"""PNG pictures of a data sample: an image grid with labels, a table of the first rows.

Both take plain numpy arrays (this module knows nothing of MindSpore) and draw on matplotlib's
Agg canvas, like :mod:`lineage.plots`.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lineage.plots import figure, save

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["TableColumn", "save_image_grid", "save_sample_table", "to_display"]

#: Values per row a table shows (wider rows are cut, and the title says so).
TABLE_WIDTH = 12
#: Rows a table shows before its min/mean/max rows.
TABLE_ROWS = 16


def to_display(
    images: np.ndarray,
    layout: str,
    channel_ranges: Sequence[tuple[float, float]] | None = None,
) -> tuple[np.ndarray, str]:
    """Images as (N, H, W) or (N, H, W, 3|4) floats in [0, 1], and how they were mapped.

    With ``channel_ranges`` (the range the pipeline implies for each channel) each channel is
    mapped linearly from its range to [0, 1], which undoes ``Normalize`` and ``Rescale``;
    values outside are clipped. Without, the batch's own min..max is stretched to [0, 1].
    """
    a = np.asarray(images, dtype=np.float64)
    if layout == "NCHW":
        a = np.moveaxis(a, 1, -1)
    elif layout == "NHW":
        a = a[..., None]
    if channel_ranges and len(channel_ranges) == a.shape[-1]:
        lo = np.array([r[0] for r in channel_ranges])
        hi = np.array([r[1] for r in channel_ranges])
        a = (a - lo) / np.where(hi > lo, hi - lo, 1.0)
        how = "denormalised with the range the pipeline implies"
    else:
        finite = a[np.isfinite(a)]
        lo_v, hi_v = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        a = (a - lo_v) / (hi_v - lo_v if hi_v > lo_v else 1.0)
        how = f"stretched from the batch's range [{lo_v:.4g}, {hi_v:.4g}]"
    a = np.clip(np.nan_to_num(a, nan=0.0), 0.0, 1.0)
    if a.shape[-1] == 1:
        a = a[..., 0]
    elif a.shape[-1] == 4:
        a = a[..., :3]
    return a, how


def save_image_grid(
    images: np.ndarray,
    path: Path,
    *,
    layout: str,
    labels: Sequence[str] | None = None,
    channel_ranges: Sequence[tuple[float, float]] | None = None,
    title: str = "",
) -> Path:
    """A grid of the images (row-major), each with its label underneath.

    The tiles are pasted into one mosaic and drawn with a single ``imshow`` (a subplot per
    image costs ~0.1 s each), upscaled without smoothing so every pixel stays visible.
    """
    shown, how = to_display(images, layout, channel_ranges)
    n, h, w = len(shown), shown.shape[1], shown.shape[2]
    cols = max(1, math.ceil(math.sqrt(n)))
    rows = max(1, math.ceil(n / cols))
    pad = max(1, round(max(h, w) / 8))
    band = math.ceil(0.3 * h) if labels is not None else 0  # room for the label
    tile_h, tile_w = h + band + pad, w + pad
    mosaic = np.ones((rows * tile_h + pad, cols * tile_w + pad, *shown.shape[3:]))
    for i in range(n):
        r, c = divmod(i, cols)
        top, left = pad + r * tile_h, pad + c * tile_w
        mosaic[top : top + h, left : left + w] = shown[i]
    per_pixel = 1.25 / tile_w  # inches: each tile about 1.25 in wide
    fig = figure(0.3 + per_pixel * mosaic.shape[1], 0.75 + per_pixel * mosaic.shape[0])
    ax = fig.add_subplot()
    gray = mosaic.ndim == 2
    ax.imshow(mosaic, cmap="gray" if gray else None, vmin=0.0, vmax=1.0, interpolation="nearest")
    ax.axis("off")
    if labels is not None:
        for i, text in enumerate(labels[:n]):
            r, c = divmod(i, cols)
            x = pad + c * tile_w + (w - 1) / 2
            y = pad + r * tile_h + h - 0.5 + band / 2
            ax.text(x, y, str(text), ha="center", va="center", fontsize=9)
    fig.suptitle(_wrap(f"{title}\n{how}" if title else how, fig), fontsize=9)
    return save(fig, path)


def _wrap(text: str, fig: Figure) -> str:
    """``text`` wrapped to the figure's width (9 pt: about 13 characters per inch)."""
    width = max(30, int(fig.get_figwidth() * 13))
    return "\n".join(textwrap.fill(line, width) for line in text.splitlines())


class TableColumn:
    """One dataset column of a table: its first rows and the whole batch (for the stats)."""

    def __init__(self, name: str, batch: np.ndarray, rows: int) -> None:
        self.name = name
        self.batch = np.asarray(batch)
        self.rows = rows

    def flat(self) -> np.ndarray:
        b = self.batch
        return b.reshape(len(b), -1) if b.ndim >= 1 else b.reshape(1, 1)


def _cell(v: object) -> str:
    if isinstance(v, float | np.floating):
        return f"{float(v):.4g}"
    return str(v)


def save_sample_table(columns: Sequence[TableColumn], path: Path, *, title: str = "") -> Path:
    """The first rows of each column (one table column per value, ``name[j]`` for vectors),
    then its min, mean and max over the whole batch."""
    headers: list[str] = []
    values: list[np.ndarray] = []
    flats = [c.flat() for c in columns]
    # Narrow columns (a label) first take what they need; the rest share what is left.
    keeps: dict[int, int] = {}
    left = TABLE_WIDTH
    order = sorted(range(len(columns)), key=lambda i: flats[i].shape[1])
    for done, i in enumerate(order):
        keeps[i] = max(1, min(flats[i].shape[1], left // (len(order) - done)))
        left -= keeps[i]
    cut = 0
    for i, col in enumerate(columns):
        flat = flats[i]
        width = flat.shape[1]
        keep = keeps[i]
        cut += width - keep
        for j in range(keep):
            headers.append(col.name if width == 1 else f"{col.name}[{j}]")
            values.append(flat[:, j])
    n = min(TABLE_ROWS, min((c.rows for c in columns), default=0))
    body = [[_cell(v[i]) for v in values] for i in range(n)]
    numeric = [np.issubdtype(v.dtype, np.number) or v.dtype == np.bool_ for v in values]
    for stat in ("min", "mean", "max"):
        row = []
        for v, ok in zip(values, numeric, strict=True):
            f = v.astype(np.float64) if ok and v.size else None
            row.append(_cell(float(getattr(np, stat)(f))) if f is not None else "")
        body.append(row)
    row_labels = [str(i) for i in range(n)] + ["min", "mean", "max"]
    note = f" ({cut} values per row not shown)" if cut else ""
    batch_rows = len(columns[0].flat()) if columns else 0
    sub = f"first {n} of {batch_rows} rows; min/mean/max over the whole batch{note}"
    return _draw_table(headers, row_labels, body, n, f"{title}\n{sub}" if title else sub, path)


#: Row height and title line height of a table, in inches.
_ROW_IN, _LINE_IN = 0.2, 0.16


def _draw_table(
    headers: list[str],
    row_labels: list[str],
    body: list[list[str]],
    shown: int,
    title: str,
    path: Path,
) -> Path:
    """The table as a grid of texts on one axis, laid out by hand: matplotlib's ``table``
    with a constrained layout measures every cell several times and cost seconds a figure."""
    from matplotlib.patches import Rectangle

    headers = headers or [""]
    body = body or [[""] * len(headers)]
    cols, rows = len(headers), len(body) + 1  # + the header row
    label_w = 0.4  # the row-label column, in data-column widths
    fig = figure(1.2 + 0.95 * cols, 0.75 + _ROW_IN * rows, layout=None)
    text = _wrap(title, fig)
    title_in = 0.15 + _LINE_IN * len(text.splitlines())
    height = fig.get_figheight()
    top = max(0.3, 1 - title_in / height)
    ax = fig.add_axes((0.02, 0.02, 0.96, top - 0.04))
    ax.set_xlim(-0.01, label_w + cols + 0.01)  # room for the outer lines
    ax.set_ylim(rows + 0.05, -0.05)
    ax.axis("off")
    shade = "#eef2f7"
    ax.add_patch(Rectangle((label_w, 0), cols, 1, facecolor=shade, edgecolor="none"))
    if len(body) > shown:
        stats = len(body) - shown
        ax.add_patch(Rectangle((0, 1 + shown), label_w + cols, stats, facecolor=shade))
    ax.hlines(range(rows + 1), label_w, label_w + cols, colors="black", linewidth=0.5)
    ax.vlines([label_w + i for i in range(cols + 1)], 0, rows, colors="black", linewidth=0.5)
    ax.hlines(range(1, rows + 1), 0, label_w, colors="black", linewidth=0.5)
    ax.vlines([0], 1, rows, colors="black", linewidth=0.5)
    style: dict[str, Any] = {"fontsize": 8, "va": "center", "clip_on": False}
    for j, header in enumerate(headers):
        ax.text(label_w + j + 0.5, 0.5, header, ha="center", **style)
    for i, (label, row) in enumerate(zip(row_labels, body, strict=False), start=1):
        ax.text(0.05, i + 0.5, label, ha="left", **style)
        for j, cell in enumerate(row):
            ax.text(label_w + j + 0.92, i + 0.5, cell, ha="right", **style)
    fig.suptitle(text, fontsize=9, y=1 - 0.08 / height, va="top")
    return save(fig, path)
