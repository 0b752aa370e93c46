"""The command-line kit ``lineage`` and ``tuner`` share: the parser class, the runner that
turns every error into one line and an exit code, and the table/JSON/CSV printers."""

from __future__ import annotations

from lineage._cli_run import Parser, one_line, run_handler
from lineage.cli import (
    FORMATS,
    add_common,
    fit_widths,
    format_cell,
    print_csv,
    print_json,
    print_table,
    print_text,
)

__all__ = [
    "FORMATS",
    "Parser",
    "add_common",
    "fit_widths",
    "format_cell",
    "one_line",
    "print_csv",
    "print_json",
    "print_table",
    "print_text",
    "run_handler",
]
