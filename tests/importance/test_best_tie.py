"""One best for every reader: among runs with equal target values the earliest wins, the
tuner's rule (``tuner status`` names the lowest trial number of equals)."""

from __future__ import annotations

from lineage.importance import get_param_importances
from lineage.query import best_position
from lineage.store import RunRecord


def _run(i: int, lr: float, acc: float) -> RunRecord:
    return RunRecord(
        f"run{i:02d}", "1", "e", f"t{i}", "FINISHED", 1_000 * (i + 1), 1_000 * (i + 2),
        params={"lr": repr(lr), "width": str(8 * (i % 3 + 1))}, metrics={"acc": acc},
    )  # fmt: skip


def test_the_earliest_of_equal_values_is_the_best() -> None:
    assert best_position([0.5, 0.9, 0.9], "maximize") == 1
    assert best_position([0.5, 0.9, 0.9], "max", starts=[1, 30, 20]) == 2
    assert best_position([0.2, 0.1, 0.1], "minimize", starts=[None, 5, None]) == 1
    assert best_position([0.2, 0.1, 0.1], "min") == 1


def test_the_importance_table_names_the_earliest_best_run() -> None:
    # Trials 3 and 7 tie for best; the store lists runs newest first, so 7 comes first.
    accs = [0.3, 0.4, 0.5, 0.9, 0.6, 0.7, 0.2, 0.9, 0.35, 0.45]
    runs = [_run(i, 0.01 * (i + 1), a) for i, a in enumerate(accs)][::-1]
    result = get_param_importances(runs, target="acc", goal="maximize")
    assert result.run_ids[result.best_index] == "run03"
    lr = next(p for p in result.params if p.name == "lr")
    assert abs(float(lr.best) - 0.04) < 1e-9, lr.best
