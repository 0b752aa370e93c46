"""``benchmarks/bench_outcome.py --quick`` runs end to end: one task, two seeds, every method
through the tuner's own warm start and ``tuner init`` derivation (real MLflow SQLite store)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_outcome.py"


@pytest.mark.slow
def test_bench_outcome_quick(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = importlib.util.spec_from_file_location("bench_outcome", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_outcome", bench)  # its dataclasses look it up
    spec.loader.exec_module(bench)
    out = tmp_path / "outcome.json"
    assert bench.main(["--quick", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    (task,) = json.loads(out.read_text())
    assert task["task"] == "diabetes-svr" and task["seeds"] == 2
    assert set(task["methods"]) == set(bench.METHODS)
    for method in task["methods"].values():
        assert len(method["trials_to_target"]) == 2
        # Every arm runs twice the quick budget of 12, so a hit can come as late as trial 24.
        assert all(n is None or 1 <= n <= 24 for n in method["trials_to_target"])
    assert task["methods"]["tpe-cold"]["ratio_to_cold"] == 1.0
    # tuner init tuned a subset of the task's space (or all of it when nothing was significant)
    for tuned in task["tuned"]:
        assert tuned and set(tuned) <= {"C", "gamma", "epsilon", "shrinking"}
    assert "median trials" in printed and "tuner-init" in printed
