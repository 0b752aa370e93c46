"""``lineage report``: how a search went, in pictures, for any set of runs: the optimization
history with the best so far, parallel coordinates with the best runs in red, a contour and a
slice of the two most important parameters, the intermediate values with pruned runs marked,
and the Pareto front for several targets. PNG files and one interactive HTML page, drawn by
Optuna's own visualization module from the runs in the lineage store; ``--log`` records them
as an analysis run in the MLflow UI."""

from __future__ import annotations

import argparse
from typing import Any

from lineage._errors import UsageError
from lineage.cli._common import add_common, print_csv, print_json

ORDER = 45

_EPILOG = """\
examples:
  lineage report -e mnist --target val_loss --goal minimize -o mnist-report
  lineage report -e quickstart --log                  # a campaign: its target and space
  lineage report -e mo --target loss cost --goal minimize --format json
defaults: on a campaign's experiment, the campaign's targets, goals and tuned parameters;
elsewhere --target is required, --goal is guessed from the name (loss, error... minimize)
and every parameter that varies is drawn. Runs of the campaign that were pruned (tag
tuner.state=PRUNED) are marked; each run's metric history of the target is its curve.
output: DIR/report.html (every view, interactive), DIR/<view>.png, DIR/report.json.
exit codes: 0 written, 1 store failure, 2 bad input (unknown experiment/metric/param, no
finished run with the target, goals that do not match the targets).
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="draw how a search went (history, parallel coordinates, contour, Pareto front)",
        description=__doc__,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--experiment", "-e", required=True, metavar="E", help="experiment name or id"
    )
    parser.add_argument("--where", default=None, help="filter runs, as in `lineage runs`")
    parser.add_argument(
        "--target", "-t", nargs="+", default=None, metavar="METRIC",
        help="metric(s) to report; several make a multi-objective report with a Pareto front",
    )  # fmt: skip
    parser.add_argument(
        "--goal", nargs="+", default=None, choices=["minimize", "maximize", "min", "max"],
        help="whether lower or higher is better: once, or once per target",
    )  # fmt: skip
    parser.add_argument(
        "--params", nargs="+", default=None, metavar="P",
        help="draw only these parameters (default: the campaign's, else every one that varies)",
    )  # fmt: skip
    parser.add_argument(
        "--best", type=int, default=5, metavar="K",
        help="runs highlighted in the parallel coordinates (default 5)",
    )  # fmt: skip
    parser.add_argument(
        "-o", "--out", default=None, metavar="DIR",
        help="folder to write (default: report-<experiment>)",
    )  # fmt: skip
    parser.add_argument(
        "--log", action="store_true", help="record the files as an analysis run in MLflow"
    )
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from lineage.report import report_experiment

    if args.best < 1:
        raise UsageError(f"--best must be an integer >= 1, got {args.best}")
    if args.out is not None and Path(args.out).exists() and not Path(args.out).is_dir():
        raise UsageError(f"-o {args.out}: must be a folder, got an existing file")
    report = report_experiment(
        args.experiment,
        tracking_uri=args.tracking_uri,
        where=args.where,
        targets=args.target,
        goals=args.goal,
        params=args.params,
        out=args.out,
        log=args.log,
        best=args.best,
    )
    if args.format == "json":
        print_json(report.to_dict())
        return 0
    if args.format == "csv":
        print_csv(["file"], [[str(p)] for p in report.files])
        return 0
    counts = ", ".join(f"{k} {v}" for k, v in report.counts.items())
    print(f"{report.title} ({counts})")
    for view in report.views:
        print(f"  {report.directory / view['png']}  {view['title']}")
    print(f"  {report.page}  every view, interactive")
    for note in report.notes:
        print(f"note: {note}")
    if report.run_id:
        print(f"report logged: run {report.run_id} (artifacts report/)")
    return 0
