"""One store logged by plain ``mlflow`` for the whole CLI session (read-only in tests)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _cli_helpers import PlainStore

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def plain_store(tmp_path_factory: pytest.TempPathFactory, _sqlite_template: Path) -> PlainStore:
    base = tmp_path_factory.mktemp("plain-mlflow")
    shutil.copyfile(_sqlite_template, base / "mlflow.db")
    uri = f"sqlite:///{base / 'mlflow.db'}"
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri}
    out = subprocess.run(
        [sys.executable, str(HERE / "_plain_mlflow.py"), str(base / "files")],
        cwd=base,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return PlainStore(uri, json.loads(out.stdout.strip().splitlines()[-1]))
