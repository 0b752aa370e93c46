"""``budget.steps`` shared by two ``tuner worker`` processes on one PostgreSQL study: they
count each other's steps from the study and stop together where the budget is spent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml

from tuner.coordination import own_steps

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
TRIAL = str(Path(__file__).with_name("_trial.py"))


def test_two_workers_spend_one_steps_budget_between_them(
    tmp_path: Path, pg_storage: str, sqlite_uri: str
) -> None:
    data: dict[str, Any] = {
        "name": "steps",
        "command": [sys.executable, TRIAL, "5", "0.2"],
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "budget": {"steps": 12, "max_failures": 3},
        "trial": {"grace_period": 2},
        "sampler": {"name": "random", "seed": 3},
        "pruner": {"name": "none"},
        "resources": {"kind": "cpu", "parallel": 1},
        "diagnosis": {"early_stop": False},
        "storage": pg_storage,
        "lineage": {"tracking_uri": sqlite_uri},
    }
    config = tmp_path / "campaign.yaml"
    config.write_text(yaml.safe_dump(data))
    env = dict(os.environ)
    env.pop("MLFLOW_TRACKING_URI", None)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tuner.cli", "worker", str(config), "--heartbeat", "1"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    for proc in procs:
        out, _ = proc.communicate(timeout=240)
        assert proc.returncode == 0, out[-3000:]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    everything = optuna.load_study(study_name="steps", storage=pg_storage).get_trials()
    # Trials asked ahead and never started are ended once the budget is spent (superseded,
    # so they never count), not left WAITING.
    trials = [t for t in everything if "tuner:stale" not in t.system_attrs]
    assert {t.state.name for t in trials} <= {"COMPLETE", "PRUNED"}, [
        (t.number, t.state.name, t.user_attrs, t.system_attrs) for t in everything
    ]
    assert all(t.state.name == "FAIL" for t in everything if t not in trials)
    spent = sum(own_steps(t) for t in trials)
    # Each worker reads the other's steps every 0.2 s: together they may pass the budget by
    # the steps reported between two reads, one per running trial at most at 0.2 s a step.
    assert 12 <= spent <= 12 + 2, [(t.number, own_steps(t)) for t in trials]
    stopped = [t for t in trials if "stopped at the budget" in t.user_attrs.get("prune_reason", "")]
    assert stopped, [(t.number, t.state.name, t.user_attrs) for t in trials]
