"""``lineage diff RUN_A RUN_B``: what differs between two runs, hyperparameters first."""

from __future__ import annotations

import argparse
from typing import Any

from lineage.cli._common import add_common, print_csv, print_json, print_table

ORDER = 30


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "diff",
        help="compare two runs: params first, then metrics, identity, tags",
        description="Side by side: hyperparameters (params) first, then latest metrics, "
        "identity (git commit, command, versions, data fingerprints) and other tags. Only "
        "differences unless --all; a key one run lacks shows as <absent>. Compare a run "
        "with the baseline it should reproduce: the hyperparameter differences lead.",
    )
    parser.add_argument("run_a", metavar="RUN_A", help="run id or unique prefix (the baseline)")
    parser.add_argument("run_b", metavar="RUN_B", help="run id or unique prefix")
    parser.add_argument("--all", action="store_true", help="also list keys that are equal")
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from lineage.query import ABSENT, diff_runs
    from lineage.store import open_store

    with open_store(args.tracking_uri) as store:
        a = store.get_run(args.run_a)
        b = store.get_run(args.run_b)
    diffs = diff_runs(a, b, include_same=args.all)
    if args.format == "json":
        print_json(
            {
                "a": {"run_id": a.run_id, "run_name": a.name, "experiment": a.experiment},
                "b": {"run_id": b.run_id, "run_name": b.name, "experiment": b.experiment},
                "differences": [d.to_dict() for d in diffs],
            }
        )
        return 0

    def cell(value: Any) -> Any:
        return ABSENT if value is None else value

    rows = [[d.section, d.key, cell(d.a), cell(d.b), d.state] for d in diffs]
    if args.format == "csv":
        print_csv(["section", "key", "a", "b", "state"], rows)
        return 0
    label_a = f"A {a.run_id[:8]} {a.name}".strip()
    label_b = f"B {b.run_id[:8]} {b.name}".strip()
    changed = sum(1 for d in diffs if d.state != "same")
    title = f"{changed} difference{'s' if changed != 1 else ''}" + (
        "" if args.all else " (params first; --all for equal keys too)"
    )
    # Narrow terminals lose the state column first, then the section, never a value.
    print_table(
        ["section", "key", label_a, label_b, "state"], rows, title=title, drop=(4, 0), key=1
    )
    return 0
