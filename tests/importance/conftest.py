"""Fixtures of the importance tests: one real MLflow store filled by plain ``mlflow`` calls,
made once per session and copied per test."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

_LOGGER = r"""
import math, sys
import numpy as np
import mlflow

mlflow.set_tracking_uri(sys.argv[1])
rng = np.random.default_rng(7)
mlflow.set_experiment("bowl")
for i in range(48):
    lr = float(10 ** rng.uniform(-5, 0))
    opt = ["sgd", "adam", "momentum"][int(rng.integers(3))]
    seed = int(rng.integers(0, 1000))
    y = (math.log10(lr) + 2.5) ** 2 + {"sgd": 2.0, "adam": 0.0, "momentum": 1.0}[opt]
    params = {"lr": lr, "optimizer": opt, "seed": seed, "batch_size": 32}
    if opt == "momentum":
        params["momentum"] = float(rng.uniform(0.5, 0.99))
    with mlflow.start_run(run_name=f"trial-{i}"):
        mlflow.log_params(params)
        mlflow.log_metrics({"loss": y + 0.05 * float(rng.normal()), "flat": 1.0})
mlflow.set_experiment("small")
for i in range(5):
    with mlflow.start_run():
        mlflow.log_params({"lr": 0.1 * (i + 1)})
        mlflow.log_metric("loss", float(i))
"""


@pytest.fixture(scope="session")
def _mlflow_template(_sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite store holding runs logged with plain ``mlflow`` (params as strings)."""
    path = tmp_path_factory.mktemp("importance-store") / "mlflow.db"
    shutil.copyfile(_sqlite_template, path)
    subprocess.run(
        [sys.executable, "-c", _LOGGER, f"sqlite:///{path}"],
        check=True,
        capture_output=True,
        cwd=path.parent,
    )
    return path


@pytest.fixture
def mlflow_uri(_mlflow_template: Path, tmp_path: Path) -> str:
    """A fresh copy of the plain-mlflow store: experiments ``bowl`` (48 runs) and ``small`` (5)."""
    dest = tmp_path / "mlflow.db"
    shutil.copyfile(_mlflow_template, dest)
    return f"sqlite:///{dest}"
