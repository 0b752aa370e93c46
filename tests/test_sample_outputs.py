"""scripts/sample_outputs.py: every sample block the docs mark is one the script regenerates,
every sample it knows is marked on a page, and a block is rewritten in place."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "sample_outputs.py"


def _module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("sample_outputs", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["sample_outputs"] = module
    spec.loader.exec_module(module)
    return module


def test_markers_and_samples_match() -> None:
    mod = _module()
    marked = mod.markers()
    known = {s.name for s in mod.SAMPLES}
    assert set(marked) == known, (
        f"marked only: {set(marked) - known}; unmarked: {known - set(marked)}"
    )


def test_a_marked_block_is_rewritten_and_the_rest_of_the_page_kept() -> None:
    mod = _module()
    page = "intro\n\n<!-- sample: demo-log -->\n```text\nold line\n```\n\nafter\n"
    new = mod.replace_block(page, "demo-log", "new 1\nnew 2")
    assert new == "intro\n\n<!-- sample: demo-log -->\n```text\nnew 1\nnew 2\n```\n\nafter\n"
    indented = "- item\n\n    <!-- sample: demo-log -->\n    ```text\n    old\n    ```\n"
    assert mod.replace_block(indented, "demo-log", "a\nb") == (
        "- item\n\n    <!-- sample: demo-log -->\n    ```text\n    a\n    b\n    ```\n"
    )


def test_an_unknown_sample_is_one_line_and_exit_2() -> None:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--only", "nope"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2
    assert out.stderr.strip() == "sample_outputs.py: error: --only: unknown sample nope"
