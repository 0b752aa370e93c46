"""``tuner.compat.mindinsight.HyperConfig``: a mindoptimizer script under ``tuner run``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lineage.mindinsight import find_runs, read_run
from lineage.store import open_store
from tuner.compat.mindinsight import HyperConfig, HyperConfigError


@pytest.fixture(autouse=True)
def _fresh_trial_params(monkeypatch: pytest.MonkeyPatch) -> None:
    """``tuner.trial`` keeps the parameters it read first for the life of the process: a test
    run earlier in this worker that read them must not hand its own to these."""
    import tuner.trial

    monkeypatch.setattr(tuner.trial, "_params", None)


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


# Runs the script given as the first argument with MindSpore's ``Model.train`` followed by a
# rename of the summary files it wrote to the current second: what a training shorter than a
# second leaves, whatever the machine's speed.
_TRAINING_WITHIN_ONE_SECOND = """
import os, runpy, sys, time
from pathlib import Path
from mindspore.train import Model

train = Model.train

def train_within_one_second(self, *args, **kwargs):
    result = train(self, *args, **kwargs)
    second = str(int(time.time()))
    for path in Path(os.environ["MINDINSIGHT_SUMMARY_BASE_DIR"]).rglob("*.summary.*"):
        head, mark, tail = path.name.partition(".summary.")
        path.rename(path.with_name(head + mark + second + "." + tail.split(".", 1)[1]))
    return result

Model.train = train_within_one_second
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.slow
@pytest.mark.mindspore
def test_a_training_shorter_than_a_second_keeps_its_lineage(
    tmp_path: Path, repo_root: Path
) -> None:
    """MindSpore names a collector's files after the second they are opened in and opens them
    for writing: the example's evaluation must not open its files in the training's second,
    where they would overwrite the training's lineage (the learning rate, user-defined data)."""
    wrapper = tmp_path / "training_within_one_second.py"
    wrapper.write_text(_TRAINING_WITHIN_ONE_SECOND)
    script = repo_root / "examples" / "mindinsight_lenet" / "train.py"
    env = {
        **os.environ,
        "TUNER_PARAMS": json.dumps({"learning_rate": 0.05, "batch_size": 32, "momentum": 0.9}),
        "MINDINSIGHT_SUMMARY_BASE_DIR": str(tmp_path / "summaries"),
        "TRAIN_SIZE": "64",
        "GLOG_v": "3",
        "OMP_NUM_THREADS": "1",
    }
    env.pop("MLFLOW_RUN_ID", None)
    env.pop("MINDINSIGHT_USER_DEFINED", None)
    done = subprocess.run(
        [sys.executable, str(wrapper), str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]

    (run,) = find_runs(tmp_path / "summaries")
    record = read_run(run)
    assert record.complete, [p.name for p in run.files]
    assert record.params["optimizer.lr"] == pytest.approx(0.05, rel=1e-6)
    assert record.tags["mindinsight.user_defined"] == "momentum"
    assert "val_Accuracy" in record.metric_keys()
