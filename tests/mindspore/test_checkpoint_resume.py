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
