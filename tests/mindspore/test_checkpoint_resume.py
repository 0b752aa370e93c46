"""The MindSpore example checkpoints every epoch under the tuner and continues from the
checkpoint an attempt is handed: two real training processes on CPU."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from lineage import checkpoints

pytestmark = [pytest.mark.mindspore, pytest.mark.slow]


def _train(python: str, script: str, cwd: Path, epochs: int, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    base.update(GLOG_v="3", OMP_NUM_THREADS="1", TUNER_PARAMS="{}", **env)
    argv = [python, script, "--epochs", str(epochs), "--hidden", "16", "--no-lineage"]
    done = subprocess.run(argv, cwd=cwd, env=base, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout


def test_digits_example_saves_every_epoch_and_resumes_after_the_checkpoint(
    python: str, repo_root: Path, tmp_path: Path
) -> None:
    script = str(repo_root / "examples/mindspore_digits/train.py")
    folder = tmp_path / "ckpt"
    protocol = {
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
    assert "resumed from the checkpoint of epoch 2" in out
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
