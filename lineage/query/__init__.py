"""Query runs: a ``--where`` language with and/or/not, ``in``, ``like`` and numeric-aware
comparisons, multi-key sorting, and key lookup shared by the CLI's columns.

``search_runs(store, experiments=..., where=..., sort=..., limit=...)`` is the entry point.
"""

from __future__ import annotations

from lineage.query._fields import ATTRIBUTES, Field, parse_field, to_number
from lineage.query._goal import metric_goal
from lineage.query._search import parse_sort, search_runs, search_runs_json, sort_runs
from lineage.query._where import Node, parse_where

__all__ = [
    "ATTRIBUTES",
    "Field",
    "Node",
    "metric_goal",
    "parse_field",
    "parse_sort",
    "parse_where",
    "search_runs",
    "search_runs_json",
    "sort_runs",
    "to_number",
]
