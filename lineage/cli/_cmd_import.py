"""``lineage import mindinsight``: bring MindInsight summary directories into MLflow."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from lineage.cli._common import add_common, print_csv, print_json, print_table

ORDER = 90

_DESCRIPTION = """\
Every training that SummaryCollector wrote under SUMMARY_BASE_DIR (one directory each, its
lineage and scalar files) becomes one MLflow run, with the param, metric and tag names that
LineageCallback records, so that `lineage runs`, `importance` and `diagnose` work on it.
Re-importing adds nothing; a grown directory adds only its new runs; a damaged file fails
its run only.
"""

_EPILOG = """\
examples:
  lineage import mindinsight ./summary_base_dir
  lineage import mindinsight /data/summaries --experiment lenet-history --format json
exit codes: 0 every run imported (or already there), 1 a file was damaged (the other runs
are imported) or the store failed, 2 bad input.
"""

_COLUMNS = ("status", "train_id", "run_id", "params", "metrics", "points", "error")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "import",
        help="import training history from other tools (MindInsight summaries)",
        description="Import training history from other tools into the lineage store.",
    )
    sources = parser.add_subparsers(dest="source", metavar="SOURCE", required=True)
    mi = sources.add_parser(
        "mindinsight",
        help="MindInsight summary directories (SummaryCollector output)",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mi.add_argument(
        "summary_base_dir",
        metavar="SUMMARY_BASE_DIR",
        help="the directory MindInsight was started on (holds one directory per training)",
    )
    mi.add_argument(
        "--experiment",
        "-e",
        default=None,
        metavar="NAME",
        help="MLflow experiment to import into (default: the directory's name)",
    )
    add_common(mi)
    mi.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import os

    # MLflow logs its schema creation at INFO into the command's output.
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
    from lineage.mindinsight import import_summaries

    bar = _Progress() if sys.stderr.isatty() else None
    try:
        results = import_summaries(
            args.summary_base_dir,
            experiment=args.experiment,
            tracking_uri=args.tracking_uri,
            on_start=bar.start if bar else None,
            on_result=bar.advance if bar else None,
        )
    finally:
        if bar is not None:
            bar.stop()
    failed = [r for r in results if r.status == "failed"]
    if args.format == "json":
        print_json([r.as_dict() for r in results])
    elif args.format == "csv":
        print_csv(_COLUMNS, ([getattr(r, c) for c in _COLUMNS] for r in results))
    else:
        counts: dict[str, int] = {}
        for r in results:
            counts[r.status] = counts.get(r.status, 0) + 1
        summary = ", ".join(f"{n} {s}" for s, n in counts.items()) or "no training runs found"
        print_table(
            _COLUMNS[:-1],
            ([getattr(r, c) for c in _COLUMNS[:-1]] for r in results),
            title=f"{args.summary_base_dir}: {summary}",
        )
    for r in failed:
        print(f"lineage import: error: {r.error}", file=sys.stderr)
    return 1 if failed else 0


class _Progress:
    """A rich progress bar on stderr (only made when stderr is a terminal)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self._progress = Progress(
            TextColumn("importing"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[current]}"),
            console=Console(stderr=True),
            transient=True,
        )
        self._task: Any = None

    def start(self, total: int) -> None:
        self._progress.start()
        self._task = self._progress.add_task("import", total=total, current="")

    def advance(self, result: Any) -> None:
        self._progress.update(self._task, advance=1, current=f"{result.train_id} {result.status}")

    def stop(self) -> None:
        self._progress.stop()
