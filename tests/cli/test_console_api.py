"""``lineage.console``: the command-line kit ``lineage`` and ``tuner`` share (public API)."""

from __future__ import annotations

import argparse
import json

import pytest

from lineage import LineageError, NotFoundError, StoreError, UsageError
from lineage.console import (
    FORMATS,
    Parser,
    add_common,
    format_cell,
    one_line,
    print_csv,
    print_json,
    print_table,
    run_handler,
)


def _args(handler: object) -> argparse.Namespace:
    return argparse.Namespace(command="demo", handler=handler)


@pytest.mark.parametrize(
    ("error", "code"),
    [(UsageError("bad --x, got 3"), 2), (NotFoundError("no run 'ab'"), 2), (StoreError("down"), 1)],
)
def test_run_handler_turns_errors_into_one_line_and_a_code(
    error: LineageError, code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    def handler(args: argparse.Namespace) -> int:
        raise error

    assert run_handler("tool", _args(handler), (LineageError,)) == code
    err = capsys.readouterr().err
    assert err == f"tool demo: error: {error}\n"


def test_run_handler_unexpected_error_is_masked_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LINEAGE_DEBUG", raising=False)

    def handler(args: argparse.Namespace) -> int:
        raise RuntimeError("could not reach\npostgresql://u:hunter2@h/db")

    assert run_handler("tool", _args(handler), (LineageError,)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "hunter2" not in err
    assert err == "tool demo: error: RuntimeError: could not reach postgresql://u:****@h/db\n"
    assert run_handler("tool", _args(lambda a: 0), (LineageError,)) == 0

    def interrupted(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    assert run_handler("tool", _args(interrupted), (LineageError,)) == 130
    assert one_line(ValueError("")) == "ValueError: ValueError"


def test_parser_common_options_and_printers(capsys: pytest.CaptureFixture[str]) -> None:
    parser = Parser(prog="tool")
    add_common(parser)
    args = parser.parse_args(["--format", "csv", "--tracking-uri", "sqlite:///x.db"])
    assert (args.format, args.tracking_uri) == ("csv", "sqlite:///x.db")
    assert FORMATS == ("table", "json", "csv")
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["--format", "xml"])
    assert info.value.code == 2
    capsys.readouterr()
    print_json({"a": float("nan"), "b": [1, 2]})
    assert json.loads(capsys.readouterr().out) == {"a": "nan", "b": [1, 2]}
    print_csv(["k", "v"], [["lr", 0.1], ["x", None]])
    assert capsys.readouterr().out == "k,v\nlr,0.1\nx,\n"
    print_table(["k", "v"], [["lr", 0.123456789]], title="1 row")
    out = capsys.readouterr().out
    assert "lr" in out and "0.123457" in out and "\x1b" not in out
    assert format_cell(None) == "" and format_cell(1e-7) == "1e-07"
