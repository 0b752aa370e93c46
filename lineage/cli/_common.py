"""Options every ``lineage`` command shares, and the three output formats."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Iterable, Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FORMATS = ("table", "json", "csv")


def add_common(parser: argparse.ArgumentParser, *, formats: Sequence[str] = FORMATS) -> None:
    """Add ``--tracking-uri`` and ``--format`` to a subcommand parser."""
    parser.add_argument(
        "--tracking-uri",
        default=None,
        help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db)",
    )
    parser.add_argument("--format", choices=list(formats), default="table", help="output format")


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # NaN/Inf are not JSON; keep them visible as strings
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def print_json(obj: Any) -> None:
    import json

    json.dump(_jsonable(obj), sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def print_csv(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    import csv

    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if v is None else v for v in row])


def format_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def print_table(
    columns: Sequence[str], rows: Iterable[Sequence[Any]], *, title: str | None = None
) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*(format_cell(v) for v in row))
    # Piped output (a file, a pager, a test) has no terminal width: print wide rather than fold
    # every cell into an unreadable 80-column grid. COLUMNS still wins when set.
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 240
    Console(soft_wrap=False, width=width).print(table)
