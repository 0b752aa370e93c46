"""``tuner.compat.mindinsight.HyperConfig``: a mindoptimizer script under ``tuner run``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lineage.store import open_store
from tuner.compat.mindinsight import HyperConfig, HyperConfigError


def test_params_come_from_the_trial(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(
        "TUNER_PARAMS", json.dumps({"learning_rate": 0.01, "batch_size": 32, "momentum": 0.9})
    )
    monkeypatch.setenv("MINDINSIGHT_SUMMARY_BASE_DIR", str(tmp_path / "base"))
    monkeypatch.setenv("TUNER_TRIAL_NUMBER", "3")
    monkeypatch.setenv("TUNER_ATTEMPT", "2")
    monkeypatch.delenv("MINDINSIGHT_USER_DEFINED", raising=False)
    config = HyperConfig()
    params = config.params
    assert params.learning_rate == 0.01 and params["batch_size"] == 32
    assert getattr(params, "epoch", 5) == 5
    with pytest.raises(AttributeError, match="no parameter 'epoch' in this trial"):
        _ = params.epoch
    with pytest.raises(KeyError):
        _ = params["epoch"]
    # MindInsight's rule without `source`: every name it does not record itself.
    assert config.custom_lineage_data == {"momentum": 0.9}
    assert config.summary_dir == str((tmp_path / "base" / "train_trial3_attempt2").resolve())


def test_custom_lineage_data_follows_the_converted_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TUNER_PARAMS", json.dumps({"learning_rate": 0.01, "momentum": 0.9}))
    monkeypatch.setenv("MINDINSIGHT_USER_DEFINED", "learning_rate")
    assert HyperConfig().custom_lineage_data == {"learning_rate": 0.01}


def test_outside_a_campaign_it_says_how_to_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MINDINSIGHT_HYPER_CONFIG", raising=False)
    with pytest.raises(HyperConfigError, match=r"run the script with `tuner run CAMPAIGN\.yaml`"):
        HyperConfig()


def test_under_mindoptimizer_it_reads_mindoptimizers_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(
        "MINDINSIGHT_HYPER_CONFIG",
        json.dumps(
            {
                "params": {"learning_rate": 0.1},
                "summary_dir": str(tmp_path / "train_x"),
                "custom_lineage_data": {"momentum": 0.8},
            }
        ),
    )
    config = HyperConfig()
    assert config.params.learning_rate == 0.1
    assert config.summary_dir == str((tmp_path / "train_x").resolve())
    assert config.custom_lineage_data == {"momentum": 0.8}
    monkeypatch.setenv("MINDINSIGHT_HYPER_CONFIG", "{not json")
    with pytest.raises(HyperConfigError, match="must hold a JSON object"):
        HyperConfig()


@pytest.mark.slow
@pytest.mark.mindspore
def test_a_hyperconfig_script_runs_under_tuner_run(
    tmp_path: Path, repo_root: Path, sqlite_uri: str
) -> None:
    """The guide's form of config, converted; the LeNet script changed by one import; the
    target reaches the tuner from the summary the script wrote."""
    script = repo_root / "examples" / "mindinsight_lenet" / "train.py"
    assert "from tuner.compat.mindinsight import HyperConfig" in script.read_text()
    mind = tmp_path / "config.yaml"
    mind.write_text(
        yaml.safe_dump(
            {
                "command": f"{sys.executable} {script}",
                "summary_base_dir": "./summaries",
                "tuner": {"name": "gp", "args": {"method": "ucb"}},
                "target": {"group": "metric", "name": "Accuracy", "goal": "maximize"},
                "parameters": {
                    "learning_rate": {"bounds": [0.01, 0.2], "type": "float"},
                    "batch_size": {"choice": [32, 64], "type": "int"},
                    "momentum": {"source": "user_defined", "choice": [0.8, 0.9], "type": "float"},
                },
            }
        )
    )
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": sqlite_uri,
        "TRAIN_SIZE": "256",
        "GLOG_v": "3",
        "OMP_NUM_THREADS": "1",
    }
    tuner = [sys.executable, "-m", "tuner.cli"]
    conv = subprocess.run(
        [*tuner, "convert", "mindinsight", str(mind), "-o", "campaign.yaml", "--trials", "1"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert conv.returncode == 0, conv.stderr
    ran = subprocess.run(
        [*tuner, "run", "campaign.yaml"], capture_output=True, text=True, env=env, timeout=600
    )
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-3000:]

    with open_store(sqlite_uri) as store:
        (experiment,) = store.resolve_experiments(["summaries"])
        trials = [
            r
            for r in store.runs([experiment.experiment_id])
            if r.tags.get("lineage.run_type") == "trial"
        ]
    assert len(trials) == 1
    summary_dirs = sorted(p.name for p in (tmp_path / "summaries").iterdir())
    for run in trials:
        assert run.tags["tuner.state"] == "COMPLETE"
        assert 0.0 <= run.metrics["val_Accuracy"] <= 1.0
        # What the tuner proposed is what the script trained with (SummaryCollector's lineage).
        assert float(run.params["optimizer.lr"]) == pytest.approx(
            float(run.params["learning_rate"]), rel=1e-6
        )
        assert run.params["batch_size"] in ("32", "64")
        assert run.tags["mindinsight.user_defined"] == "momentum"
        assert run.tags["mindinsight.train_id"].removeprefix("./") in summary_dirs
        assert "loss" in run.metrics and "train_loss" in run.metrics
    # The trials' summaries are already in the experiment: importing the directory adds nothing.
    imp = subprocess.run(
        [
            sys.executable,
            "-m",
            "lineage.cli",
            "import",
            "mindinsight",
            "summaries",
            "-e",
            "summaries",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert imp.returncode == 0, imp.stderr
    assert [r["status"] for r in json.loads(imp.stdout)] == ["unchanged"]
