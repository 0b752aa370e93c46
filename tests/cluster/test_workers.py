"""Several ``tuner worker`` processes on one PostgreSQL study, with an MLflow server (basic
auth, PostgreSQL) as the lineage store: exact budget, no duplicates, kill -9 recovery."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import optuna
import pytest
import sqlalchemy.exc
import yaml
from _services import ADMIN_PASSWORD, MlflowServer

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
TRIAL = str(Path(__file__).with_name("_trial.py"))


def _campaign(
    tmp_path: Path, storage: str, tracking: str, *, trials: int, steps: int, sleep: float
) -> Path:
    out = tmp_path / "seen"
    out.mkdir()
    data: dict[str, Any] = {
        "name": "shared",
        "command": [sys.executable, TRIAL, str(steps), str(sleep), str(out)],
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "budget": {"trials": trials, "max_failures": 3},
        "trial": {"grace_period": 2},
        "sampler": {"name": "random", "seed": 3},
        "pruner": {"name": "none"},
        "resources": {"kind": "cpu", "parallel": 1},
        "diagnosis": {"early_stop": False},
        "storage": storage,
        "lineage": {"tracking_uri": tracking, "experiment": f"workers-{tmp_path.name}"},
    }
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _worker(config: Path, creds: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, **creds}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tuner.cli",
            "worker",
            str(config),
            "--heartbeat",
            "1",
            "--stale-after",
            "4",
        ],
        env=env,
        stdout=open(log, "wb"),
        stderr=subprocess.STDOUT,
        cwd=config.parent,
    )


_LOOKS: dict[str, optuna.storages.RDBStorage] = {}


def _study(storage: str) -> optuna.Study:
    # One storage per database for every look: a storage per look keeps a session open each
    # until it is collected, and polling exhausts PostgreSQL's max_connections under load.
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if storage not in _LOOKS:
        _LOOKS[storage] = optuna.storages.RDBStorage(storage)
    return optuna.load_study(study_name="shared", storage=_LOOKS[storage])


def test_three_workers_finish_exactly_the_budget(
    tmp_path: Path, pg_storage: str, mlflow_server: MlflowServer, mlflow_credentials: dict[str, str]
) -> None:
    config = _campaign(tmp_path, pg_storage, mlflow_server.url, trials=9, steps=2, sleep=0.1)
    procs = [_worker(config, mlflow_credentials, tmp_path / f"w{i}.log") for i in range(3)]
    for i, proc in enumerate(procs):
        assert proc.wait(240) == 0, (tmp_path / f"w{i}.log").read_text()[-3000:]

    trials = _study(pg_storage).get_trials()
    assert len(trials) == 9 and {t.state.name for t in trials} == {"COMPLETE"}
    assert sorted(t.number for t in trials) == list(range(9))
    assert len({t.params["x"] for t in trials}) == 9
    seen = [json.loads(p.read_text()) for p in (tmp_path / "seen").glob("*.json")]
    assert sorted(int(s["TUNER_TRIAL_NUMBER"]) for s in seen) == list(range(9)), "run once each"
    # The credentials reached every trial, through the environment only ...
    assert {s["MLFLOW_TRACKING_PASSWORD"] for s in seen} == {ADMIN_PASSWORD}
    assert {s["MLFLOW_TRACKING_URI"] for s in seen} == {mlflow_server.url}
    # ... and were never printed nor recorded.
    for i in range(3):
        assert ADMIN_PASSWORD not in (tmp_path / f"w{i}.log").read_text()
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=mlflow_server.url)
    exp = client.get_experiment_by_name(f"workers-{tmp_path.name}")
    assert exp is not None
    runs = client.search_runs([exp.experiment_id], max_results=100)
    trial_runs = [r for r in runs if r.data.tags.get("lineage.run_type") == "trial"]
    assert len(trial_runs) == 9 and {r.info.status for r in trial_runs} == {"FINISHED"}
    assert {s["MLFLOW_RUN_ID"] for s in seen} == {r.info.run_id for r in trial_runs}
    for run in runs:
        assert ADMIN_PASSWORD not in json.dumps([run.data.params, run.data.tags])


def test_kill_9_of_a_worker_mid_trial_is_recovered_by_a_survivor(
    tmp_path: Path, pg_storage: str, mlflow_server: MlflowServer, mlflow_credentials: dict[str, str]
) -> None:
    config = _campaign(tmp_path, pg_storage, mlflow_server.url, trials=4, steps=30, sleep=0.1)
    victim = _worker(config, mlflow_credentials, tmp_path / "victim.log")
    deadline = time.monotonic() + 120
    running: list[optuna.trial.FrozenTrial] = []
    while time.monotonic() < deadline and not running:
        time.sleep(0.5)
        try:
            held = _study(pg_storage).get_trials(states=(optuna.trial.TrialState.RUNNING,))
        except KeyError:  # the study does not exist yet
            continue
        except sqlalchemy.exc.SQLAlchemyError:  # the worker is creating the schema right now
            continue
        # Only a trial whose process was launched: a worker also holds one asked for ahead of
        # a free slot, RUNNING in Optuna but not started yet.
        running = [t for t in held if "tuner.launch" in t.user_attrs]
    assert running, (tmp_path / "victim.log").read_text()[-3000:]
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    # What the victim held when it died, read after its death: the trial seen running may
    # have ended between that look and the kill (a loaded machine), and another started.
    held = _study(pg_storage).get_trials(states=(optuna.trial.TrialState.RUNNING,))
    launched = [t for t in held if "tuner.launch" in t.user_attrs]
    assert launched, (tmp_path / "victim.log").read_text()[-3000:]
    doomed = launched[0]
    survivor = _worker(config, mlflow_credentials, tmp_path / "survivor.log")
    assert survivor.wait(240) == 0, (tmp_path / "survivor.log").read_text()[-3000:]

    trials = _study(pg_storage).get_trials()
    stale = [t for t in trials if "tuner:stale" in t.system_attrs]
    # Every trial the victim held RUNNING (at least the one seen) was failed with the
    # reason and re-run once, with the same parameters, by the survivor.
    assert doomed.number in [t.number for t in stale]
    for old in stale:
        assert old.state.name == "FAIL" and "no heartbeat" in old.system_attrs["tuner:stale"]
        copies = [t for t in trials if t.system_attrs.get("tuner:retry_of") == old.number]
        assert len(copies) == 1 and copies[0].state.name == "COMPLETE"
        # A trial the victim had asked ahead of a free slot but not yet sampled holds no
        # parameters: its copy samples its own.
        assert copies[0].params == old.params or not old.params
    rerun = [t for t in trials if t.system_attrs.get("tuner:retry_of") == doomed.number]
    counted = [t for t in trials if t not in stale]
    assert len(counted) == 4 and {t.state.name for t in counted} == {"COMPLETE"}
    # The dead worker's MLflow run of that trial was ended, with the reason.
    from mlflow.tracking import MlflowClient

    # The trial seen running was launched; another one the victim held may only have been
    # asked for ahead of a free slot (RUNNING in Optuna, never started, so no launch record).
    seen = next(t for t in stale if t.number == doomed.number)
    run_id = seen.user_attrs["tuner.launch"]["run_id"]
    run = MlflowClient(tracking_uri=mlflow_server.url).get_run(run_id)
    assert run.info.status == "FAILED"
    assert "no heartbeat" in run.data.tags["tuner.fail_reason"]
    log = (tmp_path / "survivor.log").read_text()
    assert f"re-queued stale trials {doomed.number}->{rerun[0].number}" in log
