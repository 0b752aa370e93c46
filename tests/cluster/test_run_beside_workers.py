"""``tuner run`` on a PostgreSQL study with a ``tuner worker`` joining it mid-campaign: the
worker sees the run's trials driven by a live controller (heartbeats), so it neither re-queues
them nor closes their MLflow runs nor deletes the run's reserved runs; together they finish
exactly the budget. And a ``tuner resume`` right after the run's kill -9 takes the dead run's
trials over at once (their owner is its campaign directory), without waiting for their
heartbeats to go stale."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.timeout(600)]
TRIAL = str(Path(__file__).with_name("_trial.py"))
ENV = {**os.environ, "TUNER_HEARTBEAT_INTERVAL": "1", "TUNER_HEARTBEAT_GRACE": "4"}


def _campaign(tmp_path: Path, storage: str, *, trials: int, steps: int) -> Path:
    seen = tmp_path / "seen"
    seen.mkdir()
    data: dict[str, Any] = {
        "name": "mixed",
        "command": [sys.executable, TRIAL, str(steps), "0.1", str(seen)],
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "budget": {"trials": trials, "max_failures": 3},
        "trial": {"grace_period": 2},
        "sampler": {"name": "random", "seed": 5},
        "pruner": {"name": "none"},
        "resources": {"kind": "cpu", "parallel": 1},
        "diagnosis": {"early_stop": False},
        "storage": storage,
        "lineage": {"tracking_uri": f"sqlite:///{tmp_path / 'mlflow.db'}", "experiment": "mixed"},
    }
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _tuner(*args: str, cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tuner.cli", *args],
        env=ENV,
        cwd=cwd,
        stdout=open(log, "wb"),
        stderr=subprocess.STDOUT,
    )


def _launched(url: str, proc: subprocess.Popen[bytes], log: Path) -> list[Any]:
    """The study's RUNNING trials whose process started, once there is one."""
    # One storage for every look: a storage per look keeps a session open each until it is
    # collected, and a few hundred looks exhaust PostgreSQL's max_connections.
    storage = optuna.storages.RDBStorage(url)
    deadline = time.monotonic() + 180
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.3)
            try:
                study = optuna.load_study(study_name="mixed", storage=storage)
            except KeyError:
                continue
            running = study.get_trials(states=(optuna.trial.TrialState.RUNNING,))
            launched = [t for t in running if "tuner.launch" in t.user_attrs]
            if launched:
                return launched
    finally:
        storage.engine.dispose()
    raise AssertionError(log.read_text()[-3000:])


def _runs(tmp_path: Path) -> list[Any]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("mixed")
    assert exp is not None
    return list(client.search_runs([exp.experiment_id], run_view_type=3, max_results=500))


def test_a_worker_joining_a_live_tuner_run_leaves_its_trials_and_runs_alone(
    tmp_path: Path, pg_storage: str
) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    config = _campaign(tmp_path, pg_storage, trials=6, steps=15)
    run = _tuner("run", str(config), cwd=tmp_path, log=tmp_path / "run.log")
    _launched(pg_storage, run, tmp_path / "run.log")
    worker = _tuner(
        *("worker", str(config), "--heartbeat", "1", "--stale-after", "4"),
        cwd=tmp_path,
        log=tmp_path / "worker.log",
    )
    assert worker.wait(300) == 0, (tmp_path / "worker.log").read_text()[-3000:]
    assert run.wait(300) == 0, (tmp_path / "run.log").read_text()[-3000:]

    trials = optuna.load_study(study_name="mixed", storage=pg_storage).get_trials()
    # Nothing was taken for a dead controller's: no trial superseded, exactly the budget.
    assert not [t.number for t in trials if "tuner:stale" in t.system_attrs]
    assert sorted(t.number for t in trials) == list(range(6))
    assert {t.state.name for t in trials} == {"COMPLETE"}
    seen = [json.loads(p.read_text()) for p in (tmp_path / "seen").glob("*.json")]
    assert sorted(int(s["TUNER_TRIAL_NUMBER"]) for s in seen) == list(range(6)), "run once each"
    assert "re-queued" not in (tmp_path / "worker.log").read_text()
    # Every trial's MLflow run finished, none deleted or killed by the worker.
    runs = _runs(tmp_path)
    trial_runs = [r for r in runs if r.data.tags.get("lineage.run_type") == "trial"]
    assert (
        sorted((r.info.status, r.info.lifecycle_stage) for r in trial_runs)
        == [("FINISHED", "active")] * 6
    )
    assert {s["MLFLOW_RUN_ID"] for s in seen} == {r.info.run_id for r in trial_runs}
    assert not [r for r in runs if r.info.status == "RUNNING"]
    # The run's progress counts the study's finished trials, the worker's too: after its
    # k-th line at least k trials are done, and its summary counts every line it printed.
    log = (tmp_path / "run.log").read_text()
    done = [int(m) for m in re.findall(r"^\[(\d+)/6\] trial \d+ ", log, flags=re.M)]
    assert done and all(n >= k for k, n in enumerate(done, 1)), log[-3000:]
    assert done == sorted(done), log[-3000:]
    (finished,) = re.findall(r"campaign 'mixed': (\d+)/6 trials", log)
    assert int(finished) >= len(done), log[-3000:]


def test_resume_right_after_kill_9_takes_over_the_dead_runs_trials(
    tmp_path: Path, pg_storage: str
) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    config = _campaign(tmp_path, pg_storage, trials=3, steps=20)
    run = _tuner("run", str(config), cwd=tmp_path, log=tmp_path / "run.log")
    doomed = _launched(pg_storage, run, tmp_path / "run.log")[0]
    run.send_signal(signal.SIGKILL)
    run.wait()
    # At once: the dead run's last heartbeat is still fresh.
    resume = _tuner("resume", str(config), cwd=tmp_path, log=tmp_path / "resume.log")
    assert resume.wait(300) == 0, (tmp_path / "resume.log").read_text()[-3000:]

    trials = optuna.load_study(study_name="mixed", storage=pg_storage).get_trials()
    stale = [t for t in trials if "tuner:stale" in t.system_attrs]
    assert doomed.number in [t.number for t in stale]
    counted = [t for t in trials if t not in stale]
    assert len(counted) == 3 and {t.state.name for t in counted} == {"COMPLETE"}
    runs = _runs(tmp_path)
    assert not [r for r in runs if r.info.status == "RUNNING"]
    killed = {r.info.run_id: r for r in runs}[doomed.user_attrs["tuner.launch"]["run_id"]]
    assert killed.info.status == "KILLED" and killed.data.tags["tuner.state"] == "FAIL"
