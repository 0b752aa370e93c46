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


def terminal_columns() -> int | None:
    """``$COLUMNS``, else the width of the terminal on stdout; ``None`` without one (a pipe,
    a file): tables are then printed whole, whatever their width."""
    try:
        return max(int(os.environ["COLUMNS"]), 20)
    except (KeyError, ValueError):
        pass
    try:
        if sys.stdout.isatty():
            return os.get_terminal_size(sys.stdout.fileno()).columns or None
    except (AttributeError, ValueError, OSError):
        pass
    return None


# A column this narrow (numbers, states, short names) is never cut; a wider one may be cut to
# _CUT_TO characters with an ellipsis.
_WHOLE = 16
_CUT_TO = 10


def fit_widths(
    headers: Sequence[str],
    cells: Sequence[Sequence[str]],
    width: int | None,
    *,
    keep: int = 1,
    drop: Sequence[int] = (),
) -> list[int | None]:
    """Each column's width in a boxed table that fits ``width`` characters (None: the table's
    natural width), None for a column left out. Wide columns are narrowed first (their cells
    then end in an ellipsis), after the columns in ``drop`` are left out (in that order:
    they go before any cell is cut); only when that is not enough are more columns left out,
    the rightmost first, never one of the first ``keep``.
    Cells are never folded onto a second line."""
    body = [max([0] + [len(row[i]) for row in cells]) for i in range(len(headers))]
    natural = [max(b, len(h)) for b, h in zip(body, headers, strict=True)]
    if width is None:
        return list(natural)
    # A header is cut only beyond _WHOLE characters, as a cell is.
    floor = [
        max(min(len(h), _WHOLE), b if b <= _WHOLE else _CUT_TO)
        for b, h in zip(body, headers, strict=True)
    ]
    whole_cells = [max(f, b) for f, b in zip(floor, body, strict=True)]
    shown = list(range(len(headers)))

    def over(widths: Sequence[int]) -> bool:
        return sum(widths[i] for i in shown) + 3 * len(shown) + 1 > width

    optional = list(drop)
    while optional and over(whole_cells):  # before any cell is cut
        shown.remove(optional.pop(0))
    order = [*optional, *(i for i in reversed(shown) if i >= keep and i not in drop)]
    while order and over(floor):
        shown.remove(order.pop(0))
    room = width - 3 * len(shown) - 1 - sum(floor[i] for i in shown)
    out: list[int | None] = [None] * len(headers)
    for i in shown:
        out[i] = floor[i]
    for target in (whole_cells, natural):  # whole cells first, then whole headers
        for i in shown:  # the leftmost columns widen first
            extra = max(0, min(target[i] - (out[i] or 0), room))
            room -= extra
            out[i] = (out[i] or 0) + extra
    return out


def print_table(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    title: str | None = None,
    keep: int = 1,
    drop: Sequence[int] = (),
    key: int = 0,
) -> None:
    """A table that fits the terminal (see `fit_widths`): no cell is ever broken across
    lines. A text cell cut short is printed whole below the table, wrapped at word
    boundaries, after its row's ``key`` cell; columns left out (``keep``, ``drop``: see
    `fit_widths`) are named on stderr.
    A pipe gets the whole table."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    headers = [str(c) for c in columns]
    cells = [[format_cell(v) for v in row] for row in rows]
    width = terminal_columns()
    widths = fit_widths(headers, cells, width, keep=keep, drop=drop)
    shown = [i for i, w in enumerate(widths) if w is not None]
    total = sum(widths[i] or 0 for i in shown) + 3 * len(shown) + 1
    if title and shown and total < len(title) <= (width or len(title)):
        widths[shown[-1]] = (widths[shown[-1]] or 0) + len(title) - total  # the title fits
        total = len(title)
    table = Table(title=title, show_lines=False)
    for i in shown:
        table.add_column(Text(headers[i]), width=widths[i], no_wrap=True, overflow="ellipsis")
    for row in cells:
        table.add_row(*(Text(row[i]) for i in shown))
    Console(soft_wrap=False, width=max(width or total, total), highlight=False).print(table)
    _print_cut(headers, cells, widths, width, key)


def _print_cut(
    headers: Sequence[str], cells: Sequence[Sequence[str]], widths: Sequence[int | None],
    width: int | None, key: int,
) -> None:  # fmt: skip
    shown = [i for i, w in enumerate(widths) if w is not None]
    for row in cells:
        for i in shown:
            if len(row[i]) > (widths[i] or 0) and " " in row[i].strip():
                # Named by its row's key, and by its column where several hold values.
                label = headers[i] if i == key else row[key]
                if i != key and len([j for j in shown if j > key]) > 1:
                    label += f" ({headers[i]})"
                sys.stdout.write(_wrap(f"{label}: {row[i]}", width) + "\n")
    hidden = [h for h, w in zip(headers, widths, strict=True) if w is None]
    if hidden:
        sys.stdout.flush()
        note = (
            f"+{len(hidden)} column{'s' if len(hidden) > 1 else ''} not shown at {width} "
            f"columns ({', '.join(hidden)}): a wider terminal or --format json shows "
            f"{'them' if len(hidden) > 1 else 'it'}"
        )
        sys.stderr.write(_wrap(note, width) + "\n")


def _wrap(text: str, width: int | None) -> str:
    """``text`` in lines of ``width`` at most, broken at spaces only (a longer word stays
    whole), the lines after the first indented."""
    import textwrap

    return textwrap.fill(
        text,
        width or 10**6,
        subsequent_indent="  ",
        break_long_words=False,
        break_on_hyphens=False,
    )


def print_text(text: str) -> None:
    """A line of prose under a table: wrapped at word boundaries to the terminal's width
    (one line in a pipe), so that the terminal never breaks a word at its edge. Each line
    of a text of several is wrapped on its own."""
    width = terminal_columns()
    print("\n".join(_wrap(line, width) for line in text.split("\n")))
