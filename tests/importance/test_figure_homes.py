"""Each kind of figure lives with what it shows; ``lineage.plots`` is the canvas they share
and imports none of them, so importance and plots import each other in no order."""

from __future__ import annotations

import subprocess
import sys


def _imported_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_the_shared_canvas_imports_no_kind_of_figure() -> None:
    loaded = _imported_after("import lineage.plots")
    assert not {m for m in loaded if m.startswith(("lineage.importance", "lineage.mindspore"))}
    assert not {m for m in loaded if m.startswith(("lineage.report", "matplotlib"))}


def test_importance_draws_its_own_figures_on_the_canvas() -> None:
    from lineage.importance import render_importance

    assert render_importance.__module__ == "lineage.importance._figures"
    loaded = _imported_after("import lineage.importance")
    assert "lineage.plots" in loaded and "matplotlib" not in loaded
