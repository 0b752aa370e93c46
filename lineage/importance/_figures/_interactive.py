"""One self-contained, interactive HTML page of an importance analysis (plotly).

plotly.js is inlined once at the top of the page (about 3.5 MB) and every figure after it
reuses it, so the page opens in the MLflow UI's artifact view, or from a file, without a
network. Hovering a point names its run.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lineage.importance._figures._data import headline, scatter_data
from lineage.importance._figures._static import BEST, NOT_SIGNIFICANT, POINTS, SIGNIFICANT
from lineage.importance._result import format_bound

if TYPE_CHECKING:
    from lineage.importance._result import ImportanceResult

__all__ = ["save_html"]

_MAX_HOVER_POINTS = 20_000  # past this, hover labels make the page heavy; points stay


def _layout(title: str, **extra: Any) -> dict[str, Any]:
    return {
        "title": {"text": title, "x": 0.01, "font": {"size": 15}},
        "template": "plotly_white",
        "margin": {"l": 70, "r": 20, "t": 50, "b": 50},
        **extra,
    }


def _bars(result: ImportanceResult) -> Any:
    import plotly.graph_objects as go

    params = result.params[::-1]
    values = [p.importance for p in params]
    fig = go.Figure(
        go.Bar(
            x=values,
            y=[p.label for p in params],
            orientation="h",
            marker_color=[SIGNIFICANT if p.significant else NOT_SIGNIFICANT for p in params],
            error_x={
                "type": "data",
                "symmetric": False,
                "array": [max(p.ci[1] - p.importance, 0.0) for p in params],
                "arrayminus": [max(p.importance - p.ci[0], 0.0) for p in params],
                "color": "#333333",
            },
            customdata=[
                [
                    format_bound(p.ci[0], 3),
                    format_bound(p.ci[1], 3),
                    "yes" if p.significant else "no",
                    "" if p.correlation is None else f"{p.correlation:+.2f}",
                    p.best,
                ]
                for p in params
            ],
            hovertemplate="<b>%{y}</b><br>importance %{x:.3f} [%{customdata[0]}, "
            "%{customdata[1]}]<br>significant: %{customdata[2]}<br>Spearman: "
            "%{customdata[3]}<br>best: %{customdata[4]}<extra></extra>",
        )
    )
    scope = f", best {result.top:g} of runs" if result.top else ""
    fig.update_layout(
        **_layout(
            f"Importance for {result.target} ({result.goal}, {result.n_runs} runs{scope})",
            height=160 + 32 * len(params),
            xaxis_title="importance (95% interval); blue: the interval excludes 0 (significant)",
        )
    )
    return fig


def _hover(result: ImportanceResult) -> list[str] | None:
    if len(result.target_values) > _MAX_HOVER_POINTS:
        return None
    names = result.run_names or [""] * len(result.target_values)
    ids = result.run_ids or [""] * len(result.target_values)
    return [html.escape(f"{n or i[:8]} ({i[:8]})") for n, i in zip(names, ids, strict=True)]


def _scatter(result: ImportanceResult, name: str, hover: list[str] | None) -> Any:
    import plotly.graph_objects as go

    data = scatter_data(result, name)
    p = next(p for p in result.params if p.name == name)
    fig = go.Figure()
    if data.kind == "categorical":
        labels = np.array(data.categories, dtype=object)[data.codes]
        fig.add_trace(
            go.Box(
                x=labels,
                y=data.y,
                boxpoints="all",
                jitter=0.4,
                pointpos=0,
                name="runs",
                marker={"color": POINTS, "size": 5, "opacity": 0.55},
                line={"color": "#777777"},
                text=hover,
                hovertemplate="%{text}<br>%{x}: %{y}<extra></extra>",
            )
        )
        fig.update_xaxes(categoryorder="array", categoryarray=data.categories)
        best_x: Any = data.categories[data.best_code] if data.best_code is not None else None
    else:
        ok = ~np.isnan(data.x)
        fig.add_trace(
            go.Scattergl(
                x=data.x[ok],
                y=data.y[ok],
                mode="markers",
                name="runs",
                marker={"color": POINTS, "size": 6, "opacity": 0.6},
                text=None if hover is None else [h for h, k in zip(hover, ok, strict=True) if k],
                hovertemplate=f"%{{text}}<br>{html.escape(name)}=%{{x}}<br>"
                f"{html.escape(result.target)}=%{{y}}<extra></extra>",
            )
        )
        if data.trend is not None:
            fig.add_trace(
                go.Scatter(
                    x=data.trend[0],
                    y=data.trend[1],
                    mode="lines",
                    name="median by bin",
                    line={"color": "#333333", "width": 2},
                )
            )
        if data.log:
            fig.update_xaxes(type="log")
        best_x = data.best_x
    if best_x is not None:
        fig.add_trace(
            go.Scatter(
                x=[best_x],
                y=[data.best_y],
                mode="markers",
                name="best run",
                marker={
                    "symbol": "star",
                    "size": 16,
                    "color": BEST,
                    "line": {"color": "white", "width": 1},
                },
            )
        )
    fig.update_layout(
        **_layout(
            headline(p),
            height=420,
            xaxis_title=f"{name}{' (log scale)' if data.log else ''}",
            yaxis_title=result.target,
        )
    )
    return fig


def _histogram(result: ImportanceResult) -> Any:
    import plotly.graph_objects as go

    y = result.target_values
    fig = go.Figure(go.Histogram(x=y, marker_color=POINTS, name="runs"))
    fig.add_vline(x=float(y[result.best_index]), line_color=BEST, annotation_text="best")
    fig.update_layout(
        **_layout(
            f"Distribution of {result.target}",
            height=320,
            xaxis_title=result.target,
            yaxis_title="runs",
        )
    )
    return fig


def _top_table(result: ImportanceResult, k: int) -> str:
    rows = result.top_runs(k)
    names = [p.name for p in result.params]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in ["#", "run", result.target, *names])
    body = []
    for r in rows:
        cells = [
            str(r["rank"]),
            r["run_name"] or (r["run_id"] or "")[:8],
            f"{r[result.target]:.6g}",
        ]
        cells += ["" if r["params"].get(n) is None else str(r["params"][n]) for n in names]
        body.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


_STYLE = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#222}
h1{font-size:20px} h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;font-size:13px} td,th{border:1px solid #ddd;padding:4px 8px;text-align:right}
th{background:#f4f6f8} .grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:12px}
"""


def save_html(result: ImportanceResult, path: Path, *, top_runs: int = 10) -> Path:
    """Write the page: importance bars, target distribution, top runs, one scatter per
    parameter in ranking order."""
    figures = [_bars(result), _histogram(result)]
    hover = _hover(result)
    scatters = [_scatter(result, p.name, hover) for p in result.params]
    parts = [
        f.to_html(full_html=False, include_plotlyjs=(i == 0), config={"displaylogo": False})
        for i, f in enumerate([*figures, *scatters])
    ]
    title = html.escape(f"{result.experiment or ''}: importance for {result.target}")
    page = (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{title}</h1>"
        f"{parts[0]}{parts[1]}<h2>Top runs</h2>{_top_table(result, top_runs)}"
        f"<h2>Each parameter against {html.escape(result.target)}</h2>"
        f"<div class='grid'>{''.join(f'<div>{s}</div>' for s in parts[2:])}</div>"
        "</body></html>"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path
