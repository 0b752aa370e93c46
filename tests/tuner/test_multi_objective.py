"""Multi-objective campaigns end to end: real trial processes through `tuner run`
and `tuner resume`, a real MLflow SQLite store, Optuna on SQLite.

Before the fix every such campaign ended with ``KeyError: 'number'`` (exit 1) after its last
trial, leaving the campaign run, the last trial run and the reserved runs RUNNING.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.tuner.conftest import mlflow_runs, trials_of, tuner_cli

pytestmark = pytest.mark.slow

#: Two conflicting objectives over two parameters: loss wants x near 0.3 and y small, cost
#: wants x small.
SCRIPT = """
import argparse
from tuner import trial
ap = argparse.ArgumentParser()
ap.add_argument("--x", type=float); ap.add_argument("--y", type=float)
a = ap.parse_args()
trial.report(0, loss=(a.x - 0.3) ** 2 + a.y, cost=a.x + 0.1 * a.y)
"""


def _config(campaign: Any, sampler: dict[str, Any], trials: int) -> Any:
    return campaign(
        SCRIPT,
        command=["python", "trial.py", "--x", "{x}", "--y", "{y}"],
        parameters={
            "x": {"type": "float", "low": 0.0, "high": 1.0},
            "y": {"type": "float", "low": 0.0, "high": 1.0},
        },
        objectives=[{"metric": "cost", "goal": "minimize"}],
        sampler=sampler,
        pruner={"name": "none"},
        budget={"trials": trials},
        resources={"kind": "cpu", "parallel": 2},
    )


def _pareto_numbers(config: Any) -> list[int]:
    import optuna

    study = optuna.load_study(study_name=config.study_name, storage=config.optuna_storage_url())
    return sorted(t.number for t in study.best_trials)


def _nothing_running(uri: str, experiment: str = "t") -> None:
    runs = mlflow_runs(uri, experiment)
    left = [
        (r.info.run_name, r.data.tags.get("lineage.run_type"), r.info.lifecycle_stage)
        for r in runs
        if r.info.status == "RUNNING"
    ]
    assert not left, left
    assert not [
        r
        for r in runs
        if r.data.tags.get("lineage.run_type") == "reserved" and r.info.lifecycle_stage == "active"
    ]


def _parent(uri: str) -> Any:
    (parent,) = [r for r in mlflow_runs(uri) if r.data.tags.get("lineage.run_type") == "campaign"]
    return parent


@pytest.mark.parametrize(
    ("sampler", "trials"),
    [
        # 8 trials: enough for the importance analysis of each objective.
        ({"name": "nsga2", "seed": 1, "options": {"population_size": 4}}, 8),
        # Multi-objective TPE; 6 trials: the report says, per objective, why it is not ranked.
        ({"name": "tpe", "seed": 2, "options": {"n_startup_trials": 3}}, 6),
    ],
    ids=["nsga2", "mo-tpe"],
)
def test_multi_objective_campaign_ends_cleanly(
    campaign: Any, tmp_path: Path, sqlite_uri: str, sampler: dict[str, Any], trials: int
) -> None:
    config = _config(campaign, sampler, trials)
    proc = tuner_cli("run", str(tmp_path / "campaign.yaml"), cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "KeyError" not in proc.stderr

    states = [t.state.name for t in trials_of(config)]
    assert states.count("COMPLETE") == trials
    front = _pareto_numbers(config)
    assert front

    # The summary line names the Pareto front, each trial with both objective values.
    summary = next(
        line
        for line in proc.stdout.splitlines()
        if line.startswith("campaign 't':") and "COMPLETE" in line
    )
    assert f"{trials}/{trials} trials" in summary
    assert f"Pareto front of {len(front)} trial(s)" in summary
    for number in front[:5]:
        assert f"#{number} (loss=" in summary
    assert "cost=" in summary

    # The closing importance report: one line per objective.
    lines = proc.stdout.splitlines()
    loss_line = next(line for line in lines if line.startswith("importance (loss, minimize):"))
    cost_line = next(line for line in lines if line.startswith("importance (cost, minimize):"))
    runs = mlflow_runs(sqlite_uri)
    analyses = {
        r.info.run_name: r for r in runs if r.data.tags.get("lineage.run_type") == "analysis"
    }
    if trials >= 8:
        assert "analysis run" in loss_line and "analysis run" in cost_line
        assert set(analyses) == {"importance-loss", "importance-cost"}
        # x dominates cost (slope 1 against 0.1 for y).
        assert cost_line.split(": ", 1)[1].startswith("x=")
    else:
        assert "at least 8 are needed" in loss_line and "at least 8 are needed" in cost_line
        assert not analyses

    parent = _parent(sqlite_uri)
    tags = parent.data.tags
    assert parent.info.status == "FINISHED"
    assert tags["tuner.pareto.size"] == str(len(front))
    assert [int(n) for n in tags["tuner.pareto.numbers"].split(",")] == front
    recorded = json.loads(tags["tuner.pareto.front"])
    assert sorted(t["number"] for t in recorded) == front
    assert all(set(t["values"]) == {"loss", "cost"} for t in recorded)
    assert "tuner.best.number" not in tags
    assert parent.data.params["objectives"] == "loss:minimize,cost:minimize"
    _nothing_running(sqlite_uri)


def test_multi_objective_resume_ends_cleanly(
    campaign: Any, tmp_path: Path, sqlite_uri: str
) -> None:
    """`tuner resume` of a multi-objective campaign, after a budget raise: exit 0, nothing
    RUNNING (it crashed the same way as `tuner run`)."""
    import yaml

    config = _config(campaign, {"name": "nsga2", "seed": 3}, 3)
    path = tmp_path / "campaign.yaml"
    first = tuner_cli("run", str(path), "--quiet", cwd=tmp_path, timeout=300)
    assert first.returncode == 0, first.stderr
    data = yaml.safe_load(path.read_text())
    data["budget"]["trials"] = 5
    path.write_text(yaml.safe_dump(data))
    proc = tuner_cli("resume", str(path), cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "5/5 trials" in proc.stdout and "Pareto front of" in proc.stdout
    assert [t.state.name for t in trials_of(config)].count("COMPLETE") == 5
    assert _parent(sqlite_uri).data.tags["tuner.pareto.size"] == str(len(_pareto_numbers(config)))
    _nothing_running(sqlite_uri)
