"""`tuner status` text: parameters read as ``name=value`` and fit the terminal; a pipe gets one
line per record (for grep), the JSON output keeps the values whole."""

from __future__ import annotations

import io
from typing import Any

import pytest

from tuner.cli._cmd_status import _print_running, _print_summary

PARAMS = {
    "learning_rate": 0.007751234567,
    "momentum": 0.912345678,
    "weight_decay": 0.000123456789,
    "batch_size": 64,
    "optimizer": "momentum",
    "hidden_units": 256,
    "dropout": 0.123456789,
}


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _status() -> dict[str, Any]:
    return {
        "campaign": "c",
        "controller": {"alive": True, "pid": 4242},
        "budget": {"trials": 10, "finished": 3},
        "trials": {"COMPLETE": 3, "RUNNING": 1},
        "warm_start": 0,
        "focus": [],
        "best": {"number": 2, "value": 0.25, "params": dict(PARAMS)},
    }


def _running() -> list[dict[str, Any]]:
    return [
        {
            "number": 3,
            "attempt": 1,
            "device": "gpu:0",
            "launched": True,
            "elapsed_s": 12,
            "params": dict(PARAMS),
        }
    ]


@pytest.mark.parametrize("columns", [80, 120])
def test_on_a_terminal_every_line_fits_its_width(
    monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    out = _Terminal()
    _print_summary(out, _status(), [])
    _print_running(out, _running())
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= columns, text
    assert "learning_rate=0.007751" in text and "batch_size=64" in text
    assert "dropout=0.1235" in text  # 4 significant digits on the terminal


def test_a_pipe_gets_one_line_per_record(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    out = io.StringIO()
    _print_summary(out, _status(), [])
    _print_running(out, _running())
    lines = out.getvalue().splitlines()
    best = [line for line in lines if line.startswith("best: trial 2")]
    assert len(best) == 1 and best[0].endswith("hidden_units=256 dropout=0.1235")
    row = [line for line in lines if line.startswith("3 ")]
    assert len(row) == 1 and "optimizer=momentum" in row[0]
