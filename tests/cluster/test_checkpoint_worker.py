"""A trial of a worker that died (kill -9 of the worker and its trial, as when a host is lost)
continues on another worker from its last checkpoint, fetched from the MLflow server's
artifacts: PostgreSQL study, ``mlflow server`` (basic auth, PostgreSQL), real workers."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml
from _services import MlflowServer

from lineage import checkpoints

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

#: Eight steps, a checkpoint after each; while ``hold`` exists a step waits after its
#: checkpoint. Each attempt appends the step it starts at to ``starts``.
SCRIPT = """
import json, pathlib, sys, time
from tuner import trial
start = 0
resume = trial.resume_from()
if resume is not None:
    start = json.loads((resume[0] / "state.json").read_text())["step"] + 1
with open("starts", "a") as fh:
    fh.write(f"{trial.number()} {start}\\n")
for step in range(start, 8):
    trial.report(step, loss=1.0 / (step + 1))
    (trial.checkpoint_dir(step) / "state.json").write_text(json.dumps({"step": step}))
    trial.checkpointed(step)
    while step >= 2 and pathlib.Path("hold").exists():
        time.sleep(0.02)
"""


def _worker(config: Path, creds: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tuner.cli", "worker", str(config),
         "--heartbeat", "1", "--stale-after", "4"],
        env={**os.environ, **creds}, stdout=open(log, "wb"), stderr=subprocess.STDOUT,
        cwd=config.parent,
    )  # fmt: skip


def _wait(condition: Any, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_a_dead_workers_trial_continues_from_its_checkpoint_in_the_mlflow_artifacts(
    tmp_path: Path, pg_storage: str, mlflow_server: MlflowServer, mlflow_credentials: dict[str, str]
) -> None:
    (tmp_path / "trial.py").write_text(SCRIPT)
    data: dict[str, Any] = {
        "name": "ckpt",
        "command": [sys.executable, "trial.py"],
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "budget": {"trials": 1, "max_failures": 3},
        "trial": {"grace_period": 2},
        "sampler": {"name": "random", "seed": 3},
        "pruner": {"name": "none"},
        "resources": {"kind": "cpu", "parallel": 1},
        "diagnosis": {"early_stop": False},
        "reads_tuner_params": True,
        "storage": pg_storage,
        "lineage": {"tracking_uri": mlflow_server.url, "experiment": f"ckpt-{tmp_path.name}"},
        "checkpoint": {"store": "mlflow", "keep": 2},
    }
    config = tmp_path / "campaign.yaml"
    config.write_text(yaml.safe_dump(data))
    (tmp_path / "hold").touch()
    victim = _worker(config, mlflow_credentials, tmp_path / "victim.log")

    def holding() -> bool:
        # Each worker has its own state folder, so the survivor never sees this one.
        return any(
            (found := checkpoints.latest_good(folder)) is not None and found.step == 2
            for folder in tmp_path.glob(".tuner/*/checkpoints/trial-0")
        )

    _wait(holding, "the checkpoint of step 2")
    storage = optuna.storages.RDBStorage(pg_storage)

    def launch() -> dict[str, Any]:
        (held,) = optuna.load_study(study_name="ckpt", storage=storage).get_trials()
        return dict(held.user_attrs.get("tuner.launch") or {})

    # The worker records where the trial runs after starting it: a busy machine can run the
    # trial to its step-2 checkpoint first.
    _wait(lambda: "pgid" in launch(), "the recorded launch")
    # The host is lost: the worker and its trial die together, and so does the local folder.
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    os.killpg(launch()["pgid"], signal.SIGKILL)
    for folder in tmp_path.glob(".tuner/*/checkpoints"):
        shutil.rmtree(folder)
    (tmp_path / "hold").unlink()

    survivor = _worker(config, mlflow_credentials, tmp_path / "survivor.log")
    assert survivor.wait(240) == 0, (tmp_path / "survivor.log").read_text()[-3000:]
    trials = optuna.load_study(study_name="ckpt", storage=storage).get_trials()
    assert [t.state.name for t in trials] == ["FAIL", "COMPLETE"]
    copy = trials[1]
    assert copy.user_attrs["tuner.parent_trial"] == 0
    assert copy.user_attrs["tuner.resumed_step"] == 2
    assert sorted(copy.intermediate_values) == list(range(8))
    starts = (tmp_path / "starts").read_text().split()
    assert starts == ["0", "0", "1", "3"]
