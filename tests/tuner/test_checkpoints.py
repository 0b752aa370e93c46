"""Trials continue from their last checkpoint: a retried failure, a torn checkpoint, a
controller killed with kill -9 then `tuner resume`. Real subprocess trials, a real MLflow
SQLite store, Optuna on SQLite."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from lineage import checkpoints
from tests.tuner.conftest import mlflow_runs, trials_of

pytestmark = pytest.mark.slow

#: Six steps; a checkpoint (a JSON file) after each. A fresh attempt writes step 4's
#: checkpoint half-way (never committed) and exits with code 3; an attempt given a checkpoint
#: continues after its step. Each attempt appends the step it started at to ``starts``.
SCRIPT = """
import argparse, json, os, pathlib, sys, time
from tuner import trial
ap = argparse.ArgumentParser(); ap.add_argument("--x", type=float); x = ap.parse_args().x
start, total = 0, 0.0
resume = trial.resume_from()
if resume is not None:
    state = json.loads((resume[0] / "state.json").read_text())
    start, total = resume[1] + 1, state["total"]
with open("starts", "a") as fh:
    fh.write(f"{trial.number()} {os.environ['TUNER_ATTEMPT']} {start}\\n")
run = None
if os.environ.get("SERIES"):  # a series the script records into its own run, per half-step
    import lineage; run = lineage.start_run()
for step in range(start, 6):
    total += x
    if run is not None:
        run.log_metric("lr", 0.1 * step, 2 * step); run.log_metric("lr", 0.1 * step, 2 * step + 1)
    trial.report(step, loss=total / (step + 1) + 1.0 / (step + 1))
    if step == 4 and resume is None:
        (trial.checkpoint_dir(step) / "state.json").write_text('{"tot')  # torn: not committed
        if os.environ.get("DROP_LOCAL"):  # the next attempt runs where this folder is not
            import shutil; shutil.rmtree(trial.checkpoint_dir())
        sys.exit(int(os.environ.get("FAIL_CODE", "3")))
    (trial.checkpoint_dir(step) / "state.json").write_text(json.dumps({"total": total}))
    trial.checkpointed(step)
    while pathlib.Path("hold").exists():
        time.sleep(0.02)
"""


def _starts(tmp_path: Path) -> list[tuple[int, int, int]]:
    lines = (tmp_path / "starts").read_text().split("\n")
    return [tuple(map(int, line.split())) for line in lines if line]  # type: ignore[misc]


def test_a_retried_failure_continues_from_its_last_good_checkpoint(
    campaign: Any, run_campaign: Any, tmp_path: Path, sqlite_uri: str
) -> None:
    config = campaign(
        SCRIPT,
        budget={"trials": 1},
        trial={"retries": 1, "retry_on": [3, "SIGTERM"]},
        checkpoint={"keep": 2},
        env={"SERIES": "1"},
    )
    import io

    from tuner.campaign._progress import PlainObserver

    printed = io.StringIO()
    result = run_campaign(config, observer=PlainObserver(printed))
    messages = printed.getvalue().splitlines()
    assert result.counts["COMPLETE"] == 1 and result.counts["FAIL"] == 0
    # The finished trial's line says which attempt it was and where it resumed.
    assert any(
        m.startswith("[1/1] trial 1 COMPLETE (attempt 2, continues trial 0, resumed from step 3)")
        for m in messages
    )
    # Attempt 1 started at 0; the retry (trial 1) at step 4: the torn step-4 checkpoint was
    # skipped with one line, step 3 was resumed.
    assert _starts(tmp_path) == [(0, 1, 0), (1, 2, 4)]
    torn = [m for m in messages if "cannot be resumed from" in m]
    assert len(torn) == 1 and "step-000000004" in torn[0] and "never committed" in torn[0]
    assert any("trial 1 continues trial 0 from its checkpoint of step 3" in m for m in messages)

    failed, retry = trials_of(config)
    assert retry.user_attrs["tuner.parent_trial"] == 0
    assert retry.user_attrs["tuner.first_trial"] == 0
    assert retry.user_attrs["tuner.resumed_step"] == 3
    # The pruner's curve: steps 0-3 from the first attempt, 4-5 from the retry, no gap.
    assert sorted(retry.intermediate_values) == [0, 1, 2, 3, 4, 5]
    for step in range(4):
        assert retry.intermediate_values[step] == failed.intermediate_values[step]

    # Its MLflow run holds one continuous curve, each step once.
    client = MlflowClient(tracking_uri=sqlite_uri)
    runs = {r.data.tags.get("tuner.trial_number"): r for r in mlflow_runs(sqlite_uri)}
    history = client.get_metric_history(runs["1"].info.run_id, "loss")
    assert sorted(m.step for m in history) == [0, 1, 2, 3, 4, 5]
    assert runs["1"].data.tags["tuner.resumed_step"] == "3"
    # So does a series the script recorded itself: the steps before the checkpoint carried
    # over from the first attempt's run (which keeps its lost step 4), each step once.
    lr = client.get_metric_history(runs["1"].info.run_id, "lr")
    assert sorted(m.step for m in lr) == list(range(12))
    lost = client.get_metric_history(runs["0"].info.run_id, "lr")
    assert sorted(m.step for m in lost) == list(range(10))

    # tuner status says which trial continues which, and from which step.
    from tuner.status import collect

    assert collect(config)["continued"] == [
        {"number": 1, "state": "COMPLETE", "continues": 0, "attempt": 2, "resumed_step": 3}
    ]
    shown = subprocess.run(
        [sys.executable, "-m", "tuner.cli", "status", "campaign.yaml"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "trial 1 (attempt 2, COMPLETE) continues trial 0 from step 3" in shown.stdout

    # The chain's folder: two checkpoints were kept while it ran (steps 4 and 5 of the
    # retry); once it completed, its newest (checkpoint.keep_finished: 1).
    folder = tmp_path / ".tuner" / "t" / "checkpoints" / "trial-0"
    assert sorted(p.name for p in folder.iterdir()) == ["step-000000005"]
    found = checkpoints.latest_good(folder)
    assert found is not None and found.step == 5


def test_the_mlflow_store_uploads_checkpoints_and_a_retry_downloads_them(
    campaign: Any, run_campaign: Any, tmp_path: Path, sqlite_uri: str
) -> None:
    # The failed attempt deletes its local folder: the retry finds its checkpoint only in
    # the first attempt's MLflow run artifacts.
    config = campaign(
        SCRIPT,
        budget={"trials": 1},
        trial={"retries": 1},
        checkpoint={"store": "mlflow", "keep": 2},
        env={"DROP_LOCAL": "1"},
    )
    result = run_campaign(config)
    assert result.counts["COMPLETE"] == 1
    assert _starts(tmp_path) == [(0, 1, 0), (1, 2, 4)]
    assert trials_of(config)[1].user_attrs["tuner.resumed_step"] == 3

    client = MlflowClient(tracking_uri=sqlite_uri)
    runs = {r.data.tags.get("tuner.trial_number"): r for r in mlflow_runs(sqlite_uri)}

    def uploaded(number: str) -> list[str]:
        listed = client.list_artifacts(runs[number].info.run_id, "checkpoints")
        return sorted(Path(f.path).name for f in listed)

    # Each run keeps its own newest two committed checkpoints; the torn one never left.
    assert uploaded("0") == ["step-000000002", "step-000000003"]
    assert uploaded("1") == ["step-000000004", "step-000000005"]


def test_a_failure_retry_on_does_not_name_is_not_retried(
    campaign: Any, run_campaign: Any, tmp_path: Path
) -> None:
    config = campaign(
        SCRIPT,
        budget={"trials": 1},
        trial={"retries": 2, "retry_on": ["timeout", 3]},
        env={"FAIL_CODE": "5"},
        checkpoint={"keep_finished": 0},
    )
    result = run_campaign(config)
    assert result.counts["FAIL"] == 1
    assert _starts(tmp_path) == [(0, 1, 0)]
    # Failed for good: with checkpoint.keep_finished: 0 its checkpoints are gone.
    assert not (tmp_path / ".tuner" / "t" / "checkpoints" / "trial-0").exists()


def _wait(condition: Any, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_resume_after_kill9_of_the_controller_continues_from_the_checkpoint(
    campaign: Any, tmp_path: Path, sqlite_uri: str
) -> None:
    config = campaign(SCRIPT, budget={"trials": 1}, env={"FAIL_CODE": "0"})
    (tmp_path / "hold").touch()  # each step waits until released
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    argv = [sys.executable, "-m", "tuner.cli"]
    proc = subprocess.Popen(
        [*argv, "run", "campaign.yaml", "--quiet"], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    folder = tmp_path / ".tuner" / "t" / "checkpoints" / "trial-0"
    _wait(lambda: checkpoints.latest_good(folder) is not None, "the first checkpoint")
    # The controller has recorded where the trial runs (what the next one reads to end it).
    _wait(
        lambda: any("pid" in t.user_attrs.get("tuner.launch", {}) for t in trials_of(config)),
        "the recorded launch",
    )
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    (tmp_path / "hold").unlink()
    done = subprocess.run(
        [*argv, "resume", "campaign.yaml", "--quiet"], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    starts = _starts(tmp_path)
    assert starts[0] == (0, 1, 0) and starts[-1][0] == 1 and starts[-1][2] >= 1, starts
    resumed = starts[-1][2] - 1
    trials = trials_of(_config(tmp_path))
    assert [t.state.name for t in trials] == ["FAIL", "COMPLETE"]
    assert trials[1].user_attrs["tuner.resumed_step"] == resumed
    assert sorted(trials[1].intermediate_values) == list(range(6))
    statuses = {
        r.data.tags.get("tuner.trial_number"): r.info.status for r in mlflow_runs(sqlite_uri)
    }
    assert "RUNNING" not in statuses.values()


def _config(tmp_path: Path) -> Any:
    from tuner.config import load_config

    return load_config(tmp_path / "campaign.yaml")


def test_a_controller_killed_before_it_recorded_the_launch_leaves_a_trial_that_continues(
    campaign: Any, tmp_path: Path
) -> None:
    """The controller died after starting the trial's process but before recording where it
    runs (the launch record): the next controller finds the attempt by its channel, ends its
    process, and continues it from its checkpoint instead of running it again from scratch
    beside the orphan. (A cold trial: a warm child's environment is set after its fork, so
    its channel is not in what /proc shows of it.)"""
    import optuna

    config = campaign(
        SCRIPT, budget={"trials": 1}, env={"FAIL_CODE": "0"}, trial={"preload": False}
    )
    (tmp_path / "hold").touch()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    argv = [sys.executable, "-m", "tuner.cli"]
    proc = subprocess.Popen(
        [*argv, "run", "campaign.yaml", "--quiet"], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    folder = tmp_path / ".tuner" / "t" / "checkpoints" / "trial-0"
    _wait(lambda: checkpoints.latest_good(folder) is not None, "the first checkpoint")
    _wait(
        lambda: any("pid" in t.user_attrs.get("tuner.launch", {}) for t in trials_of(config)),
        "the recorded launch",
    )
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # As if the controller had died a moment earlier, before the record.
    from tuner.search import _internals as internals

    study = optuna.load_study(study_name=config.study_name, storage=config.optuna_storage_url())
    (trial,) = study.get_trials(deepcopy=False)
    pid = int(trial.user_attrs["tuner.launch"]["pid"])
    internals.storage_of(study).set_trial_user_attr(internals.trial_id(trial), "tuner.launch", {})
    resume = subprocess.Popen(
        [*argv, "resume", "campaign.yaml", "--quiet"], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    # The orphan, still held at its first checkpoint, is ended by the recovery.
    _wait(lambda: _zombie(pid), "the orphan's end", 60)
    (tmp_path / "hold").unlink()
    _, err = resume.communicate(timeout=300)
    assert resume.returncode == 0, err
    starts = _starts(tmp_path)
    assert starts[0] == (0, 1, 0) and starts[-1][0] == 1 and starts[-1][2] >= 1, starts
    trials = trials_of(_config(tmp_path))
    assert [t.state.name for t in trials] == ["FAIL", "COMPLETE"]
    assert trials[1].user_attrs["tuner.resumed_step"] == starts[-1][2] - 1


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
