"""The data graph: a serialized ``mindspore.dataset`` pipeline drawn as boxes and arrows.

Input is the JSON ``mindspore.dataset.serialize`` returns (or the recorder's fallback tree of
``op_type`` / ``operations`` / ``children`` when a Python callable made it unserializable).
Each node is one box, its operation's name in bold over its arguments (for a ``Map``, each
tensor operation with its parameters, in order); arrows run from the sources at the top to
the last operation, which feeds the network, at the bottom.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lineage.plots import figure, save

__all__ = ["box_text", "save_pipeline_graph"]

# Keys that are structure or runtime tuning rather than what the operation does.
_HIDDEN = {"op_type", "children", "operations", "callback", "connector_queue_size", "offload"}
_WRAP = 44
_FONT = 8
_SPACING = 1.3
_LINE_IN = _FONT * _SPACING / 72 + 0.03  # inches per text line
_COLUMN_IN = 3.6  # inches per leaf column
_GAP_IN = 0.4  # inches between levels (room for the arrow)
SOURCE = "#e8f1fb"
MAP = "#fdf3e1"
OTHER = "#eef2f0"


def _value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list):
        inner = ", ".join(_value(x) for x in v[:8])
        return f"[{inner}{', ...' if len(v) > 8 else ''}]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_value(x)}" for k, x in v.items()) + "}"
    return str(v)


def _operation(op: Any) -> str:
    if not isinstance(op, dict):
        return str(op)  # the fallback tree keeps only names
    name = op.get("tensor_op_name") or op.get("python_module") or "operation"
    params = op.get("tensor_op_params") or {}
    if not isinstance(params, dict):
        return f"{name}()"
    args = ", ".join(f"{k}={_value(v)}" for k, v in params.items() if k not in ("device_target",))
    return f"{name}({args})"


def box_text(node: dict[str, Any]) -> tuple[str, list[str]]:
    """The box of one pipeline node: its title and its argument lines."""
    title = str(node.get("op_type") or "?")
    lines: list[str] = []
    for key, value in node.items():
        if key in _HIDDEN or value in (None, [], {}, ""):
            continue
        if key == "num_parallel_workers":
            continue
        lines.extend(textwrap.wrap(f"{key}: {_value(value)}", _WRAP) or [""])
    for i, op in enumerate(node.get("operations") or (), 1):
        lines.extend(
            textwrap.wrap(f"{i}. {_operation(op)}", _WRAP, subsequent_indent="    ") or [""]
        )
    return title, lines


@dataclass
class _Node:
    title: str
    lines: list[str]
    depth: int
    leaf: bool
    x: float = 0.0
    children: list[_Node] = field(default_factory=list)


def _build(graph: dict[str, Any], depth: int, leaves: list[_Node]) -> _Node:
    title, lines = box_text(graph)
    kids = [c for c in graph.get("children") or () if isinstance(c, dict)]
    node = _Node(title, lines, depth, not kids)
    node.children = [_build(c, depth + 1, leaves) for c in kids]
    if node.leaf:
        node.x = len(leaves) + 0.5
        leaves.append(node)
    else:
        node.x = sum(c.x for c in node.children) / len(node.children)
    return node


def _walk(node: _Node) -> list[_Node]:
    out = [node]
    for c in node.children:
        out.extend(_walk(c))
    return out


def save_pipeline_graph(graph: dict[str, Any], path: Path, *, title: str = "") -> Path:
    """Draw ``graph`` (a serialized pipeline) into ``path``; returns ``path``."""
    leaves: list[_Node] = []
    root = _build(graph, 0, leaves)
    nodes = _walk(root)
    levels = max(n.depth for n in nodes) + 1
    # Each level is as tall as its tallest box; sources (deepest) on top.
    tall = [0] * levels
    for n in nodes:
        tall[n.depth] = max(tall[n.depth], len(n.lines) + 1)
    heights = [t * _LINE_IN + 0.3 for t in tall]
    centre: list[float] = []
    y = 0.25
    for d in range(levels):  # root at the bottom
        centre.append(y + heights[d] / 2)
        y += heights[d] + _GAP_IN
    width = max(1, len(leaves)) * _COLUMN_IN
    # 10 pt: about 11 characters per inch.
    title = "\n".join(textwrap.fill(t, int(width * 11)) for t in title.splitlines())
    title_in = (title.count("\n") + 1) * 0.2 + 0.25 if title else 0.0
    top = y - _GAP_IN + 0.25 + title_in
    fig = figure(width, top)
    fig.set_layout_engine("none")
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(0, width)
    ax.set_ylim(0, top)
    ax.axis("off")
    artists = {}
    for n in nodes:
        colour = SOURCE if n.leaf else MAP if n.title == "Map" else OTHER
        # The box holds a blank first line; the title is drawn over it in bold (mixing
        # weights inside one Text needs mathtext, which is slow to set up).
        x, y = n.x * _COLUMN_IN, centre[n.depth]
        artists[id(n)] = ax.text(
            x,
            y,
            "\n".join([" " * round(2.3 * len(n.title)), *n.lines]),
            ha="center",
            va="center",
            fontsize=_FONT,
            linespacing=_SPACING,
            bbox={"boxstyle": "round,pad=0.5", "fc": colour, "ec": "#5b6770", "lw": 0.9},
        )
        title_y = y + len(n.lines) / 2 * _FONT * _SPACING / 72
        ax.text(x, title_y, n.title, ha="center", va="center", fontsize=_FONT, weight="bold")
    for n in nodes:
        for c in n.children:
            ax.annotate(
                "",
                xy=(n.x * _COLUMN_IN, centre[n.depth]),
                xytext=(c.x * _COLUMN_IN, centre[c.depth]),
                arrowprops={
                    "arrowstyle": "-|>",
                    "color": "#34495e",
                    "lw": 1.2,
                    "patchA": artists[id(c)].get_bbox_patch(),
                    "patchB": artists[id(n)].get_bbox_patch(),
                    "shrinkA": 2,
                    "shrinkB": 2,
                },
            )
    if title:
        ax.text(width / 2, top - 0.15, title, ha="center", va="top", fontsize=10)
    return save(fig, path)
