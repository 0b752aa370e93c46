"""``lineage index``: add (or drop) the covering indexes that make ``--where`` fast."""

from __future__ import annotations

import argparse
from typing import Any

from lineage.cli._common import add_common, print_csv, print_json, print_table

ORDER = 80


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "index",
        help="add covering indexes to a SQLite store: fast --where on large stores",
        description="Creates three indexes, (key, value, run_uuid) on params, latest_metrics "
        "and tags, in the MLflow SQLite database itself. SQLite keeps them up to date with "
        "every write, by MLflow or anyone else, so filtered queries (`lineage runs --where`, "
        "`export`, `importance`) stay right and run several times faster on stores of "
        "thousands of runs. MLflow ignores them. Idempotent; --drop removes them.",
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--drop", action="store_true", help="remove the indexes")
    action.add_argument(
        "--check", action="store_true", help="only report which indexes exist (read-only)"
    )
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from lineage.store import drop_indexes, ensure_indexes, index_states

    if args.check:
        states = index_states(args.tracking_uri)
    elif args.drop:
        states = drop_indexes(args.tracking_uri)
    else:
        states = ensure_indexes(args.tracking_uri)
    if args.format == "json":
        print_json([s.to_dict() for s in states])
        return 0
    rows = [[s.name, s.table, ", ".join(s.columns), s.state] for s in states]
    if args.format == "csv":
        print_csv(["name", "table", "columns", "state"], rows)
        return 0
    print_table(["index", "table", "columns", "state"], rows)
    return 0
