"""Warm start from lineage, end to end with real subprocess trials and real stores.

Each kind of source: an earlier campaign, runs recorded by lineage's recording API under the
names ``LineageCallback`` uses (``optimizer.lr``), plain MLflow runs, and a run set in
another SQLite store imported into a PostgreSQL campaign. Plus the skip accounting, the
budget, `tuner status`, and bad input (one line, exit 2, nothing created).
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tuner.conftest import mlflow_runs, trials_of
from tuner.campaign import Observer
from tuner.config import CampaignConfig
from tuner.search import (
    ENQUEUED_FROM_ATTR,
    EXPLORING_ATTR,
    IMPORTED_ATTR,
    IMPORTED_FROM_ATTR,
)

#: A trial that reads its parameters from TUNER_PARAMS and reports loss and acc once.
SCRIPT = """
from tuner import trial
p = trial.params()
d = (p["x"] - 0.3) ** 2 + (p.get("lr", 0.01) - 0.01) ** 2
trial.report(0, loss=d, acc=1 - d)
"""

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


class _Lines(Observer):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def message(self, text: str) -> None:
        self.lines.append(text)


def _plain_runs(
    uri: str, experiment: str, rows: list[tuple[dict[str, Any], dict[str, float], str]]
) -> list[str]:
    """Plain MLflow runs (``mlflow.log_param`` style): ``(params, metrics, status)`` each."""
    import time

    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    exp_id = exp.experiment_id if exp else client.create_experiment(experiment)
    ids = []
    now = int(time.time() * 1000)
    for params, metrics, status in rows:
        run = client.create_run(exp_id)
        client.log_batch(
            run.info.run_id,
            metrics=[Metric(k, v, now, 0) for k, v in metrics.items()],
            params=[Param(k, str(v)) for k, v in params.items()],
        )
        client.set_terminated(run.info.run_id, status)
        ids.append(run.info.run_id)
    return ids


def _imported(config: CampaignConfig) -> tuple[list[Any], list[Any]]:
    trials = trials_of(config)
    return (
        [t for t in trials if IMPORTED_ATTR in t.system_attrs],
        [t for t in trials if IMPORTED_ATTR not in t.system_attrs],
    )


def _path(config: CampaignConfig) -> str:
    return str(config.source_path)


# ----- an earlier campaign ------------------------------------------------------------------


def test_from_an_earlier_campaign(
    campaign: Callable[..., CampaignConfig],
    run_campaign: Callable[..., Any],
    cli: Callable[..., tuple[int, str, str]],
    sqlite_uri: str,
) -> None:
    """The prior campaign's COMPLETE trials are imported (marked with their run ids), the best
    one is re-run first and counts against the budget, the imported ones do not; `tuner
    status` shows them apart; a second `tuner run` never imports again."""
    common = {"command": ["python", "trial.py"], "reads_tuner_params": True}
    prior = campaign(SCRIPT, name="prior", budget={"trials": 2, "max_failures": 5}, **common)
    run_campaign(prior)
    prior_runs = {
        r.info.run_id: r
        for r in mlflow_runs(sqlite_uri, "prior")
        if r.data.tags.get("lineage.run_type") == "trial"
    }
    assert len(prior_runs) == 2

    config = campaign(
        SCRIPT,
        name="next",
        budget={"trials": 1, "max_failures": 5},
        warm_start={"from": [{"campaign": "prior"}], "enqueue_best": 1},
        **common,
    )
    seen = _Lines()
    result = run_campaign(config, observer=seen)
    assert result.finished == 1 and result.counts["COMPLETE"] == 1
    assert seen.lines[:2] == [
        "warm start: 2 earlier run(s) imported as finished trials (2 from campaign 'prior'); "
        "the 1 best re-run first as new trials; imported trials do not count against "
        "budget.trials",
        "warm start: 0 runs skipped",
    ]
    imported, own = _imported(config)
    assert len(imported) == 2 and len(own) == 1
    assert {t.system_attrs[IMPORTED_ATTR] for t in imported} == set(prior_runs)
    for t in imported:
        assert t.state.name == "COMPLETE"
        mark = t.user_attrs[IMPORTED_FROM_ATTR]
        assert mark["source"] == "campaign 'prior'" and mark["run_id"] in prior_runs
        assert t.value == prior_runs[mark["run_id"]].data.metrics["loss"]
    best = min(imported, key=lambda t: t.value)
    assert own[0].params == best.params
    assert own[0].user_attrs[ENQUEUED_FROM_ATTR] == best.system_attrs[IMPORTED_ATTR]
    # The campaign's best is one of its own trials.
    assert result.best["number"] in {t.number for t in own}

    rc, out, _ = cli("status", _path(config), "--format", "json")
    status = json.loads(out)
    assert rc == 0 and status["warm_start"] == 2
    assert status["budget"] == {"trials": 1, "finished": 1, "steps": None, "device_hours": None}
    assert status["trials"]["COMPLETE"] == 1
    assert status["best"]["number"] in {t.number for t in own}
    # What compare: auto (the default) measured and chose: in `tuner status` (JSON and
    # text), as `tuner run` ends with it, and on the campaign's MLflow run.
    (decision,) = status["warm_start_decision"]
    assert decision["source"] == "campaign 'prior'" and decision["pairs"] == 1
    rc, out, _ = cli("status", _path(config))
    assert "warm start: 2 earlier run(s) imported as finished trials" in out
    # How many the sampler sees is the decision line's to say, not a second, other count.
    assert "(as each source's line says, not counted against the budget)" in out
    from tuner.search import StudyPlan, transfer_notes

    (note,) = transfer_notes(StudyPlan.of(config))
    assert note.startswith("warm start from campaign 'prior': 1 pair(s) with this campaign's")
    # one trial of its own is too little to tell whether the earlier runs carry over: the
    # line says so, and the sampler saw none of them
    assert "too thin to act on, none of the 2 earlier runs seen by the sampler yet" in note
    assert decision["mode"] == "thin" and decision["weight"] == 0.0
    assert note in out.splitlines()
    (first_parent,) = [
        r for r in mlflow_runs(sqlite_uri, "next") if r.data.tags["lineage.run_type"] == "campaign"
    ]
    assert first_parent.data.tags["tuner.warm_start_decision"] == note

    again = _Lines()
    run_campaign(config, observer=again)  # a second `tuner run`: the budget is reached
    imported2, own2 = _imported(config)
    assert len(imported2) == 2 and len(own2) == 1
    assert not any(line.startswith("warm start") for line in again.lines)
    trial_runs = [
        r for r in mlflow_runs(sqlite_uri, "next") if r.data.tags.get("lineage.run_type") == "trial"
    ]
    assert len(trial_runs) == 1
    (parent,) = [
        r for r in mlflow_runs(sqlite_uri, "next") if r.data.tags["lineage.run_type"] == "campaign"
    ]
    assert parent.data.tags["tuner.warm_start"] == "\n".join(seen.lines[:2])


# ----- LineageCallback runs, renamed params, maximize, skip accounting -----------------------


def _lineage_run(uri: str, params: dict[str, Any], metrics: dict[str, float], status: str) -> None:
    import lineage

    run = lineage.start_run("mnist", params=params, tracking_uri=uri, record_identity=False)
    for key, value in metrics.items():
        run.log_metric(key, value, step=1)
    run.end(status)


def test_an_exploring_trial_is_tagged_on_its_run(
    campaign: Callable[..., CampaignConfig],
    run_campaign: Callable[..., Any],
    sqlite_uri: str,
    tmp_path: Path,
) -> None:
    """Under ``compare: auto`` every fifth trial is proposed without the earlier runs; its
    MLflow run says so (``tuner.exploring``), the other runs do not. Four imported trials
    make the campaign's own trials numbers 4 to 11: the fifth and the tenth explore."""
    common = {"command": ["python", "trial.py"], "reads_tuner_params": True}
    prior = campaign(SCRIPT, name="prior4", budget={"trials": 4, "max_failures": 5}, **common)
    run_campaign(prior)
    config = campaign(
        SCRIPT,
        name="explores",
        budget={"trials": 8, "max_failures": 5},  # the 8 an importance analysis needs
        sampler={"name": "tpe", "seed": 7},  # a sampler that learns from values
        warm_start={"from": [{"campaign": "prior4"}], "enqueue_best": 0},
        **common,
    )
    run_campaign(config, importance=True)
    _, own = _imported(config)
    assert [t.number for t in own] == list(range(4, 12))
    explored = [t.number for t in own if t.user_attrs.get(EXPLORING_ATTR)]
    assert explored == [4, 9]
    runs = {
        int(r.data.tags["tuner.trial_number"]): r.data.tags
        for r in mlflow_runs(sqlite_uri, "explores")
        if r.data.tags.get("lineage.run_type") == "trial"
    }
    assert [n for n, tags in sorted(runs.items()) if tags.get(EXPLORING_ATTR) == "True"] == explored
    # The campaign's report says what the warm start measured and chose, and which trial
    # explored, as the campaign run's tag does.
    from mlflow.tracking import MlflowClient

    all_runs = mlflow_runs(sqlite_uri, "explores")
    (parent,) = [r for r in all_runs if r.data.tags.get("lineage.run_type") == "campaign"]
    (analysis,) = [r for r in all_runs if r.data.tags.get("lineage.run_type") == "analysis"]
    client = MlflowClient(tracking_uri=sqlite_uri)
    local = client.download_artifacts(analysis.info.run_id, "report/report.json", str(tmp_path))
    report = json.loads(Path(local).read_text())
    decision = parent.data.tags["tuner.warm_start_decision"]
    assert decision.startswith("warm start from campaign 'prior4'")
    assert report["search"][: len(decision.splitlines())] == decision.splitlines()
    assert report["exploring"] == explored


def test_from_lineage_runs_with_renamed_params(
    campaign: Callable[..., CampaignConfig],
    run_campaign: Callable[..., Any],
    cli: Callable[..., tuple[int, str, str]],
    sqlite_uri: str,
) -> None:
    """Runs recorded as ``LineageCallback`` records them (``optimizer.lr``, ``accuracy``) enter a
    maximize campaign through ``params:``/``target:``; ``where`` selects; each skipped run is
    counted under its reason, in `tuner validate` and in `tuner run`."""
    good = [(0.2, 0.01), (0.5, 0.02), (0.35, 0.005)]
    for x, lr in good:
        _lineage_run(
            sqlite_uri,
            {"x": x, "optimizer.lr": lr, "optimizer.name": "Momentum", "batch_size": 32},
            {"accuracy": 1 - (x - 0.3) ** 2},
            "FINISHED",
        )
    for params, metrics, status in [
        ({"x": 0.4, "optimizer.lr": 0.5, "batch_size": 32}, {"accuracy": 0.9}, "FINISHED"),
        ({"x": 0.4, "batch_size": 32}, {"accuracy": 0.9}, "FINISHED"),
        ({"x": 0.4, "optimizer.lr": 0.01, "batch_size": 32}, {"loss": 0.1}, "FINISHED"),
        ({"x": 0.4, "optimizer.lr": 0.01, "batch_size": 32}, {"accuracy": 0.99}, "FAILED"),
        ({"x": 0.3, "optimizer.lr": 0.01, "batch_size": 64}, {"accuracy": 1.0}, "FINISHED"),
    ]:
        _lineage_run(sqlite_uri, params, metrics, status)

    config = campaign(
        SCRIPT,
        command=["python", "trial.py"],
        reads_tuner_params=True,
        target={"metric": "acc", "goal": "maximize"},
        parameters={
            "x": {"type": "float", "low": 0.0, "high": 1.0},
            "lr": {"type": "float", "low": 1e-4, "high": 0.1, "log": True},
        },
        sampler={"name": "tpe", "seed": 3},
        budget={"trials": 1, "max_failures": 5},
        warm_start={
            "from": [
                {
                    "experiment": "mnist",
                    "where": "params.batch_size = '32'",
                    "params": {"lr": "optimizer.lr"},
                    "target": "accuracy",
                }
            ],
            "enqueue_best": 1,
        },
    )
    lines = [
        "warm start: 3 earlier run(s) imported as finished trials (3 from experiment 'mnist'); "
        "the 1 best re-run first as new trials; imported trials do not count against "
        "budget.trials",
    ]
    rc, out, err = cli("validate", _path(config))
    assert rc == 0, err
    printed = [line for line in out.splitlines() if line.startswith("warm start")]
    assert printed[0] == lines[0]
    skipped = printed[1]
    assert skipped.startswith("warm start: 4 run(s) skipped: 1 not finished (e.g. run ")
    for part in (
        "; 1 missing a parameter (e.g. run ",
        "no lr (recorded as optimizer.lr)",
        "; 1 outside the space (e.g. run ",
        "lr=0.5 is outside [0.0001, 0.1]",
        "; 1 missing the target (e.g. run ",
        "no acc (recorded as accuracy)",
    ):
        assert part in skipped, skipped
    rc, out, _ = cli("validate", _path(config), "--format", "json")
    summary = json.loads(out)["warm_start"]
    assert summary["imported"] == 3 and summary["skipped"] == {
        "not finished": 1,
        "missing a parameter": 1,
        "outside the space": 1,
        "missing the target": 1,
    }

    seen = _Lines()
    result = run_campaign(config, observer=seen)
    assert seen.lines[:2] == [lines[0], skipped]
    assert result.finished == 1
    imported, own = _imported(config)
    assert sorted(round(t.params["x"], 6) for t in imported) == [0.2, 0.35, 0.5]
    assert {t.params["lr"] for t in imported} == {lr for _, lr in good}
    best = max(imported, key=lambda t: t.value)  # maximize: the highest accuracy
    assert best.params["x"] == pytest.approx(0.35) and own[0].params == best.params
    for t in imported:
        assert set(t.distributions) == {"x", "lr"} and t.distributions["lr"].log


# ----- plain MLflow runs into a multi-objective campaign -------------------------------------


def test_from_plain_mlflow_runs_multi_objective(
    campaign: Callable[..., CampaignConfig],
    run_campaign: Callable[..., Any],
    sqlite_uri: str,
) -> None:
    """``mlflow.log_param`` runs, objectives renamed by a ``target:`` mapping; the Pareto front
    the campaign reports holds its own trials only."""
    rows = [
        ({"x": 0.1}, {"val_loss": 0.04, "val_acc": 0.5}, "FINISHED"),
        ({"x": 0.3}, {"val_loss": 0.01, "val_acc": 0.9}, "FINISHED"),  # dominates the others
        ({"x": 0.9}, {"val_loss": 0.36, "val_acc": 0.2}, "FINISHED"),
        ({"x": 0.8}, {"val_loss": float("nan"), "val_acc": 0.2}, "FINISHED"),
    ]
    ids = _plain_runs(sqlite_uri, "sweep", rows)
    config = campaign(
        SCRIPT,
        command=["python", "trial.py"],
        reads_tuner_params=True,
        objectives=[{"metric": "acc", "goal": "maximize"}],
        sampler={"name": "nsga2", "seed": 1},
        budget={"trials": 1, "max_failures": 5},
        warm_start={
            "from": [{"experiment": "sweep", "target": {"loss": "val_loss", "acc": "val_acc"}}],
            "enqueue_best": 2,  # more than budget.trials: capped at 1
        },
    )
    seen = _Lines()
    result = run_campaign(config, observer=seen)
    assert "1 missing the target" in seen.lines[1] and "nan for loss" in seen.lines[1]
    imported, own = _imported(config)
    assert len(imported) == 3 and len(own) == 1
    assert imported[1].values == [0.01, 0.9]
    assert own[0].params == {"x": 0.3} and own[0].user_attrs[ENQUEUED_FROM_ATTR] == ids[1]
    assert [t["number"] for t in result.best["trials"]] == [own[0].number]


# ----- another SQLite store into a PostgreSQL campaign ---------------------------------------


@pytest.fixture
def optuna_pg() -> Iterator[str]:
    import psycopg

    name = f"lt_ws_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]


@pytest.mark.postgres
def test_from_another_sqlite_store_into_postgresql(
    tmp_path: Path,
    campaign: Callable[..., CampaignConfig],
    run_campaign: Callable[..., Any],
    cli: Callable[..., tuple[int, str, str]],
    sqlite_uri: str,
    postgres_uri: str,
    optuna_pg: str,
) -> None:
    _plain_runs(
        sqlite_uri,
        "laptop",
        [({"x": x}, {"loss": (x - 0.3) ** 2}, "FINISHED") for x in (0.1, 0.25, 0.7)],
    )
    config = campaign(
        SCRIPT,
        command=["python", "trial.py"],
        reads_tuner_params=True,
        lineage={"tracking_uri": postgres_uri},
        storage=optuna_pg,
        budget={"trials": 1, "max_failures": 5},
        warm_start={"from": [{"experiment": "laptop", "tracking_uri": "sqlite:///mlflow.db"}]},
    )
    run_campaign(config)
    imported, own = _imported(config)
    assert len(imported) == 3 and len(own) == 1
    assert {t.user_attrs[IMPORTED_FROM_ATTR]["tracking_uri"] for t in imported} == {sqlite_uri}
    rc, out, _ = cli("status", _path(config), "--format", "json")
    assert rc == 0 and json.loads(out)["warm_start"] == 3
    assert json.loads(out)["budget"]["finished"] == 1


# ----- bad input: one line, exit 2, nothing created -----------------------------------------


def test_bad_sources_are_one_line_and_create_nothing(
    tmp_path: Path,
    campaign: Callable[..., CampaignConfig],
    cli: Callable[..., tuple[int, str, str]],
    sqlite_uri: str,
) -> None:
    _plain_runs(sqlite_uri, "sweep", [({"x": 0.2, "opt.lr": 0.1}, {"loss": 0.5}, "FINISHED")])
    cases = [
        (
            {"experiment": "swep"},
            "warm_start.from[0].experiment names no experiment in sqlite:///",
            "(did you mean 'sweep'?), got 'swep'.",
        ),
        (
            {"campaign": "nobody"},
            "warm_start.from[0].campaign names no campaign in sqlite:///",
            "(known: none), got 'nobody'.",
        ),
        (
            {"experiment": "sweep", "params": {"x": "learning_rate"}},
            "warm_start.from[0].params.x names param 'learning_rate', which no selected run of "
            "experiment 'sweep' recorded",
            "(recorded params: opt.lr, x).",
        ),
        (
            {"experiment": "sweep", "target": "los"},
            "warm_start.from[0].target names metric 'los', which no selected run of "
            "experiment 'sweep' recorded",
            "(did you mean 'loss'?).",
        ),
        (
            {"experiment": "sweep", "tracking_uri": "sqlite:///gone/history.db"},
            "warm_start.from[0].tracking_uri cannot be read from sqlite:///",
            "",
        ),
        (
            {"experiment": "sweep", "tracking_uri": "postgresql://postgres@127.0.0.1:1/mlflow"},
            "warm_start.from[0].tracking_uri cannot be read from postgresql://",
            "",
        ),
    ]
    for i, (source, head, tail) in enumerate(cases):
        config = campaign(SCRIPT, warm_start={"from": [source]})
        # `tuner run` for the three kinds the issue names (unknown experiment, a mapping to a
        # param nobody recorded, an unreachable store); `validate` reads sources the same way.
        for command in ("validate", "run") if i in (0, 2, 5) else ("validate",):
            rc, out, err = cli(command, _path(config))
            assert rc == 2, (source, command, out, err)
            line = err.strip()
            assert "\n" not in line and "Traceback" not in line, err
            assert line.startswith(f"tuner {command}: error: {_path(config)}: {head}"), line
            assert line.endswith(tail), line
    assert not (tmp_path / "gone").exists()
    assert not (tmp_path / "optuna.db").exists()
    from mlflow.tracking import MlflowClient

    assert MlflowClient(tracking_uri=sqlite_uri).get_experiment_by_name("t") is None


# ----- every sampler sees the imported trials ------------------------------------------------


@pytest.mark.parametrize("sampler", ["tpe", "random", "cmaes", "qmc", "nsga2", "grid"])
def test_every_sampler_asks_with_imported_trials(tmp_path: Path, sampler: str) -> None:
    """Imported trials are COMPLETE trials with the space's distributions: each sampler asks
    and is told with them in the study (GP too; left out here for its fitting time)."""
    import optuna

    from tuner.config import parse_config
    from tuner.history import WarmStartPlan, apply
    from tuner.search import SamplerPlan, distributions, make_sampler, sample_params
    from tuner.search._ranked import RankedWarmStart

    config = parse_config(
        {
            "name": "s",
            "command": ["x"],
            "reads_tuner_params": True,
            "target": {"metric": "loss", "goal": "minimize"},
            "parameters": {
                "x": {"type": "float", "low": 0.0, "high": 1.0, "step": 0.25},
                "n": {"type": "int", "low": 1, "high": 3},
            },
            "budget": {"trials": 3},
            "sampler": {"name": sampler, "seed": 1},
            "warm_start": {"from": [{"experiment": "earlier"}], "compare": "rank"},
        },
        base_dir=tmp_path,
    )
    made = make_sampler(SamplerPlan.of(config))
    # Samplers that learn from values read the imported runs by rank (`compare: rank`).
    assert isinstance(made, RankedWarmStart) == (sampler in ("tpe", "cmaes", "nsga2")), made
    trials = [
        optuna.trial.create_trial(
            state=optuna.trial.TrialState.COMPLETE,
            value=(x - 0.3) ** 2,
            params={"x": x, "n": 2},
            distributions=distributions(config.parameters, {"x": x, "n": 2}),
            system_attrs={IMPORTED_ATTR: f"run{i}"},
        )
        for i, x in enumerate([0.0, 0.25, 0.5, 0.75, 1.0, 0.25])
    ]
    study = optuna.create_study(sampler=made)
    assert apply(study, WarmStartPlan(trials, [])) == 6
    assert apply(study, WarmStartPlan(trials, [])) == 0  # never twice
    for _ in range(3):
        trial = study.ask()
        params = sample_params(trial, config.parameters)
        study.tell(trial, (params["x"] - 0.3) ** 2)
    done = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert len(done) == 9 and sum(IMPORTED_ATTR in t.system_attrs for t in done) == 6


# ----- one run -> one trial ------------------------------------------------------------------


def test_values_are_read_as_the_space_declares_them(tmp_path: Path) -> None:
    """Recorded text against ints, steps, categoricals (``True``, ``None``, numbers, a name
    in another case) and a ``when`` condition, without a store."""
    from lineage.store import RunRecord
    from tuner.config import parse_config
    from tuner.history import SourceRuns
    from tuner.history._warm_start import SourceTally, _convert

    config = parse_config(
        {
            "name": "u",
            "command": ["x"],
            "reads_tuner_params": True,
            "target": {"metric": "loss", "goal": "minimize"},
            "parameters": {
                "layers": {"type": "int", "low": 1, "high": 4},
                "drop": {"type": "float", "low": 0.0, "high": 0.5, "step": 0.1},
                "opt": {"type": "categorical", "choices": ["sgd", "adam"]},
                "nesterov": {
                    "type": "categorical",
                    "choices": [True, False],
                    "when": {"opt": "sgd"},
                },
                "width": {"type": "categorical", "choices": [64, 128, None]},
            },
            "budget": {"trials": 1},
            "warm_start": {"from": [{"experiment": "e"}]},
        },
        base_dir=tmp_path,
    )

    def run(i: int, **params: str) -> RunRecord:
        return RunRecord(f"run{i:04d}", "1", "e", "", "FINISHED", 0, 1, params, {"loss": 0.5})

    base = {"layers": "3", "drop": "0.2", "opt": "sgd", "nesterov": "True", "width": "None"}
    runs = [
        run(0, **base),
        run(1, **{**base, "opt": "adam", "nesterov": "garbage", "width": "128.0"}),
        run(2, **{**base, "layers": "2.5"}),
        run(3, **{**base, "drop": "0.25"}),
        run(4, **{**base, "opt": "rmsprop"}),
        run(5, **{k: v for k, v in base.items() if k != "nesterov"}),
        run(7, **{**base, "opt": "SGD"}),  # autolog's spelling: one choice but for case
        run(6, **base),
    ]
    runs[-1].tags["tuner.state"] = "PRUNED"  # a pruned trial of an earlier campaign
    assert config.warm_start is not None
    source = config.warm_start.sources[0]
    tally = SourceTally(source.label, "sqlite:///x.db")
    trials = _convert(config, SourceRuns(0, source, "sqlite:///x.db", runs), tally)
    assert [t.params for t in trials] == [
        {"layers": 3, "drop": 0.2, "opt": "sgd", "nesterov": True, "width": None},
        {"layers": 3, "drop": 0.2, "opt": "adam", "width": 128},
        {"layers": 3, "drop": 0.2, "opt": "sgd", "nesterov": True, "width": None},
    ]
    assert tally.skipped == {"outside the space": 3, "missing a parameter": 1, "pruned": 1}
    assert tally.examples["outside the space"] == "run run0002: layers=2.5 is outside [1, 4]"
    assert math.isclose(trials[0].value or 0.0, 0.5)
