"""Many runs: each model grows on a capped subsample, and only as many models are fitted as it
takes to score a few thousand held-out runs (the 10,000-run speed of ``lineage importance``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from importance_cases import make_runs

from lineage.importance import RandomForestImportance, get_param_importances


def test_capped_fits_are_few_held_out_and_cover_thousands_of_runs() -> None:
    ev = RandomForestImportance(max_fit_samples=800)
    splits = ev._splits(10_000, np.random.default_rng(0))
    assert len(splits) == 4  # not n_rounds * n_folds = 10
    scored: set[int] = set()
    for train, held in splits:
        assert len(train) == 800 and len(held) == 1000
        assert not set(train.tolist()) & set(held.tolist())
        scored |= set(held.tolist())
    assert len(scored) > 3000


def test_just_over_the_cap_still_scores_most_runs() -> None:
    ev = RandomForestImportance(max_fit_samples=800)
    splits = ev._splits(1_100, np.random.default_rng(0))
    assert 4 <= len(splits) <= 10
    scored = set().union(*(set(h.tolist()) for _, h in splits))
    assert len(scored) > 0.6 * 1_100


def test_below_the_cap_every_run_is_held_out_once_per_round() -> None:
    ev = RandomForestImportance(max_fit_samples=800, n_rounds=2, n_folds=5)
    splits = ev._splits(300, np.random.default_rng(0))
    assert len(splits) == 10
    counts = np.zeros(300, dtype=int)
    for _, held in splits:
        counts[held] += 1
    assert (counts == 2).all()


def _truth(p: dict[str, Any], rng: np.random.Generator) -> float:
    return 4 * p["a"] + 2 * p["b"] ** 2 + 0.3 * float(rng.normal())


def test_capped_analysis_ranks_a_known_truth_and_flags_only_the_effects() -> None:
    space = {name: ("float", 0.0, 1.0) for name in ("a", "b", "c", "d")}
    runs = make_runs(space, _truth, 2_500, 0)
    result = get_param_importances(
        runs,
        target="y",
        goal="minimize",
        evaluator=RandomForestImportance(n_estimators=8, max_fit_samples=400),
    )
    assert [p.name for p in result.params[:2]] == ["a", "b"]
    assert {p.name for p in result.params if p.significant} == {"a", "b"}
