"""The campaign's closing importance line: shares only where the model explains something."""

from __future__ import annotations

from lineage.importance import ImportanceResult, ParamImportance, ParamSpec
from tuner.records._summary import ranking_text


def _result(r2: float, significant: bool) -> ImportanceResult:
    params = [
        ParamImportance(
            name,
            share,
            (0.0, 1.0),
            significant and name == "lr",
            None,
            0.1,
            ParamSpec(name, "numeric"),
        )
        for name, share in (("lr", 0.9), ("momentum", 0.1))
    ]
    return ImportanceResult(
        target="loss",
        goal="minimize",
        n_runs=16,
        params=params,
        evaluator="AutoImportance()",
        model="random forest",
        r2={"random forest": r2},
        analysis_run_id="abc123",
    )


def test_a_model_that_explains_the_runs_gives_the_shares_and_its_r2() -> None:
    line = ranking_text(_result(0.57, significant=True))
    assert line == "lr=0.90*, momentum=0.10 (random forest, held-out R² 0.57, analysis run abc123)"


def test_a_model_worse_than_the_mean_ranks_nothing() -> None:
    line = ranking_text(_result(-0.86, significant=True))
    assert line.startswith("no parameter could be ranked: the random forest predicts held-out")
    assert "R² -0.86" in line and "=0." not in line and "momentum" not in line


def test_no_significant_parameter_ranks_nothing() -> None:
    line = ranking_text(_result(0.2, significant=False))
    assert line.startswith("no parameter could be ranked: none is significant (")
    assert "lr=" not in line
