"""One story in every report: ``lineage report -e EXPERIMENT`` draws what the campaign's own
report drew, from the same real campaign (subprocess trials, MLflow on SQLite, a median
pruner stopping trials after their first report)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from mlflow.tracking import MlflowClient

pytestmark = pytest.mark.slow

#: Good trials (x <= 0.5) report three steps; bad ones report step 1, then wait to be pruned
#: (the controller stops them long before the minute is up, at any load).
SCRIPT = """
import argparse, time
from tuner import trial
ap = argparse.ArgumentParser()
ap.add_argument("--x", type=float); ap.add_argument("--opt")
a = ap.parse_args()
for step in (1, 2, 3):
    trial.report(step, loss=a.x + {"sgd": 0.01, "adam": 0.0}[a.opt] + 1.0 / step)
    if a.x > 0.5:
        time.sleep(60)
"""

#: Eight good trials (enough for the closing importance analysis, which the campaign's report
#: goes with), each better at step 1 than every earlier one; then two bad ones.
GOOD = [{"x": 0.45 - 0.05 * i, "opt": ["sgd", "adam"][i % 2]} for i in range(8)]
BAD = [{"x": 0.9, "opt": "sgd"}, {"x": 0.8, "opt": "adam"}]


def test_the_standalone_report_tells_the_campaigns_story(
    tmp_path: Path, _sqlite_template: Path
) -> None:
    import optuna

    from lineage.cli import main
    from tuner.campaign import Controller
    from tuner.config import load_config
    from tuner.search import open_storage

    shutil.copyfile(_sqlite_template, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    (tmp_path / "trial.py").write_text(SCRIPT)
    config = {
        "name": "story",
        "command": [sys.executable, "trial.py", "--x", "{x}", "--opt", "{opt}"],
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {
            "x": {"type": "float", "low": 0.0, "high": 1.0},
            "opt": {"type": "categorical", "choices": ["sgd", "adam"]},
        },
        "budget": {"trials": len(GOOD) + len(BAD)},
        "sampler": {"name": "random", "seed": 1},
        "pruner": {"name": "median", "options": {"n_startup_trials": 2, "n_warmup_steps": 0}},
        "resources": {"kind": "cpu", "parallel": 1},
        "diagnosis": {"early_stop": False},
        "lineage": {"tracking_uri": uri},
    }
    (tmp_path / "campaign.yaml").write_text(yaml.safe_dump(config))
    loaded = load_config(tmp_path / "campaign.yaml")
    study = optuna.create_study(
        storage=open_storage(loaded.optuna_storage_url(), exclusive=False),
        study_name=loaded.study_name,
        direction="minimize",
    )
    for params in GOOD + BAD:  # the good ones first: the pruner compares with them
        study.enqueue_trial(params)
    result = Controller(loaded, handle_signals=False).run()
    assert result.counts == {"COMPLETE": 8, "PRUNED": 2, "FAIL": 0}, result.counts

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("story")
    (analysis,) = client.search_runs(
        [exp.experiment_id], "tags.`lineage.analysis.kind` = 'importance'"
    )
    own = Path(client.download_artifacts(analysis.info.run_id, "report/report.json", str(tmp_path)))
    campaign_report = json.loads(own.read_text())

    out = tmp_path / "standalone"
    args = ["report", "-e", "story", "--tracking-uri", uri, "-o", str(out), "--format", "json"]
    assert main(args) == 0
    standalone = json.loads((out / "report.json").read_text())

    assert standalone["trials"] == campaign_report["trials"] == {"COMPLETE": 8, "PRUNED": 2}
    ours = {v["name"]: v for v in standalone["views"]}
    theirs = {v["name"]: v for v in campaign_report["views"]}
    assert set(ours) == set(theirs), (sorted(ours), sorted(theirs))
    for name in ours:  # the same trials and parameters in every view, the same words
        assert ours[name]["title"] == theirs[name]["title"], name
        assert ours[name]["caption"] == theirs[name]["caption"], name
    # The pruned trials, stopped after one report each, are drawn.
    assert "each of 10 trials" in ours["intermediate"]["caption"]
    assert "2 pruned" in ours["intermediate"]["caption"]
    assert "the 5 best in red" in ours["parallel"]["caption"]  # --best's default
