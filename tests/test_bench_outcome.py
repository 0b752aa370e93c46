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

    # The result file written afterwards from the saved per-seed results: every goal with its
    # two paired tests, and a note naming where the figures came from.
    monkeypatch.setenv("BENCH_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.syspath_prepend(str(BENCH.parent))  # as when run as a script: `_results`
    assert bench.main(["--from-json", str(out), "--budget", "12", "--prior", "16"]) == 0
    record = json.loads((tmp_path / "results" / "outcome.json").read_text())
    assert record["params"]["seeds"] == 2 and record["params"]["horizon"] == 24
    assert "outcome.json" in record["notes"]
    for goal in record["figures"]["diabetes-svr"]["goals"].values():
        assert 0.0 <= goal["paired_p_slower"] <= 1.0
        assert 0.0 <= goal["paired_p_more_short"] <= 1.0
        low, high = goal["ratio_interval"]
        assert 0 < low <= high


def test_paired_test_of_seeds_short_counts_only_seeds_where_the_arms_differ(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = importlib.util.spec_from_file_location("bench_outcome", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_outcome", bench)
    spec.loader.exec_module(bench)
    test = bench._paired_p_more_short
    # No seed where one arm reached the target and the other did not: no evidence.
    assert test([3, None, 7], [5, None, 2]) == 1.0
    # Five seeds short only under the arm, none only under cold: 0.5 ** 5.
    assert test([None] * 5 + [4] * 20, [6] * 25) == pytest.approx(0.03125, abs=1e-4)
    # As many seeds short one way as the other: far from evidence that the arm leaves more.
    assert test([None, None, 1, 1], [1, 1, None, None]) > 0.5
