"""The study a report is drawn from: runs read back as trials (states, distributions,
intermediate values, warm-start marks), and pruned and warm-started trials drawn apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from lineage.report import distribution_for, is_warm_started, render_report, study_from_runs
from lineage.store import MetricPoint, RunRecord


def _run(i: int, status: str = "FINISHED", **extra: str) -> RunRecord:
    return RunRecord(
        run_id=f"r{i:03d}", experiment_id="1", experiment="e", name=f"run-{i}", status=status,
        start_time=1000 + i, end_time=2000 + i,
        params={"lr": str(10.0 ** -(1 + i % 4)), "opt": ["sgd", "adam"][i % 2], "w": str(8 * (i + 1))},
        metrics={"loss": 1.0 / (i + 1)}, tags=dict(extra),
    )  # fmt: skip


def test_runs_become_trials_with_their_states_and_curves() -> None:
    runs = [_run(i) for i in range(6)]
    runs.append(_run(6, **{"tuner.state": "PRUNED"}))
    runs.append(_run(7, status="FAILED"))
    runs.append(_run(8, **{"tuner.imported_from": "r999"}))
    curves = {r.run_id: {"loss": [MetricPoint(s, 2.0 - s, 0) for s in range(3)]} for r in runs}
    study = study_from_runs(
        runs, targets=["loss"], goals=["minimize"], params=["lr", "opt", "w"],
        histories=curves.__getitem__, warm_tags=["tuner.imported_from"],
    )  # fmt: skip
    trials = study.get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE"] * 6 + ["PRUNED", "FAIL", "COMPLETE"]
    assert trials[0].intermediate_values == {0: 2.0, 1: 1.0, 2: 0.0}
    assert trials[0].user_attrs["mlflow.run_id"] == "r000"
    assert [is_warm_started(t) for t in trials].count(True) == 1 and is_warm_started(trials[8])
    dist = trials[0].distributions
    assert dist["lr"].log and dist["w"].__class__.__name__ == "IntDistribution"
    assert sorted(dist["opt"].choices) == ["adam", "sgd"]


def test_a_trial_pruned_after_its_first_report_keeps_its_one_point() -> None:
    runs = [_run(i) for i in range(4)] + [_run(4, **{"tuner.state": "PRUNED"})]
    curves = {r.run_id: {"loss": [MetricPoint(s, 2.0 - s, 0) for s in range(3)]} for r in runs}
    curves["r004"] = {"loss": [MetricPoint(1, 1.9, 0)]}
    study = study_from_runs(
        runs, targets=["loss"], goals=["minimize"], params=["lr"], histories=curves.__getitem__
    )
    assert study.get_trials()[4].intermediate_values == {1: 1.9}
    # A target every run logged once, at its end, is no curve.
    once = {r.run_id: {"loss": [MetricPoint(0, 1.0, 0)]} for r in runs}
    study = study_from_runs(
        runs, targets=["loss"], goals=["minimize"], params=["lr"], histories=once.__getitem__
    )
    assert all(not t.intermediate_values for t in study.get_trials())


def test_a_campaign_space_decides_kind_and_scale() -> None:
    space = {"type": "float", "low": 0.001, "high": 0.5, "log": True}
    dist = distribution_for("lr", ["0.01", "0.2"], space)
    assert (dist.low, dist.high, dist.log) == (0.001, 0.5, True)
    ints = distribution_for("bs", ["16", "64"], {"type": "categorical", "choices": [16, 32, 64]})
    assert ints.choices == ("16", "32", "64")


@pytest.mark.slow
def test_pruned_and_warm_started_trials_are_drawn_apart(tmp_path: Path) -> None:
    import optuna

    study = optuna.create_study(
        pruner=optuna.pruners.ThresholdPruner(upper=1.5), sampler=optuna.samplers.RandomSampler(0)
    )
    study.enqueue_trial({"x": 0.1, "k": "a"}, user_attrs={"tuner.imported_from": {"run_id": "r1"}})

    def objective(trial: optuna.Trial) -> float:
        x, k = trial.suggest_float("x", -2, 2), trial.suggest_categorical("k", ["a", "b"])
        for step in range(3):
            trial.report(x * x + (step == 2) * (k == "b"), step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return x * x

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study.optimize(objective, n_trials=14)
    report = render_report(study, tmp_path, target_names=["loss"], best=3)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "warm-started (1, from earlier runs)" in page
    pruned = sum(t.state.name == "PRUNED" for t in study.get_trials())
    assert pruned and "pruned here" in page
    captions = {v["name"]: v["caption"] for v in report.views}
    assert f"{pruned} pruned trial(s)" in captions["intermediate"]
    assert "Diamonds: trials warm-started" in captions["history"]
    assert {p.name for p in report.files} >= {"history.png", "intermediate.png", "report.html"}
