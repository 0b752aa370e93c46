"""The JSON list writer of ``lineage runs``: valid JSON, one run per line, no bare NaN."""

from __future__ import annotations

import json

import pytest

from lineage.cli._cmd_runs import write_json_list


def test_json_list_is_valid_with_non_finite_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    write_json_list(
        [
            {
                "run_id": "a",
                "params": {"lr": "nan"},
                "metrics": {"loss": float("nan")},
                "duration": None,
            },
            {"run_id": "b", "params": {}, "metrics": {"loss": float("-inf"), "acc": 0.5}},
            {"run_id": "c", "metrics.loss": float("inf")},
        ]
    )
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 5  # "[", three runs, "]"
    runs = json.loads(out)  # strict parsers reject NaN; json.loads accepts it, so check text
    assert "NaN" not in out and "Infinity" not in out
    assert runs[0]["metrics"] == {"loss": "nan"} and runs[0]["params"] == {"lr": "nan"}
    assert runs[1]["metrics"] == {"loss": "-inf", "acc": 0.5}
    assert runs[2] == {"run_id": "c", "metrics.loss": "inf"}


def test_empty_list(capsys: pytest.CaptureFixture[str]) -> None:
    write_json_list([])
    assert json.loads(capsys.readouterr().out) == []
