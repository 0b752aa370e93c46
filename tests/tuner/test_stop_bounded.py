"""Stopping is bounded: SIGTERM to `tuner run` during PBT's copy-and-restart churn ends it,
every time, with the trials stopped and the campaign run closed; a second SIGTERM ends it at
once. Real `tuner run` processes, real subprocess trials, MLflow and Optuna on SQLite.

The bound asserted here is a hang detector, well above what a stop takes; the figure the
docs give comes from ``benchmarks/bench_stop.py``.

``LT_STOP_ROUNDS`` sets how many times the churn test starts a campaign and stops it, each
round deeper into the churn; CI runs two, ``LT_STOP_ROUNDS=5 pytest -n 0
tests/tuner/test_stop_bounded.py`` the whole check."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow
ROUNDS = int(os.environ.get("LT_STOP_ROUNDS", "2"))

#: Loss rises every step, so each member is ranked against the other's fresh report and
#: copied over and over (checkpoint each step, exploit every step).
SCRIPT = """
import argparse, json, time
from tuner import trial
ap = argparse.ArgumentParser(); ap.add_argument("--lr", type=float); lr = ap.parse_args().lr
resume = trial.resume_from()
start = 0 if resume is None else resume[1] + 1
for step in range(start, 40):
    time.sleep(0.1)
    trial.report(step, loss=1 + step + lr)
    (trial.checkpoint_dir(step) / "s.json").write_text(json.dumps({"step": step}))
    trial.checkpointed(step)
"""

#: A hang detector: a stop takes a few seconds, a hang (a writer retrying a lock its own
#: controller holds) minutes.
HANG_S = 30.0


def _config(folder: Path) -> Path:
    data = {
        "name": "churn",
        "command": [sys.executable, "trial.py", "--lr", "{lr}"],
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"lr": {"type": "float", "low": 0.01, "high": 1.0, "log": True}},
        "budget": {"trials": 2},
        "trial": {"grace_period": 5},
        "diagnosis": {"early_stop": False},  # the loss rises on purpose
        "resources": {"kind": "cpu", "parallel": 2},
        "sampler": {"name": "random", "seed": 1},
        "lineage": {"tracking_uri": f"sqlite:///{folder / 'mlflow.db'}"},
        "scheduler": {
            "name": "pbt",
            "population": 2,
            "interval": 1,
            "quantile": 0.5,
            "perturb": {"lr": {"factor": [0.8, 1.2]}},
        },
    }
    (folder / "trial.py").write_text(SCRIPT)
    path = folder / "campaign.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _start(folder: Path) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.Popen(
        [sys.executable, "-m", "tuner.cli", "run", "campaign.yaml", "--quiet"],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _poll(condition: Callable[[], bool], what: str, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 180
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"{what}: tuner run ended first: {proc.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError(what)
        time.sleep(0.1)


def _exploits(folder: Path) -> int:
    import optuna

    storage = f"sqlite:///{folder / 'optuna.db'}"
    try:
        study = optuna.load_study(study_name="churn", storage=storage)
    except Exception:  # not created yet
        return 0
    return sum(1 for t in study.get_trials(deepcopy=False) if "tuner.exploit" in t.user_attrs)


def _fresh(tmp_path: Path, store: Path, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    shutil.copyfile(store, folder / "mlflow.db")
    _config(folder)
    return folder


def test_sigterm_during_pbt_churn_ends_tuner_run_every_time(
    tmp_path: Path, sqlite_uri: str
) -> None:
    from mlflow.tracking import MlflowClient

    store = Path(sqlite_uri.removeprefix("sqlite:///"))
    for round_ in range(ROUNDS):
        folder = _fresh(tmp_path, store, f"round{round_}")
        proc = _start(folder)
        # Churn under way: members have been copied over and restarted a few times.
        wanted = 2 + round_
        _poll(lambda f=folder, n=wanted: _exploits(f) >= n, "no PBT exploit", proc)  # type: ignore[misc]
        proc.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        try:
            _, err = proc.communicate(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise AssertionError(f"round {round_}: alive {HANG_S}s after SIGTERM") from None
        took = time.monotonic() - sent
        assert proc.returncode == 130, (round_, took, err[-2000:])
        assert "interrupted" in err, err[-2000:]
        client = MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")
        exp = client.get_experiment_by_name("churn")
        assert exp is not None
        parents = [
            r
            for r in client.search_runs([exp.experiment_id])
            if r.data.tags.get("lineage.run_type") == "campaign"
        ]
        assert [r.info.status for r in parents] == ["KILLED"], (round_, err[-2000:])


#: A trial that takes its time to stop: being asked to (the stop flag, SIGTERM) is noted
#: (``term``) and ignored, so the first stop waits out ``trial.grace_period`` for it.
STUBBORN = """
import os, pathlib, signal, time
from tuner import trial
pathlib.Path("pid").write_text(str(os.getpid()))
signal.signal(signal.SIGTERM, lambda *_: pathlib.Path("term").touch())
for step in range(100000):
    time.sleep(0.1)
    if trial.should_prune():
        pathlib.Path("term").touch()
    trial.report(step, loss=1.0 / (step + 1))
"""


def test_a_second_sigterm_ends_tuner_run_at_once(tmp_path: Path, sqlite_uri: str) -> None:
    folder = tmp_path / "twice"
    folder.mkdir()
    shutil.copyfile(Path(sqlite_uri.removeprefix("sqlite:///")), folder / "mlflow.db")
    _config(folder)
    data = yaml.safe_load((folder / "campaign.yaml").read_text())
    data.pop("scheduler")
    data["trial"]["grace_period"] = 120
    data["resources"]["parallel"] = 1
    (folder / "campaign.yaml").write_text(yaml.safe_dump(data))
    (folder / "trial.py").write_text(STUBBORN)
    env = dict(os.environ)
    env.pop("MLFLOW_TRACKING_URI", None)
    # Into a file, not a pipe: what the exit leaves running holds its copy of the descriptor.
    with open(tmp_path / "stderr", "w") as err_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tuner.cli", "run", "campaign.yaml", "--quiet"],
            cwd=folder,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err_file,
        )
    try:
        _poll(lambda: _reported(folder), "the trial did not report", proc)
        proc.send_signal(signal.SIGTERM)
        # The first stop is under way: it asked the trial to end, and waits for it.
        _poll(lambda: (folder / "term").exists(), "the trial was not asked to stop", proc)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError("tuner run still alive after a second SIGTERM") from None
        err = (tmp_path / "stderr").read_text()
        assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
        assert "SIGTERM again: exiting now" in err
    finally:  # what `tuner resume` would end: the trial that ignores SIGTERM, its warm parent
        proc.kill()
        _kill_processes_of(folder)


def _kill_processes_of(folder: Path) -> None:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if cwd == str(folder) or str(folder) in cmdline:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), signal.SIGKILL)


def _reported(folder: Path) -> bool:
    import optuna

    try:
        study = optuna.load_study(study_name="churn", storage=f"sqlite:///{folder / 'optuna.db'}")
    except Exception:  # not created yet
        return False
    return any(t.intermediate_values for t in study.get_trials(deepcopy=False))
