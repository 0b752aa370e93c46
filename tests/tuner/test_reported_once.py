"""Each reported (metric, step) is stored once in a trial's run, whoever records it: the
controller for a script that only reports, the script's own lineage run when it records into
the trial's run too (before or after its report). Real trial processes, a real SQLite store."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

#: Reports ``val_accuracy`` each epoch; ``record`` decides whether a lineage run also logs it
#: into the trial's run, before or after the report.
SCRIPT = """
import sys, time, lineage
from tuner import trial
mode = sys.argv[1]
def epochs():
    for epoch in range(1, 13):
        value = 0.5 + epoch / 100
        if mode == "before":
            lineage.log_metric("val_accuracy", value, step=epoch)
        time.sleep(0.003)  # work between the two: their timestamps differ, as in training
        trial.report(epoch, val_accuracy=value)
        time.sleep(0.003)
        if mode == "after":
            lineage.log_metric("val_accuracy", value, step=epoch)
        lineage.log_metric("val_loss", 1 - value, step=epoch) if mode != "report" else None
if mode == "report":
    epochs()
else:
    with lineage.start_run(experiment="unused"):
        epochs()
"""


def _campaign(tmp_path: Path, python: str, mode: str, sqlite_uri: str) -> Any:
    import yaml

    from tuner.config import load_config

    data = {
        "name": f"once-{mode}",
        "command": [python, "script.py", mode],
        "target": {"metric": "val_accuracy", "goal": "maximize"},
        "parameters": {"lr": {"type": "float", "low": 0.05, "high": 0.1}},
        "budget": {"trials": 2},
        "sampler": {"name": "random", "seed": 3},
        "pruner": {"name": "none"},
        "resources": {"kind": "cpu", "parallel": 1},
        "diagnosis": {"early_stop": False},
        "lineage": {"tracking_uri": sqlite_uri},
    }
    (tmp_path / "script.py").write_text(SCRIPT)
    (tmp_path / "campaign.yaml").write_text(yaml.safe_dump(data))
    return load_config(tmp_path / "campaign.yaml")


@pytest.mark.parametrize("mode", ["report", "before", "after"])
def test_each_reported_step_is_stored_once(
    python: str, tmp_path: Path, sqlite_uri: str, mode: str
) -> None:
    import optuna
    from mlflow.tracking import MlflowClient

    from tuner.campaign import Controller

    config = _campaign(tmp_path, python, mode, sqlite_uri)
    result = Controller(config, importance=False, handle_signals=False).run()
    assert result.counts == {"COMPLETE": 2, "PRUNED": 0, "FAIL": 0}
    study = optuna.load_study(study_name=config.study_name, storage=config.optuna_storage_url())
    client = MlflowClient(tracking_uri=sqlite_uri)
    for t in study.get_trials():
        assert sorted(t.intermediate_values) == list(range(1, 13))
        run_id = t.user_attrs["tuner.launch"]["run_id"]
        history = client.get_metric_history(run_id, "val_accuracy")
        per_step = Counter(m.step for m in history)
        assert per_step == Counter(range(1, 13)), per_step
        assert {m.step: m.value for m in history} == pytest.approx(t.intermediate_values)
