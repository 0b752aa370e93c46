"""MkDocs hooks (``hooks:`` in mkdocs.yml): fill the generated references at build time.

A page holds a marker line, ``<!-- generated: cli -->``, ``config``, ``environment`` or
``extras``, and the hook replaces it with the reference built from the code (``reference.py``,
``listings.py``), so the published reference
cannot drift from the parsers and the config model. ``<!-- results: NAME -->`` becomes the
figures of ``benchmarks/results/NAME.json`` (``results.py``).
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))
if _ROOT not in sys.path:  # the packages import from a checkout that was not pip-installed
    sys.path.insert(0, _ROOT)

# Loaded by path under a name of its own: a bare ``import reference`` could pick up any
# installed module of that name.
_spec = importlib.util.spec_from_file_location(
    "lineage_tuner_docs_reference", os.path.join(_HERE, "reference.py")
)
assert _spec is not None and _spec.loader is not None
reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)

_rspec = importlib.util.spec_from_file_location(
    "lineage_tuner_docs_results", os.path.join(_HERE, "results.py")
)
assert _rspec is not None and _rspec.loader is not None
results = importlib.util.module_from_spec(_rspec)
_rspec.loader.exec_module(results)

_lspec = importlib.util.spec_from_file_location(
    "lineage_tuner_docs_listings", os.path.join(_HERE, "listings.py")
)
assert _lspec is not None and _lspec.loader is not None
listings = importlib.util.module_from_spec(_lspec)
_lspec.loader.exec_module(listings)

_MARKERS = {
    "<!-- generated: cli -->": reference.cli_reference,
    "<!-- generated: config -->": reference.config_reference,
    "<!-- generated: environment -->": listings.environment_reference,
    "<!-- generated: extras -->": listings.extras_reference,
    "<!-- generated: faults -->": listings.fault_points,
}


# Docstrings cross-reference in Sphinx's roles (``:func:`name```), which the API reference's
# renderer leaves as text before the code span: keep the code span, drop the role.
_ROLE = re.compile(r":(?:mod|func|class|meth|attr|exc|data|obj):\s*(?=<code)")


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    return _ROLE.sub("", html)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    for marker, render in _MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, render())
    return str(results.fill(markdown))
