"""``benchmarks/bench_schedulers.py``'s arithmetic on counted epochs, without campaigns (its
``--quick`` run starts several campaigns, minutes on two cores): epochs to the target with
seeds that miss it, resumed processes, the goals, and the docs' table of the result."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench() -> Any:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_schedulers

        yield bench_schedulers
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def _trace(accuracies: list[float], continuations: int = 0) -> dict[str, Any]:
    return {
        "epochs": [[a, 0.01] for a in accuracies],
        "wall_s": 1.0,
        "date": "2026-01-01 00:00 UTC",
        "continuations": continuations,
    }


def test_a_seed_that_misses_the_target_counts_as_infinitely_many_epochs(bench: Any) -> None:
    traces = {
        "tpe-none": [_trace([0.5, 0.9]), _trace([0.9]), _trace([0.5, 0.6])],
        "tpe-median": [_trace([0.5, 0.6]), _trace([0.5, 0.5, 0.9]), _trace([0.1])],
        "tuner-asha": [_trace([0.9]), _trace([0.95]), _trace([0.5, 0.91], continuations=2)],
    }
    summary = bench._summary(traces, target=0.9)
    assert summary["tpe-none"]["median_epochs_to_target"] == 2  # of 2, 1, missed
    assert summary["tpe-median"]["seeds_reaching_target"] == 1
    assert summary["tpe-median"]["median_epochs_to_target"] is None  # the median seed missed
    assert summary["tuner-asha"]["median_epochs_to_target"] == 1
    assert summary["tuner-asha"]["epochs_ratio_to_tpe-none"] == 0.5
    assert summary["tuner-asha"]["median_continuations"] == 0
    goals = bench._goals(summary)
    assert goals["asha_or_pbt_epochs_at_most_half_of_tpe_median"] == {
        "tuner-asha": None,
        "met": False,
    }


def test_an_epoch_that_does_not_follow_its_process_is_a_continuation(bench: Any) -> None:
    rows = [
        {"pid": 1, "epoch": 1},
        {"pid": 1, "epoch": 2},
        {"pid": 2, "epoch": 4},  # a promoted trial resumes after its checkpoint of epoch 3
        {"pid": 1, "epoch": 1},  # a reused process starts another trial
        {"pid": 1, "epoch": 7},  # an exploit restores another member's checkpoint
    ]
    assert bench._continuations(rows) == 2


def test_the_docs_show_one_row_per_arm_and_each_goal(bench: Any) -> None:
    sys.path.insert(0, str(ROOT / "docs" / "_gen"))
    try:
        import results
    finally:
        sys.path.remove(str(ROOT / "docs" / "_gen"))
    traces = {"tpe-none": [_trace([0.9])], "tpe-median": [_trace([0.9])]}
    summary = bench._summary(traces | {"ray-pbt": [_trace([0.1])]}, 0.9)
    figures = {"target_val_accuracy": 0.9, "arms": summary, "goals": bench._goals(summary)}
    lines = results._schedulers_table({"figures": figures})
    rows = [line for line in lines if line.startswith("| `")]
    names = [row.split("|")[1].strip() for row in rows]
    assert names == ["`tpe-none`", "`tpe-median`", "`ray-pbt`"]
    assert "| - |" in rows[2]  # never reached
    assert any(line.startswith("Goal `asha_or_pbt") and "not met" in line for line in lines)


def test_the_hartmann_target_is_reached_by_the_defaults_median_seed_with_even_seeds(
    bench: Any,
) -> None:
    import _schedulers_mfh_summary as summary

    # Four seeds of the default: regrets 1, 2, 3, 4 at epochs 100, 200, 300, 400.
    default = [{"full": [[100 * r, float(r)]], "optimum": 0.0} for r in (1, 2, 3, 4)]
    other = [{"full": [[50, 0.5]], "optimum": 0.0} for _ in range(3)]
    rows = summary.summarize({"t": {"tpe-median": default, "tuner-bohb": other}})["t"]
    # The target is regret 3 (the upper middle): three seeds reach it, at 100, 200 and 300
    # epochs, the fourth never: the median is 250, not infinite.
    assert rows["tpe-median"]["median_epochs_to_default_median"] == 250
    assert rows["tuner-bohb"]["epochs_ratio_to_default"] == round(50 / 250, 3)
    assert rows["tuner-bohb"]["seeds"] == 3


def test_the_quadratic_training_resumed_from_its_checkpoint_goes_on_as_without_it(
    bench: Any,
) -> None:
    import json

    import _schedulers_nqm as nqm
    import numpy as np

    params = {"lr": 0.3, "momentum": 0.5}
    straight = nqm.Training(params)
    straight.train_epoch()
    saved = json.loads(json.dumps(straight.state()))  # as the checkpoint file holds it
    straight.train_epoch()
    resumed = nqm.Training({"lr": 1e-3, "momentum": 0.0})  # the checkpoint's params win
    resumed.load(saved)
    resumed.set_params(params)
    resumed.train_epoch()
    assert resumed.epoch == straight.epoch == 2
    for key in ("xx", "xv", "vv"):
        np.testing.assert_allclose(getattr(resumed, key), getattr(straight, key), rtol=1e-12)
    assert resumed.score() == straight.score() > 0


def test_on_the_quadratic_a_decaying_learning_rate_beats_every_fixed_one(bench: Any) -> None:
    import _schedulers_nqm as nqm
    import numpy as np

    epochs = 30
    fixed = max(nqm.final_score([lr] * epochs) for lr in np.logspace(-3, 0, 25))
    decaying = nqm.final_score([0.16 * 0.8 ** (e // 3) for e in range(epochs)])
    assert decaying > fixed + 0.15  # a loss 1.4 times lower, or more
    assert nqm.final_score([10.0] * 2) == nqm.DIVERGED_SCORE


def test_pbt_against_tpe_over_seeds_is_a_one_sided_test_of_their_bests(bench: Any) -> None:
    traces = {
        "tpe-none": [_trace([b]) for b in (1.30, 1.31, 1.32, 1.33, 1.34)],
        "tuner-pbt": [_trace([b]) for b in (1.40, 1.41, 1.42, 1.43, 1.44)],
    }
    goals = bench._goals(bench._summary(traces, target=1.32))
    assert "asha_or_pbt_epochs_at_most_half_of_tpe_median" not in goals  # no tpe-median
    assert goals["pbt_best_at_least_tpe_none"]["met"]
    test = goals["pbt_bests_not_significantly_below_tpe_none"]
    assert test["met"] and test["p_above"] < 0.05 < test["p_below"]


def test_the_docs_table_names_the_suites_metric(bench: Any) -> None:
    sys.path.insert(0, str(ROOT / "docs" / "_gen"))
    try:
        import results
    finally:
        sys.path.remove(str(ROOT / "docs" / "_gen"))
    summary = bench._summary({"tpe-none": [_trace([1.2])]}, 1.2)
    reference = {"fixed_lr": 0.04, "fixed_score": 1.4, "decay_0.8_every_3_score": 1.6}
    figures = {"target_score": 1.2, "metric": "score", "arms": summary, "reference": reference}
    lines = results._schedulers_table({"figures": figures})
    assert lines[0].startswith("Target: score >= 1.2 ")
    assert "best score in budget (median)" in lines[2]
    assert any("fixed `lr` (0.04) scores 1.4;" in line for line in lines)
