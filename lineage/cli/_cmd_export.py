"""``lineage export``: the whole run table as CSV, Parquet or JSON."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any, TextIO

from lineage._errors import LineageError, UsageError
from lineage.cli._cmd_runs import add_query_arguments, query_from_args, write_json_list
from lineage.cli._common import add_common

ORDER = 40
FORMATS = ("csv", "parquet", "json")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "export",
        help="export the run table (csv, parquet, json)",
        description="Export every attribute, param, metric (latest value) and tag of the "
        "selected runs: one row per run, columns params.K / metrics.K / tags.K.",
    )
    add_query_arguments(parser)
    parser.add_argument(
        "--output", "-o", default=None, metavar="FILE", help="write here (default: stdout)"
    )
    add_common(parser, formats=FORMATS)
    parser.set_defaults(handler=run, format="csv")


def run(args: argparse.Namespace) -> int:
    from lineage.query import experiment_focus, export_columns, rows

    if args.format == "parquet" and not args.output:
        raise UsageError("--format parquet writes a binary file: give --output FILE")
    store, runs = query_from_args(args)
    try:
        focus = experiment_focus(store, [r.experiment_id for r in runs])
    finally:
        store.close()
    # The experiment's target metrics lead the metric columns, whichever runs were selected.
    fields = export_columns(runs, focus.metrics)
    headers = [str(f) for f in fields]
    table = rows(runs, fields)
    if args.format == "parquet":
        _write_parquet(args.output, fields, headers, table)
    elif args.output:
        try:
            with open(args.output, "w", newline="", encoding="utf-8") as stream:
                _write_text(stream, args.format, headers, table, runs)
        except OSError as exc:
            raise LineageError(f"cannot write {args.output}: {exc}") from exc
    else:
        _write_text(sys.stdout, args.format, headers, table, runs)
    if args.output:
        print(f"wrote {len(runs)} runs x {len(headers)} columns to {args.output}", file=sys.stderr)
    return 0


def _write_text(out: TextIO, fmt: str, headers: list[str], table: list[Any], runs: Any) -> None:
    from lineage.query import run_to_dict

    if fmt == "csv":
        import csv

        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(headers)
        for row in table:
            writer.writerow([_cell(v) for v in row])
    else:
        write_json_list((run_to_dict(r) for r in runs), out)


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    return value


def _write_parquet(path: str, fields: list[Any], headers: list[str], table: list[Any]) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise UsageError(
            "--format parquet needs pyarrow: pip install 'lineage-tuner[parquet]'"
        ) from exc
    columns = list(zip(*table, strict=True)) if table else [() for _ in headers]
    arrays = []
    for field, values in zip(fields, columns, strict=True):
        if field.kind == "metrics" or field.key == "duration":
            kind = pa.float64()
        elif field.key in ("start_time", "end_time"):
            kind = pa.int64()
        else:
            kind = pa.string()
        arrays.append(pa.array(list(values), type=kind))
    try:
        pq.write_table(pa.Table.from_arrays(arrays, names=headers), path)
    except OSError as exc:
        raise LineageError(f"cannot write {path}: {exc}") from exc
