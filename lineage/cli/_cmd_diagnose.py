"""``lineage diagnose``: check runs for accuracy problems (loss runaway, slow convergence,
overfitting, unreasonable hyperparameters...) and say what to try next."""

from __future__ import annotations

import argparse
from typing import Any

from lineage import tags
from lineage._errors import UsageError
from lineage.cli._common import add_common, format_cell, print_csv, print_json

ORDER = 60

_EPILOG = """\
examples:
  lineage diagnose 3f2a9c1e                     one run (id or unique prefix)
  lineage diagnose --experiment digits --where "params.lr > 1" --format json
exit codes: 0 diagnosed (findings or not), 1 store failure, 2 bad input or unknown run.
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "diagnose",
        help="find accuracy problems in runs and suggest next steps",
        description=__doc__,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("runs", nargs="*", metavar="RUN", help="run ids (or unique prefixes)")
    parser.add_argument(
        "--experiment",
        "-e",
        action="append",
        default=None,
        metavar="E",
        help="diagnose the runs of this experiment (name or id; repeatable)",
    )
    parser.add_argument("--where", default=None, help="filter runs, as in `lineage runs`")
    parser.add_argument("--limit", type=int, default=None, help="at most N runs (newest first)")
    parser.add_argument(
        "--check",
        action="append",
        default=None,
        metavar="ID",
        help="run only this check (repeatable); default: all",
    )
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from lineage.diagnose import default_checks, diagnose_run
    from lineage.query import search_runs
    from lineage.store import open_store

    if args.runs and (args.experiment or args.where):
        raise UsageError(
            "give RUN ids or --experiment/--where, not both, got "
            f"runs={args.runs} experiment={args.experiment} where={args.where!r}"
        )
    if not args.runs and not args.experiment and args.where is None:
        raise UsageError("diagnose needs RUN ids or --experiment E (or --where EXPR), got none")
    checks = default_checks(args.check)
    with open_store(args.tracking_uri) as store:
        if args.runs:
            records = [store.get_run(ref) for ref in args.runs]
        else:
            records = [
                r
                for r in search_runs(
                    store, experiments=args.experiment, where=args.where, limit=args.limit
                )
                if r.tags.get(tags.RUN_TYPE) != tags.RUN_TYPE_ANALYSIS
            ]
        results = [(r, diagnose_run(r, store=store, checks=checks)) for r in records]

    if args.format == "json":
        print_json(
            {
                "runs": [
                    {
                        "run_id": r.run_id,
                        "run_name": r.name,
                        "experiment": r.experiment,
                        "status": r.status,
                        "findings": [f.to_dict() for f in findings],
                    }
                    for r, findings in results
                ]
            }
        )
    elif args.format == "csv":
        print_csv(
            ["run_id", "check", "severity", "subject", "step", "value", "window", "summary"],
            (
                [
                    r.run_id,
                    f.check,
                    f.severity,
                    _subject(f.evidence),
                    f.evidence.get("step"),
                    f.evidence.get("value"),
                    _window(f.evidence),
                    f.summary,
                ]
                for r, findings in results
                for f in findings
            ),
        )
    else:
        _print_report(results)
    return 0


def _subject(evidence: dict[str, Any]) -> str:
    return str(evidence.get("metric") or evidence.get("param") or "")


def _window(evidence: dict[str, Any]) -> str:
    window = evidence.get("window")
    return f"{window[0]}-{window[1]}" if window else ""


def _print_report(results: list[tuple[Any, list[Any]]]) -> None:
    import textwrap

    from rich.console import Console
    from rich.table import Table

    console = Console(soft_wrap=False, highlight=False)
    if not results:
        console.print("no runs matched")
        return
    healthy = [r for r, findings in results if not findings]
    for record, findings in results:
        if not findings:
            continue
        label = f"{record.run_id} ({record.name}, {record.experiment})"
        console.print(f"[bold]run {label}[/bold]: {len(findings)} finding(s)")
        table = Table(show_lines=False)
        for col in ("severity", "check", "metric/param", "step", "value", "window", "summary"):
            table.add_column(col, overflow="fold")
        for f in findings:
            colour = "red" if f.severity == "error" else "yellow"
            table.add_row(
                f"[{colour}]{f.severity}[/{colour}]",
                f.check,
                _subject(f.evidence),
                format_cell(f.evidence.get("step")),
                format_cell(f.evidence.get("value")),
                _window(f.evidence),
                f.summary,
            )
        console.print(table)
        width = max(console.width, 60)
        for f in findings:
            console.print(f"[bold]{f.check}[/bold]: {f.summary}")
            for title, lines in (("likely causes", f.causes), ("next steps", f.next_steps)):
                console.print(f"  {title}:")
                for line in lines:
                    console.print(
                        textwrap.fill(
                            line,
                            width,
                            initial_indent="    - ",
                            subsequent_indent="      ",
                            break_on_hyphens=False,
                        ),
                        markup=False,
                    )
        console.print()
    if healthy:
        ids = ", ".join(r.run_id for r in healthy)
        console.print(f"no findings: {len(healthy)} run(s): {ids}")
