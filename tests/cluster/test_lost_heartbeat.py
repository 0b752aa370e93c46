"""A worker frozen past the heartbeat grace loses its trial to a second worker; when it wakes
it stops that trial's process at once, instead of training a copy nobody will count. Two real
``tuner worker`` processes on one PostgreSQL study."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

SCRIPT = """
import os, pathlib, sys, time
from tuner import trial
first = pathlib.Path("first.pid")
if not first.exists():  # the first attempt: waits until it is stopped (or 120 s pass)
    first.write_text(str(os.getpid()))
    deadline = time.time() + 120
    while time.time() < deadline:
        time.sleep(0.05)
    pathlib.Path("first.finished").touch()
trial.report(0, loss=0.5)
"""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def _wait(condition: Any, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _worker(tmp_path: Path, log: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    argv = [sys.executable, "-m", "tuner.cli", "worker", "c.yaml"]
    argv += ["--heartbeat", "1", "--stale-after", "3"]
    return subprocess.Popen(
        argv, cwd=tmp_path, env=env, stdout=open(tmp_path / log, "wb"), stderr=subprocess.STDOUT
    )


def test_a_worker_whose_trial_was_requeued_stops_its_process_at_once(
    tmp_path: Path, pg_storage: str
) -> None:
    (tmp_path / "trial.py").write_text(SCRIPT)
    config = {
        "name": "lost",
        "command": [sys.executable, "trial.py"],
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "budget": {"trials": 1, "max_failures": 3},
        "trial": {"grace_period": 1},
        "pruner": {"name": "none"},
        "diagnosis": {"early_stop": False},
        "storage": pg_storage,
        "lineage": {"tracking_uri": f"sqlite:///{tmp_path / 'mlflow.db'}"},
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    a = _worker(tmp_path, "a.log")
    pid_file = tmp_path / "first.pid"
    _wait(lambda: pid_file.exists() and pid_file.read_text(), "the first trial to start")
    first = int(pid_file.read_text())
    # Freeze A only while its recorder is idle: frozen inside a write, it would hold the
    # SQLite lineage store's lock and stall B for reasons that have nothing to do with this.
    journal = tmp_path / "mlflow.db-journal"
    quiet = [time.monotonic()]

    def recorder_idle() -> bool:
        if journal.exists():
            quiet[0] = time.monotonic()
        return time.monotonic() - quiet[0] > 1.5

    _wait(recorder_idle, "worker A's recorder to be idle")
    b = None
    try:
        os.kill(a.pid, signal.SIGSTOP)  # no heartbeats from A from now on
        b = _worker(tmp_path, "b.log")
        assert b.wait(timeout=180) == 0, (tmp_path / "b.log").read_text()
        assert _alive(first)  # B re-queued and finished the copy; A's process still trains
    finally:
        os.kill(a.pid, signal.SIGCONT)
    _wait(lambda: not _alive(first), "worker A to stop its lost trial", timeout=60)
    assert not (tmp_path / "first.finished").exists()
    assert a.wait(timeout=120) == 0, (tmp_path / "a.log").read_text()
    said = (tmp_path / "a.log").read_text()
    assert "another worker re-queued it (its heartbeat went stale)" in said, said
