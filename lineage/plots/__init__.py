"""The drawing canvas the figures of every subpackage share.

``figure(width, height)`` is a :class:`matplotlib.figure.Figure` on the Agg canvas, built
directly rather than through ``pyplot``, so drawing neither needs a display nor changes the
backend of a notebook that imports us; ``save(fig, path)`` writes it as a PNG at one
resolution; ``tidy(ax)`` gives an axis the common light grid. Each kind of figure lives with
what it shows: importance figures in :mod:`lineage.importance`, data samples and pipelines in
:mod:`lineage.mindspore`, study reports in :mod:`lineage.report`. matplotlib is imported only
when drawing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["DPI", "figure", "safe_filename", "save", "tidy"]

#: Resolution of every PNG the project draws.
DPI = 110


def figure(
    width: float, height: float, *, layout: Literal["constrained"] | None = "constrained"
) -> Figure:
    """A ``width`` x ``height`` inch figure on the Agg canvas, with constrained layout unless
    ``layout`` is None (a figure that places its axes itself)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def tidy(ax: Axes) -> None:
    """Hide the top and right spines and draw a light grid behind the data."""
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.grid(True, axis="both", color="#e6e6e6", linewidth=0.8)
    ax.set_axisbelow(True)


def save(fig: Figure, path: Path) -> Path:
    """Write ``fig`` to ``path`` as a PNG on white, creating the folder; return ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, facecolor="white")
    return path


def safe_filename(name: str) -> str:
    """A name as a file name: anything but letters, digits, ``._-`` becomes ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "param"
