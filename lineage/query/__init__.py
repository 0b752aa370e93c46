"""Query runs: a ``--where`` language with and/or/not, ``in``, ``like`` and numeric-aware
comparisons, multi-key sorting, and key lookup shared by the CLI's columns.

``search_runs(store, experiments=..., where=..., sort=..., limit=...)`` is the entry point.
"""

from __future__ import annotations

from lineage.lazy import lazy_names
from lineage.query._fields import ATTRIBUTES, Field, parse_field, to_number
from lineage.query._goal import best_position, metric_goal
from lineage.query._search import check_known, parse_sort, search_runs, search_runs_json, sort_runs
from lineage.query._where import Node, parse_where

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lineage.query._compare import ABSENT, diff_runs, identity, other_tags, summarize_all
    from lineage.query._focus import (
        Focus,
        experiment_focus,
        focus_of,
        importance_ranking,
        parse_targets,
        ui_links,
    )
    from lineage.query._layout import format_table, table_layout
    from lineage.query._table import (
        continued_trials,
        export_columns,
        is_training,
        rows,
        run_kind,
        run_to_dict,
        select_columns,
        shown_status,
        split_keys,
    )

# Comparing runs and laying out tables load on first use: `lineage --help` and the commands
# that only search do not pay for them (comparing loads dataclasses and inspect).
_LAZY = {
    "ABSENT": "lineage.query._compare",
    "diff_runs": "lineage.query._compare",
    "identity": "lineage.query._compare",
    "other_tags": "lineage.query._compare",
    "summarize_all": "lineage.query._compare",
    "Focus": "lineage.query._focus",
    "experiment_focus": "lineage.query._focus",
    "focus_of": "lineage.query._focus",
    "parse_targets": "lineage.query._focus",
    "importance_ranking": "lineage.query._focus",
    "ui_links": "lineage.query._focus",
    "format_table": "lineage.query._layout",
    "table_layout": "lineage.query._layout",
    "continued_trials": "lineage.query._table",
    "export_columns": "lineage.query._table",
    "is_training": "lineage.query._table",
    "rows": "lineage.query._table",
    "run_kind": "lineage.query._table",
    "run_to_dict": "lineage.query._table",
    "select_columns": "lineage.query._table",
    "shown_status": "lineage.query._table",
    "split_keys": "lineage.query._table",
}

__getattr__ = lazy_names(globals(), _LAZY)


__all__ = [
    "ABSENT",
    "ATTRIBUTES",
    "Field",
    "Focus",
    "Node",
    "best_position",
    "check_known",
    "continued_trials",
    "diff_runs",
    "experiment_focus",
    "export_columns",
    "focus_of",
    "format_table",
    "identity",
    "importance_ranking",
    "is_training",
    "metric_goal",
    "other_tags",
    "parse_field",
    "parse_sort",
    "parse_targets",
    "parse_where",
    "rows",
    "run_kind",
    "run_to_dict",
    "search_runs",
    "search_runs_json",
    "select_columns",
    "shown_status",
    "sort_runs",
    "split_keys",
    "summarize_all",
    "table_layout",
    "to_number",
    "ui_links",
]
