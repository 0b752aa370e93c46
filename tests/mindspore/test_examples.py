"""The example scripts as real processes, and the quickstart campaign end to end."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.mindspore, pytest.mark.slow]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    env.update(GLOG_v="3", OMP_NUM_THREADS="1", **extra)
    return env


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 240) -> str:
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    return out.stdout + out.stderr


def test_digits_example_takes_tuner_params_reports_and_honours_prune(
    python: str, repo_root: Path, tmp_path: Path, sqlite_uri: str, read_run: Any
) -> None:
    from lineage.store import open_store

    channel, control = tmp_path / "channel.jsonl", tmp_path / "control"
    control.touch()  # the controller has already asked this trial to stop
    params = {"lr": 0.2, "optimizer": "sgd", "momentum": 0.5, "hidden": 16, "batch_size": 64}
    env = _env(
        MLFLOW_TRACKING_URI=sqlite_uri,
        TUNER_PARAMS=json.dumps({**params, "epochs": 3, "unrelated": 1}),
        TUNER_CHANNEL=str(channel),
        TUNER_CONTROL=str(control),
    )
    script = str(repo_root / "examples/mindspore_digits/train.py")
    cmd = [python, script, "--lr", "0.03", "--train-size", "200", "--experiment", "digits-t"]
    stdout = _run(cmd, tmp_path, env)

    assert "pruned by the tuner after epoch 1" in stdout
    lines = [json.loads(line) for line in channel.read_text().splitlines()]
    assert [(r["step"], sorted(r["m"])) for r in lines] == [(1, ["val_accuracy"])]
    store = open_store(sqlite_uri)
    (run,) = store.runs([e.experiment_id for e in store.resolve_experiments(["digits-t"])])
    view = read_run(sqlite_uri, run.run_id)
    v = view.values
    # explicit flags beat TUNER_PARAMS, which beats the defaults; momentum is conditional
    assert (v["lr"], v["optimizer"], v["hidden"], v["batch_size"]) == (0.03, "sgd", 16, 64)
    assert "momentum" not in v and "unrelated" not in v
    # what the callback saw agrees with what the script was told
    assert (v["optimizer.name"], v["optimizer.lr"], v["optimizer.momentum"]) == ("SGD", 0.03, 0.0)
    assert (v["train_size"], v["val_size"], v["steps_per_epoch"], v["epochs"]) == (200, 360, 4, 3)
    assert v["trainable_params"] == 64 * 16 + 16 + 16 * 10 + 10
    assert [s for s, _ in view.series("val_accuracy")] == [1]  # stopped after epoch 1
    assert view.series("val_accuracy")[0][1] == pytest.approx(lines[0]["m"]["val_accuracy"])
    assert [s for s, _ in view.series("loss")] == [1, 2, 3, 4]


def test_stdout_example_prints_what_its_campaign_parses(
    python: str, repo_root: Path, tmp_path: Path
) -> None:
    from tuner.config import load_config

    config = load_config(repo_root / "configs/stdout-example.yaml")
    script = str(repo_root / "examples/stdout_only/train.py")
    stdout = _run([python, script, "--epochs", "2", "--hidden", "16"], tmp_path, _env())
    patterns = {name: re.compile(m.pattern) for name, m in config.metrics.items()}
    found = {
        name: [m for line in stdout.splitlines() for m in rx.finditer(line)]
        for name, rx in patterns.items()
    }
    assert [int(m.group("step")) for m in found["val_accuracy"]] == [1, 2]
    assert len(found["loss"]) == 2  # LossMonitor, once per epoch
    final = re.search(r"^val_accuracy: ([0-9.]+)$", stdout, re.M)
    assert final is not None
    assert float(final.group(1)) == float(found["val_accuracy"][-1].group("value"))
    assert "lineage" not in (repo_root / "examples/stdout_only/train.py").read_text()


def test_plain_mlflow_example_logs_into_the_trial_run(
    python: str, repo_root: Path, tmp_path: Path, sqlite_uri: str
) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(sqlite_uri)
    exp = client.create_experiment("plain")
    trial_run = client.create_run(exp).info.run_id
    env = _env(MLFLOW_TRACKING_URI=sqlite_uri, MLFLOW_RUN_ID=trial_run)
    script = str(repo_root / "examples/plain_mlflow/train.py")
    _run([python, script, "--epochs", "3", "--lr", "0.005"], tmp_path, env)

    runs = client.search_runs([exp])
    assert [r.info.run_id for r in runs] == [trial_run]  # no run of its own
    data = runs[0].data
    assert data.params["lr"] == "0.005" and data.params["epochs"] == "3"
    history = client.get_metric_history(trial_run, "val_accuracy")
    assert [p.step for p in history] == [1, 2, 3]
    assert 0.0 < history[-1].value <= 1.0


def test_quickstart_campaign_end_to_end(quickstart_run: tuple[Path, str], read_run: Any) -> None:
    # The quickstart as its command runs it (the shared run of test_getting_started.py).
    from lineage.store import open_store

    clone, stdout = quickstart_run
    sqlite_uri = f"sqlite:///{clone / 'mlflow.db'}"
    done = re.search(r"^campaign 'quickstart': (\d+)/16 trials", stdout, re.M)
    assert done, stdout
    assert "importance: " in stdout

    store = open_store(sqlite_uri)
    ids = [e.experiment_id for e in store.resolve_experiments(["quickstart"])]
    trials = [r for r in store.runs(ids) if r.tags.get("lineage.run_type") == "trial"]
    assert len(trials) == int(done.group(1))
    names = {"sgd": "SGD", "momentum": "Momentum", "adam": "Adam"}
    for record in trials:
        view = read_run(sqlite_uri, record.run_id)
        v = view.values
        assert record.tags["tuner.state"] in ("COMPLETE", "PRUNED")
        # the controller logs the trial's params first (as plain MLflow strings)
        lr, epochs, opt = float(v["lr"]), int(v["epochs"]), str(v["optimizer"])
        assert v["optimizer.name"] == names[opt]
        assert v["optimizer.lr"] == pytest.approx(lr)
        assert int(v["hidden"]) in (16, 32, 64, 128) and epochs in range(2, 6)
        assert int(v["batch_size"]) % 16 == 0
        if opt == "momentum":
            assert v["optimizer.momentum"] == pytest.approx(float(v["momentum"]), rel=1e-6)
        else:
            assert "momentum" not in v
        steps = sorted({s for s, _ in view.series("val_accuracy")})
        done = epochs if record.tags["tuner.state"] == "COMPLETE" else len(steps)
        assert steps == list(range(1, done + 1))
        losses = len(view.series("loss"))
        if record.tags["tuner.state"] == "COMPLETE":
            assert losses == v["steps_per_epoch"] * len(steps)
        else:  # a trial stopped mid-epoch (diagnosis on a loss gone to inf) logged more
            assert losses >= v["steps_per_epoch"] * len(steps)


@pytest.mark.parametrize("every", ["x", "0"])
def test_digits_example_with_a_bad_checkpoint_every_says_one_line_and_exits_2(
    python: str, repo_root: Path, tmp_path: Path, sqlite_uri: str, every: str
) -> None:
    from mlflow.tracking import MlflowClient

    env = _env(
        MLFLOW_TRACKING_URI=sqlite_uri,
        TUNER_CHECKPOINT_DIR=str(tmp_path / "checkpoints"),
        TUNER_CHECKPOINT_EVERY=every,
    )
    script = str(repo_root / "examples/mindspore_digits/train.py")
    cmd = [python, script, "--epochs", "1", "--train-size", "50", "--experiment", "digits-e"]
    out = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 2, out.stderr[-3000:]
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    want = f"lineage: TUNER_CHECKPOINT_EVERY must be a whole number >= 1, got {every!r}"
    assert out.stderr.strip().splitlines()[-1] == want
    # The run the script had started ends FAILED, not RUNNING.
    client = MlflowClient(tracking_uri=sqlite_uri)
    experiment = client.get_experiment_by_name("digits-e")
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FAILED"
