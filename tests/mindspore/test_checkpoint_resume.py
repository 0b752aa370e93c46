"""The MindSpore example, which has no checkpoint code of its own, checkpoints every epoch
under the tuner through `LineageCallback` and continues from the checkpoint an attempt is
handed: real training processes on CPU, alone and in campaigns whose trials are killed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lineage import checkpoints

pytestmark = [pytest.mark.mindspore, pytest.mark.slow]


def _train(python: str, script: str, cwd: Path, epochs: int, *flags: str, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    base.update(GLOG_v="3", OMP_NUM_THREADS="1", TUNER_PARAMS="{}", **env)
    argv = [python, script, "--epochs", str(epochs), "--hidden", "16", *flags]
    done = subprocess.run(argv, cwd=cwd, env=base, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def test_digits_example_saves_every_epoch_and_resumes_after_the_checkpoint(
    python: str, repo_root: Path, tmp_path: Path, sqlite_uri: str
) -> None:
    script = str(repo_root / "examples/mindspore_digits/train.py")
    folder = tmp_path / "ckpt"
    protocol = {
        "MLFLOW_TRACKING_URI": sqlite_uri,
        "TUNER_CHECKPOINT_DIR": str(folder),
        "TUNER_CHECKPOINT_KEEP": "2",
        "TUNER_CONTROL": str(tmp_path / "stop"),
    }
    first = tmp_path / "first.jsonl"
    _train(python, script, tmp_path, 2, TUNER_CHANNEL=str(first), **protocol)
    saved = checkpoints.latest_good(folder)
    assert saved is not None and saved.step == 2
    assert (saved.path / "mindspore.ckpt").stat().st_size > 1000

    second = tmp_path / "second.jsonl"
    out = _train(
        python, script, tmp_path, 4,
        TUNER_CHANNEL=str(second), TUNER_RESUME_FROM=str(saved.path), TUNER_RESUME_STEP="2",
        **protocol,
    )  # fmt: skip
    assert "lineage.mindspore: resumed from the checkpoint of epoch 2" in out
    assert "trained 2 epoch(s)" in out
    steps = [json.loads(line)["step"] for line in second.read_text().splitlines()]
    assert steps == [3, 4]  # the epochs after the checkpoint, numbered on
    # Two kept: epochs 3 and 4 of the second attempt.
    assert sorted(p.name for p in folder.iterdir()) == ["step-000000003", "step-000000004"]
    # The restored network starts where the first left off: better than a fresh first epoch.
    accuracy = [json.loads(line)["m"]["val_accuracy"] for line in first.read_text().splitlines()]
    resumed = json.loads(second.read_text().splitlines()[0])["m"]["val_accuracy"]
    assert resumed >= accuracy[0]


#: One process, two fits: first as rank 1 of a launch (``RANK_ID=1``, as msrun sets it;
#: no ``mindspore.communication.init``), then as rank 0.
RANKS = """
import os, sys
import numpy as np
import mindspore as ms
from mindspore import dataset as mds, nn
from mindspore.train import Model
from lineage.mindspore import LineageCallback, TrialCheckpoint
ms.set_device("CPU")
ms.set_context(mode=ms.GRAPH_MODE)
x = np.random.default_rng(0).normal(size=(16, 8)).astype(np.float32)
columns = {"x": x, "y": (x[:, 0] > 0).astype(np.int32)}
net = nn.Dense(8, 2)
loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
model = Model(net, loss_fn, nn.Momentum(net.trainable_params(), 0.1, 0.9))
for rank in ("1", "0"):
    os.environ["RANK_ID"] = rank
    callbacks = [LineageCallback(experiment="ranks", data_sample=False),
                 TrialCheckpoint(model.train_network)]
    data = mds.NumpySlicesDataset(columns, shuffle=False).batch(8)
    model.train(2, data, callbacks=callbacks, dataset_sink_mode=False)
    print(f"rank {rank}: {sorted(os.listdir(os.environ['TUNER_CHECKPOINT_DIR']))}", flush=True)
"""


def test_only_rank_0_of_a_launch_records_lineage_and_saves_checkpoints(
    python: str, tmp_path: Path, sqlite_uri: str
) -> None:
    from mlflow.tracking import MlflowClient

    (tmp_path / "ranks.py").write_text(RANKS)
    folder = tmp_path / "ckpt"
    folder.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    base.update(
        GLOG_v="3", OMP_NUM_THREADS="1", MLFLOW_TRACKING_URI=sqlite_uri,
        TUNER_CHECKPOINT_DIR=str(folder), TUNER_CHECKPOINT_KEEP="2",
    )  # fmt: skip
    done = subprocess.run(
        [python, "ranks.py"], cwd=tmp_path, env=base, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("rank ")]
    # Rank 1 saved nothing; rank 0 saved both of its epochs.
    assert lines == ["rank 1: []", "rank 0: ['step-000000001', 'step-000000002']"]
    client = MlflowClient(tracking_uri=sqlite_uri)
    experiment = client.get_experiment_by_name("ranks")
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id])  # rank 0's only
    assert run.data.params["device.rank"] == "0"


#: Runs the example; an attempt that starts fresh is then killed (SIGKILL) after the example
#: finished: stopped while it closed, after the checkpoint of its last epoch.
KILLED_WHILE_CLOSING = """
import os, signal, subprocess, sys
rc = subprocess.call([sys.executable, *sys.argv[1:]])
if rc == 0 and not os.environ.get("TUNER_RESUME_FROM"):
    os.kill(os.getpid(), signal.SIGKILL)
sys.exit(rc)
"""


def _campaign(tmp_path: Path, command: list[str], sqlite_uri: str, name: str) -> Any:
    """A one-trial campaign of ``command`` whose first attempt a SIGKILL ends and whose retry
    continues it; the loaded config."""
    import yaml

    from tuner.config import load_config

    data = {
        "name": name,
        "command": command,
        "target": {"metric": "val_accuracy", "goal": "maximize"},
        "parameters": {"lr": {"type": "float", "low": 0.05, "high": 0.1}},
        "budget": {"trials": 1, "max_failures": 3},
        "trial": {"retries": 1, "retry_on": ["SIGKILL"], "grace_period": 2, "preload": False},
        "sampler": {"name": "random", "seed": 3},
        "pruner": {"name": "none"},
        "resources": {"kind": "cpu", "parallel": 1},
        "diagnosis": {"early_stop": False},
        "env": {"GLOG_v": "3", "OMP_NUM_THREADS": "1"},
        "lineage": {"tracking_uri": sqlite_uri},
    }
    (tmp_path / "campaign.yaml").write_text(yaml.safe_dump(data))
    return load_config(tmp_path / "campaign.yaml")


def _run_campaign(config: Any) -> tuple[Any, Any]:
    """Run ``config``; the killed attempt and its continuation (optuna trials)."""
    import optuna

    from tuner.campaign import Controller

    result = Controller(config, importance=False, handle_signals=False).run()
    assert result.counts == {"COMPLETE": 1, "PRUNED": 0, "FAIL": 0}
    study = optuna.load_study(study_name=config.study_name, storage=config.optuna_storage_url())
    killed, continuation = study.get_trials()
    assert killed.state.name == "FAIL" and "SIGKILL" in killed.user_attrs["fail_reason"]
    assert continuation.state.name == "COMPLETE"
    return killed, continuation


#: Runs the example in this process; an attempt that starts fresh kills itself (SIGKILL)
#: right after it committed the checkpoint of epoch 2, with epochs 3 and on still to train.
KILLED_MID_TRAINING = """
import os, runpy, signal, sys
from lineage import checkpoints
if not os.environ.get("TUNER_RESUME_FROM"):
    commit = checkpoints.commit
    def commit_then_die(path, step, **kwargs):
        done = commit(path, step, **kwargs)
        if step == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return done
    checkpoints.commit = commit_then_die
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_a_trial_killed_mid_training_continues_from_its_checkpoint(
    python: str, repo_root: Path, tmp_path: Path, sqlite_uri: str
) -> None:
    from mlflow.tracking import MlflowClient

    (tmp_path / "wrapper.py").write_text(KILLED_MID_TRAINING)
    example = str(repo_root / "examples/mindspore_digits/train.py")
    command = [python, "wrapper.py", example, "--epochs", "5", "--hidden", "16",
               "--train-size", "200", "--batch-size", "50", "--lr", "{lr}"]  # fmt: skip
    killed, continuation = _run_campaign(_campaign(tmp_path, command, sqlite_uri, "killed"))

    assert sorted(killed.intermediate_values) == [1, 2]  # then killed after epoch 2's save
    assert continuation.user_attrs["tuner.resumed_step"] == 2
    values = continuation.intermediate_values
    assert sorted(values) == [1, 2, 3, 4, 5]  # one continuous curve
    assert {s: values[s] for s in (1, 2)} == killed.intermediate_values
    assert continuation.value == pytest.approx(values[5])
    # The same training as one never interrupted (the same seeds, batches and shuffles).
    channel = tmp_path / "uninterrupted.jsonl"
    lr = str(continuation.params["lr"])
    flags = ["--train-size", "200", "--batch-size", "50", "--lr", lr, "--no-lineage"]
    _train(python, example, tmp_path, 5, *flags, TUNER_CHANNEL=str(channel))
    whole = {r["step"]: r["m"]["val_accuracy"] for r in map(json.loads, channel.open())}
    assert values == pytest.approx(whole, abs=1e-6)

    client = MlflowClient(tracking_uri=sqlite_uri)
    first = killed.user_attrs["tuner.launch"]["run_id"]
    run_id = continuation.user_attrs["tuner.launch"]["run_id"]
    # 4 steps per epoch: the first attempt trained epochs 1-2 (what SIGKILL caught in its
    # recording buffer is lost), the continuation 3-5 only, numbered on from the checkpoint.
    lost = [m.step for m in client.get_metric_history(first, "loss")]
    assert max(lost) <= 8
    # Once it ended, the first attempt's recorded steps before the checkpoint were carried
    # into the continuation's run: one curve, each step once.
    steps = [m.step for m in client.get_metric_history(run_id, "loss")]
    assert sorted(steps) == sorted(lost) + list(range(9, 21))
    epochs = [m.step for m in client.get_metric_history(first, "epoch_time")]
    assert sorted(m.step for m in client.get_metric_history(run_id, "epoch_time")) == [
        *sorted(e for e in epochs if e < 3),
        3,
        4,
        5,
    ]
    # Each epoch once: the copied reports of 1-2, then 3-5 written by the script's own run
    # (which the tuner does not write again).
    steps = [m.step for m in client.get_metric_history(run_id, "val_accuracy")]
    assert sorted(steps) == [1, 2, 3, 4, 5]
    params = client.get_run(run_id).data.params
    assert params["epochs"] == "5" and params["optimizer.name"] == "Momentum"


#: Runs the example in this process; an attempt that starts fresh waits, once it committed
#: the checkpoint of epoch 2, for as long as the file ``hold`` exists.
HELD_AFTER_EPOCH_2 = """
import os, runpy, sys, time
from lineage import checkpoints
if not os.environ.get("TUNER_RESUME_FROM"):
    commit = checkpoints.commit
    def commit_then_wait(path, step, **kwargs):
        done = commit(path, step, **kwargs)
        while step == 2 and os.path.exists("hold"):
            time.sleep(0.05)
        return done
    checkpoints.commit = commit_then_wait
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_tuner_resume_after_kill9_of_the_controller_continues_mid_training(
    python: str, repo_root: Path, tmp_path: Path, sqlite_uri: str
) -> None:
    import signal
    import time

    import optuna
    from mlflow.tracking import MlflowClient

    (tmp_path / "wrapper.py").write_text(HELD_AFTER_EPOCH_2)
    (tmp_path / "hold").touch()
    example = str(repo_root / "examples/mindspore_digits/train.py")
    command = [python, "wrapper.py", example, "--epochs", "5", "--hidden", "16",
               "--train-size", "200", "--batch-size", "50", "--lr", "{lr}"]  # fmt: skip
    config = _campaign(tmp_path, command, sqlite_uri, "ctl")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    argv = [python, "-m", "tuner.cli"]
    proc = subprocess.Popen(
        [*argv, "run", "campaign.yaml", "--quiet"], cwd=tmp_path, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    folder = tmp_path / ".tuner" / "ctl" / "checkpoints" / "trial-0"

    def trials() -> list[Any]:
        storage = config.optuna_storage_url()
        try:
            return optuna.load_study(study_name=config.study_name, storage=storage).get_trials()
        except KeyError:  # the controller has not created the study yet
            return []

    deadline = time.monotonic() + 240
    while not (
        (point := checkpoints.latest_good(folder)) is not None
        and point.step == 2
        and any("pid" in t.user_attrs.get("tuner.launch", {}) for t in trials())
    ):
        assert time.monotonic() < deadline, "the trial never held at its checkpoint of epoch 2"
        assert proc.poll() is None, "the controller ended before it was killed"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)  # the trial is mid-training: epochs 3-5 are left
    proc.wait()
    done = subprocess.run(
        [*argv, "resume", "campaign.yaml", "--quiet"], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]

    killed, continuation = trials()
    assert [killed.state.name, continuation.state.name] == ["FAIL", "COMPLETE"]
    assert continuation.user_attrs["tuner.resumed_step"] == 2
    assert sorted(continuation.intermediate_values) == [1, 2, 3, 4, 5]
    client = MlflowClient(tracking_uri=sqlite_uri)
    run_id = continuation.user_attrs["tuner.launch"]["run_id"]
    first = killed.user_attrs["tuner.launch"]["run_id"]
    lost = [m.step for m in client.get_metric_history(first, "loss") if m.step <= 8]
    steps = [m.step for m in client.get_metric_history(run_id, "loss")]
    assert sorted(steps) == sorted(lost) + list(range(9, 21))  # carried over, each step once
    assert client.get_run(run_id).info.status == "FINISHED"


def test_a_continuation_from_the_last_epochs_checkpoint_completes(
    python: str, repo_root: Path, tmp_path: Path, sqlite_uri: str
) -> None:
    from mlflow.tracking import MlflowClient

    (tmp_path / "wrapper.py").write_text(KILLED_WHILE_CLOSING)
    example = str(repo_root / "examples/mindspore_digits/train.py")
    command = [python, "wrapper.py", example, "--epochs", "2", "--hidden", "16",
               "--train-size", "200", "--lr", "{lr}"]  # fmt: skip
    killed, continuation = _run_campaign(_campaign(tmp_path, command, sqlite_uri, "closing"))
    assert continuation.user_attrs["tuner.resumed_step"] == 2
    # The restored network evaluates as it did at the end of its training.
    assert continuation.intermediate_values == killed.intermediate_values
    assert continuation.value == pytest.approx(killed.intermediate_values[2])
    client = MlflowClient(tracking_uri=sqlite_uri)
    run_id = continuation.user_attrs["tuner.launch"]["run_id"]
    steps = [m.step for m in client.get_metric_history(run_id, "val_accuracy")]
    assert sorted(steps) == [1, 2]  # the repeated report of epoch 2 was not recorded twice
    # Nothing was trained: the one step MindSpore ran was undone and not recorded; the
    # continuation's loss curve is the first attempt's, carried over once it ended.
    first = killed.user_attrs["tuner.launch"]["run_id"]
    assert sorted(m.step for m in client.get_metric_history(run_id, "loss")) == sorted(
        m.step for m in client.get_metric_history(first, "loss")
    )
