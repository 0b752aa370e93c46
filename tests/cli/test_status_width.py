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


@pytest.mark.parametrize("columns", [60, 80, 120])
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


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_the_live_view_keeps_one_line_per_trial(columns: int) -> None:
    """`tuner run`'s live view: the bar and the running trials' table fit the terminal, each
    trial on one line, a cell too long cut with an ellipsis rather than folded."""
    from types import SimpleNamespace

    from rich.console import Console, Group

    from tuner.campaign._progress import progress_bar, running_table

    metric = "validation_accuracy_top1_over_the_held_out_split"
    trials = {
        n: SimpleNamespace(
            number=n,
            attempt=1,
            device=f"cuda:{n} (NVIDIA H100 80GB HBM3, host gpu-node-{n}.example.org)",
            latest={metric: 0.912345678},
            handle=SimpleNamespace(started_at=1000.0),
        )
        for n in range(3)
    }
    view: Any = SimpleNamespace(config=SimpleNamespace(target=SimpleNamespace(metric=metric)),
                                running=trials)  # fmt: skip
    out = io.StringIO()
    console = Console(file=out, width=columns, force_terminal=False)
    bar = progress_bar(console)
    bar.add_task("a-campaign-with-a-rather-long-name", total=16, detail="✓3 ✂1 ✗0  best #2 = 0.9")
    console.print(Group(bar, running_table(view, 1012.5, columns)))
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= columns, out.getvalue()
    rows = [line for line in lines if line.split()[:1] in (["0"], ["1"], ["2"])]
    assert len(rows) == 3 and all("12.5s" in row for row in rows), out.getvalue()
    assert len(lines) == 5, out.getvalue()  # the bar, the header, three trials
