"""MkDocs hooks (``hooks:`` in mkdocs.yml): fill the generated references at build time.

A page holds a marker line, ``<!-- generated: cli -->`` or ``<!-- generated: config -->``,
and the hook replaces it with the reference built from the code, so the published reference
cannot drift from the parsers and the config model.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:  # the packages are importable from a checkout without an install
    sys.path.insert(0, _ROOT)
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import reference  # noqa: E402

_MARKERS = {
    "<!-- generated: cli -->": reference.cli_reference,
    "<!-- generated: config -->": reference.config_reference,
}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    for marker, render in _MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, render())
    return markdown
