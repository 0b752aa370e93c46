"""The figures of an importance analysis.

``render_importance(result, directory)`` draws an analysis into ``directory``:
``importance.png`` (bars with 95% intervals), ``target_distribution.png``,
``scatter/<param>.png`` (one per ranked parameter) and ``importance.html`` (all of them,
interactive, self-contained). matplotlib and plotly are imported only when drawing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lineage.plots import safe_filename

if TYPE_CHECKING:
    from lineage.importance._result import ImportanceResult

__all__ = ["render_importance"]


def render_importance(
    result: ImportanceResult, directory: str | Path, *, html: bool = True
) -> list[Path]:
    """Draw every figure of ``result`` into ``directory`` and return the files written.

    Args:
        result: the ranking to draw.
        directory: where to write (created if needed).
        html: also write ``importance.html``, the figures as one interactive page.

    Returns:
        The paths of the files written.
    """
    from lineage.importance._figures._static import (
        save_importance_bars,
        save_scatter,
        save_target_distribution,
    )

    out = Path(directory)
    written = [
        save_importance_bars(result, out / "importance.png"),
        save_target_distribution(result, out / "target_distribution.png"),
    ]
    used: set[str] = set()
    for p in result.params:
        stem = safe_filename(p.name)
        while stem in used:
            stem += "_"
        used.add(stem)
        written.append(save_scatter(result, p.name, out / "scatter" / f"{stem}.png"))
    if html:
        from lineage.importance._figures._interactive import save_html

        written.append(save_html(result, out / "importance.html"))
    return written
