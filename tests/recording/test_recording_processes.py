"""Real training-script processes: killed, interrupted, crashing, exiting, side by side.

Nothing a script logged before it died may be lost, and the run's final status must say how
it ended. Each test runs ``scripts/record.py`` as a child process on a real store.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parent / "scripts" / "record.py"


def _start(
    uri: str, mode: str, progress: Path, steps: int | None = None, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    args = [sys.executable, str(SCRIPT), mode, uri, str(progress)] + ([str(steps)] if steps else [])
    return subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _wait_for_progress(
    proc: subprocess.Popen[str], progress: Path, at_least: int, timeout: float = 60
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if progress.exists() and int(progress.read_text()) >= at_least:
            return
        if proc.poll() is not None:
            raise AssertionError(f"script exited early: {proc.communicate()}")
        time.sleep(0.05)
    raise AssertionError("script made no progress")


def _check(uri: str, proc: subprocess.Popen[str], progress: Path, status: str) -> list[int]:
    out, err = proc.communicate(timeout=180)
    run_id = out.split()[0]
    last = int(progress.read_text())
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(run_id)
    steps = sorted(m.step for m in client.get_metric_history(run_id, "loss"))
    assert run.info.status == status, err
    assert run.data.tags["lineage.outcome"] == status
    # Every point whose log call returned is stored, in order, without gaps or duplicates.
    assert steps[: last + 1] == list(range(last + 1)), (len(steps), last, err)
    assert run.info.end_time is not None
    return steps


@pytest.mark.parametrize("mode", ["with-slow", "plain-slow"])
def test_sigterm_mid_logging_loses_nothing_and_ends_killed(
    sqlite_uri: str, tmp_path: Path, mode: str
) -> None:
    progress = tmp_path / "progress"
    proc = _start(sqlite_uri, mode, progress)
    _wait_for_progress(proc, progress, 200)
    proc.send_signal(signal.SIGTERM)
    _check(sqlite_uri, proc, progress, "KILLED")
    assert proc.returncode == -signal.SIGTERM  # the parent still sees death by SIGTERM


def test_sigterm_chains_to_the_programs_own_handler(sqlite_uri: str, tmp_path: Path) -> None:
    progress = tmp_path / "progress"
    proc = _start(sqlite_uri, "with-handler-slow", progress)
    _wait_for_progress(proc, progress, 100)
    proc.send_signal(signal.SIGTERM)
    # The handler exits 0, but the run was ended by a signal: KILLED, not FINISHED.
    _check(sqlite_uri, proc, progress, "KILLED")
    assert proc.returncode == 0 and progress.with_suffix(".sig").read_text() == "handled"


def test_sigint_ends_killed(sqlite_uri: str, tmp_path: Path) -> None:
    progress = tmp_path / "progress"
    proc = _start(sqlite_uri, "with-slow", progress)
    _wait_for_progress(proc, progress, 100)
    proc.send_signal(signal.SIGINT)
    _check(sqlite_uri, proc, progress, "KILLED")
    assert proc.returncode != 0


@pytest.mark.parametrize("mode", ["with-raise", "plain-raise"])
def test_script_that_raises_ends_failed_with_everything_logged(
    store_uri: str, tmp_path: Path, mode: str
) -> None:
    progress = tmp_path / "progress"
    proc = _start(store_uri, mode, progress)
    steps = _check(store_uri, proc, progress, "FAILED")
    assert steps == list(range(121)) and proc.returncode == 1


def test_plain_call_is_flushed_and_finished_at_interpreter_exit(
    sqlite_uri: str, tmp_path: Path
) -> None:
    progress = tmp_path / "progress"
    proc = _start(sqlite_uri, "plain-exit", progress, steps=5000)
    steps = _check(sqlite_uri, proc, progress, "FINISHED")
    assert steps == list(range(5000)) and proc.returncode == 0


def test_two_processes_log_to_one_sqlite_file_at_once(sqlite_uri: str, tmp_path: Path) -> None:
    # ~3 s of logging each, a transaction every 10 ms: the two writers contend for the file lock.
    procs = [
        _start(
            sqlite_uri,
            "with-slow",
            tmp_path / f"progress{i}",
            steps=1_500,
            env={"LINEAGE_FLUSH_INTERVAL": "0.01"},
        )
        for i in range(2)
    ]
    for i, proc in enumerate(procs):
        steps = _check(sqlite_uri, proc, tmp_path / f"progress{i}", "FINISHED")
        assert steps == list(range(1_500))
        assert proc.returncode == 0


def test_script_attached_by_the_tuner_logs_into_its_run(sqlite_uri: str, tmp_path: Path) -> None:
    client = MlflowClient(tracking_uri=sqlite_uri)
    exp = client.create_experiment("campaign")
    run_id = client.create_run(exp, run_name="trial-3").info.run_id
    env = {"MLFLOW_TRACKING_URI": sqlite_uri, "MLFLOW_EXPERIMENT_ID": exp, "MLFLOW_RUN_ID": run_id}
    proc = _start("", "with-raise", tmp_path / "progress", env=env)
    out, _err = proc.communicate(timeout=180)
    assert out.split()[0] == run_id and proc.returncode == 1
    got = client.get_run(run_id)
    assert got.info.status == "RUNNING"  # left to the controller, which reads the exit code
    assert got.data.tags["lineage.outcome"] == "FAILED"
    assert got.data.tags["lineage.error"] == "RuntimeError: loss diverged"
    assert len(client.get_metric_history(run_id, "loss")) == 121
