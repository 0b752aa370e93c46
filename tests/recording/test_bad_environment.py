"""A recording script started with a bad environment: one line naming the variable, the rule
and the value, exit status 2, no traceback, and no run created or left RUNNING.

Each case runs a real script (or the ``lineage`` command) in a child process on a real store.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

SCRIPT = """
import lineage
with lineage.start_run(experiment="bad-env") as run:
    run.log_metric("loss", 1.0, step=0)
"""


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LINEAGE_", "MLFLOW_"))}
    return subprocess.run(
        argv, cwd=cwd, env={**clean, **env}, capture_output=True, text=True, timeout=120
    )


def _refused(done: subprocess.CompletedProcess[str], line: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [line]


def _statuses(uri: str) -> list[str]:
    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    return [r.info.status for r in runs]


@pytest.mark.parametrize(
    ("name", "value", "rule"),
    [
        ("LINEAGE_FLUSH_INTERVAL", "x", "a number of seconds > 0"),
        ("LINEAGE_FLUSH_TIMEOUT", "-1", "a number of seconds > 0"),
        ("LINEAGE_HTTP_IN_FLIGHT", "0", "a whole number >= 1"),
        ("LINEAGE_SPOOL_WAIT", "soon", "a number of seconds >= 0"),
        ("LINEAGE_SQL_WRITER", "maybe", "one of 1, true, yes, on, 0, false, no, off"),
    ],
)
def test_a_refused_lineage_variable_creates_no_run(
    sqlite_uri: str, tmp_path: Path, name: str, value: str, rule: str
) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    done = _run(
        [sys.executable, str(script)], tmp_path, {"MLFLOW_TRACKING_URI": sqlite_uri, name: value}
    )
    _refused(done, f"lineage: {name} must be {rule}, got {value!r}")
    assert _statuses(sqlite_uri) == []  # the store exists; no run was made in it


def test_an_unknown_mlflow_run_id_is_one_line(sqlite_uri: str, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = {"MLFLOW_TRACKING_URI": sqlite_uri, "MLFLOW_RUN_ID": "0" * 32}
    done = _run([sys.executable, str(script)], tmp_path, env)
    _refused(done, f"lineage: MLFLOW_RUN_ID names no run in {sqlite_uri}, got '{'0' * 32}'")
    assert _statuses(sqlite_uri) == []


SCHEMES = (
    "sqlite:, postgresql:, mysql:, mssql:, http:, https:, file:, databricks:, databricks-uc:, uc:"
)


def test_a_tracking_uri_of_unknown_scheme_is_one_line(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    uri = "bogus://user:s3cret@host/x"
    rule = f"must be a path or start with one of {SCHEMES}; got scheme 'bogus:' in"
    masked = "'bogus://user:****@host/x'"
    for argv, prefix in (
        ([sys.executable, str(script)], "lineage: "),
        ([sys.executable, "-m", "lineage.cli", "runs"], "lineage runs: error: "),
    ):
        done = _run(argv, tmp_path, {"MLFLOW_TRACKING_URI": uri})
        _refused(done, f"{prefix}MLFLOW_TRACKING_URI {rule} {masked}")
        assert "s3cret" not in done.stdout + done.stderr
    done = _run(
        [sys.executable, "-m", "lineage.cli", "show", "abc", "--tracking-uri", uri], tmp_path, {}
    )
    _refused(done, f"lineage show: error: tracking URI {rule} {masked}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]  # no store was made
