"""Stores other than SQL (here MLflow's file store) are read through MlflowClient."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _cli_helpers import lineage

pytestmark = pytest.mark.slow


def test_runs_and_show_on_a_file_store(tmp_path: Path) -> None:
    code = (
        "import mlflow\n"
        "mlflow.set_experiment('files')\n"
        "with mlflow.start_run(run_name='f') as r:\n"
        "    mlflow.log_params({'lr': 0.3, 'opt': 'sgd'})\n"
        "    mlflow.log_metric('loss', 0.9, step=0); mlflow.log_metric('loss', 0.4, step=1)\n"
        "print(r.info.run_id)\n"
    )
    env = {**os.environ, "MLFLOW_TRACKING_URI": "file:./mlruns", "MLFLOW_ALLOW_FILE_STORE": "true"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    run_id = out.stdout.strip().splitlines()[-1]
    uri = (tmp_path / "mlruns").as_uri()
    runs = json.loads(
        lineage(
            "runs", "--tracking-uri", uri, "--where", "params.lr > 0.2", "--format", "json"
        ).stdout
    )
    assert [(r["run_id"], r["metrics"]) for r in runs] == [(run_id, {"loss": 0.4})]
    shown = json.loads(
        lineage("show", run_id[:8], "--tracking-uri", uri, "--format", "json").stdout
    )
    assert shown["metrics"][0]["min"] == 0.4 and shown["metrics"][0]["max"] == 0.9
    missing = lineage("runs", "--tracking-uri", (tmp_path / "nope").as_uri(), check=False)
    assert missing.returncode == 2 and "does not exist" in missing.stderr
