"""``lineage show RUN``: everything recorded about one run."""

from __future__ import annotations

import argparse
from typing import Any

from lineage import tags as T
from lineage._errors import StoreError
from lineage.cli._common import add_common, print_csv, print_json, print_table

ORDER = 20


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "show",
        help="one run: params, metric summaries, identity, tags, artifacts",
        description="Params; last, best, min and max of every metric (best is the min for "
        "names with loss/error/err, else the max); identity (git commit and dirty flag, "
        "command, host, Python and framework versions, data fingerprints); tags; artifacts.",
    )
    parser.add_argument("run_id", metavar="RUN", help="run id or a unique prefix of one")
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from lineage.query import experiment_focus, identity, other_tags, summarize_all
    from lineage.store import open_store

    with open_store(args.tracking_uri) as store:
        record = store.get_run(args.run_id)
        # The experiment's target first, best in its goal's direction.
        focus = experiment_focus(store, [record.experiment_id])
        summaries = summarize_all(store.metric_histories(record.run_id), focus.targets)
        try:
            artifacts: list[str] | None = store.artifacts(record.run_id)
            artifact_error = None
        except StoreError as exc:
            artifacts, artifact_error = None, str(exc)
    ident = identity(record)
    tags = {k: v for k, v in other_tags(record).items() if k != T.MLFLOW_RUN_NAME}
    head = {
        "run_id": record.run_id,
        "run_name": record.name,
        "experiment": record.experiment,
        "experiment_id": record.experiment_id,
        "status": record.status,
        "start_time": record.start_time,
        "end_time": record.end_time,
        "duration": record.duration,
        "artifact_uri": record.artifact_uri,
    }
    if args.format == "json":
        print_json(
            {
                **head,
                "params": record.params,
                "metrics": [s.to_dict() for s in summaries],
                "identity": ident,
                "tags": tags,
                "artifacts": artifacts,
                **({"artifacts_error": artifact_error} if artifact_error else {}),
            }
        )
        return 0
    if args.format == "csv":
        cols = ["section", "key", "value", "last", "last_step", "best", "best_step", "goal"]
        cols += ["min", "max", "count"]
        out: list[list[Any]] = [["run", k, v] + [None] * 8 for k, v in head.items()]
        out += [["params", k, v] + [None] * 8 for k, v in sorted(record.params.items())]
        out += [["metrics", s.key, s.last, *_summary_cells(s)] for s in summaries]
        out += [["identity", k, v] + [None] * 8 for k, v in ident.items()]
        out += [["tags", k, v] + [None] * 8 for k, v in tags.items()]
        out += [["artifacts", a, None] + [None] * 8 for a in artifacts or ()]
        print_csv(cols, out)
        return 0
    from lineage.cli._cmd_runs import format_time

    shown = dict(head)
    shown["start_time"] = format_time(record.start_time)
    shown["end_time"] = format_time(record.end_time)
    print_table(["field", "value"], list(shown.items()), title=f"run {record.run_id}")
    _section(["param", "value"], sorted(record.params.items()), "params")
    _section(
        ["metric", "last", "step", "best", "goal", "best step", "min", "max", "points"],
        [
            [s.key, s.last, s.last_step, s.best, s.goal, s.best_step, s.min, s.max, s.count]
            for s in summaries
        ],
        "metrics (best: the experiment's goal for its target; else min for loss/error "
        "names, max for others)",
    )
    _section(["tag", "value"], list(ident.items()), "identity")
    _section(["tag", "value"], list(tags.items()), "tags")
    if artifact_error:
        print(f"artifacts: unavailable ({artifact_error})")
    else:
        _section(["path"], [[a] for a in artifacts or ()], "artifacts")
    return 0


def _section(columns: list[str], rows: list[Any], title: str) -> None:
    if rows:
        print_table(columns, rows, title=title)
    else:
        print(f"{title.split(' (')[0]}: none")


def _summary_cells(s: Any) -> list[Any]:
    return [s.last, s.last_step, s.best, s.best_step, s.goal, s.min, s.max, s.count]
