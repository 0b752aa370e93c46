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
  lineage diagnose --experiment digits                one line per run with findings
  lineage diagnose --experiment digits --details      and each finding's causes and next steps
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
    parser.add_argument(
        "--details",
        action="store_true",
        help="after the summary, each finding with its likely causes and next steps "
        "(the default when RUN ids are given)",
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
                # A campaign's parent run and the analyses record no training of their own.
                if r.tags.get(tags.RUN_TYPE) not in tags.RUN_KINDS_APART
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
        _print_report(results, details=args.details or bool(args.runs))
    return 0


def _subject(evidence: dict[str, Any]) -> str:
    return str(evidence.get("metric") or evidence.get("param") or "")


def _window(evidence: dict[str, Any]) -> str:
    window = evidence.get("window")
    return f"{window[0]}-{window[1]}" if window else ""


def _print_report(results: list[tuple[Any, list[Any]]], *, details: bool) -> None:
    """One summary table (a line per run with findings, its counts by check), then with
    ``details`` each finding in words; text wraps at word boundaries, never inside one."""
    from lineage.cli._common import print_table

    if not results:
        print("no runs matched")
        return
    flagged = [(r, findings) for r, findings in results if findings]
    healthy = [r for r, findings in results if not findings]
    if flagged:
        print_table(
            ["run", "name", "errors", "warnings", "checks"],
            [_summary_row(r, findings) for r, findings in flagged],
            title=f"{len(flagged)} of {len(results)} run{'s' if len(results) != 1 else ''} "
            "with findings",
            drop=(1,),
            key=0,
        )
    if healthy:
        ids = ", ".join(r.run_id[:8] for r in healthy)
        _say(f"no findings: {len(healthy)} run{'s' if len(healthy) != 1 else ''}: {ids}")
    if not details:
        if flagged:
            _say("--details: each finding with its likely causes and next steps")
        return
    for record, findings in flagged:
        print()
        _say(f"run {record.run_id} ({record.name}, {record.experiment}):")
        for f in findings:
            _say(f"{f.severity} {f.check}{_where(f.evidence)}: {f.summary}", indent="  ")
            for title, lines in (("likely causes", f.causes), ("next steps", f.next_steps)):
                _say(f"{title}:", indent="    ")
                for line in lines:
                    _say(f"- {line}", indent="      ", hang="  ")


def _summary_row(record: Any, findings: list[Any]) -> list[Any]:
    from collections import Counter

    severities = Counter(f.severity for f in findings)
    checks = Counter(f.check for f in findings)
    return [
        record.run_id[:8],
        record.name,
        severities["error"],
        severities["warning"],
        ", ".join(c if n == 1 else f"{c} x{n}" for c, n in checks.items()),
    ]


def _where(evidence: dict[str, Any]) -> str:
    """`` (train_loss, step 29, value inf, steps 28-29)``: what the finding points at."""
    parts = [_subject(evidence)]
    if evidence.get("step") is not None:
        parts.append(f"step {format_cell(evidence['step'])}")
    if evidence.get("value") is not None:
        parts.append(f"value {format_cell(evidence['value'])}")
    if _window(evidence):
        parts.append(f"steps {_window(evidence)}")
    shown = [p for p in parts if p]
    return f" ({', '.join(shown)})" if shown else ""


def _say(text: str, *, indent: str = "", hang: str = "") -> None:
    """``text`` wrapped at word boundaries to the terminal's width (80 in a pipe)."""
    import textwrap

    from lineage.cli._common import terminal_columns

    print(
        textwrap.fill(
            text,
            max(terminal_columns() or 80, 40),
            initial_indent=indent,
            subsequent_indent=indent + hang + ("  " if not hang else ""),
            break_long_words=False,
            break_on_hyphens=False,
        )
    )
