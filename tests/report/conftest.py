"""One real MLflow SQLite store of hand-run (plain ``mlflow``) runs for the report tests,
made once per session; tests that write to it take a copy."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest


@pytest.fixture(scope="session")
def _report_template(_sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Experiment ``hand``: 14 finished runs (lr, optimizer, width; ``loss`` over 4 steps and
    a final ``cost``), one FAILED run, and one run without ``loss``."""
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    path = tmp_path_factory.mktemp("report-store") / "mlflow.db"
    shutil.copyfile(_sqlite_template, path)
    client = MlflowClient(tracking_uri=f"sqlite:///{path}")
    exp = client.create_experiment("hand", artifact_location=(path.parent / "a").as_uri())
    rng = np.random.default_rng(3)
    for i in range(16):
        lr = float(10 ** rng.uniform(-4, 0))
        opt = ["sgd", "adam", "momentum"][i % 3]
        width = int(rng.integers(8, 129))
        final = (math.log10(lr) + 2) ** 2 + {"sgd": 1.0, "adam": 0.0, "momentum": 0.5}[opt]
        run = client.create_run(exp, run_name=f"hand-{i}", start_time=1_000 * (i + 1))
        params = [Param("lr", repr(lr)), Param("optimizer", opt), Param("width", str(width))]
        params.append(Param("batch_size", "32"))  # constant: not drawn
        metrics = [] if i == 15 else [
            Metric("loss", final + 1.0 / (s + 1), 1_000 * (i + 1) + s, s) for s in range(4)
        ]  # fmt: skip
        metrics.append(Metric("cost", width / 128 + lr, 0, 0))
        client.log_batch(run.info.run_id, metrics=metrics, params=params)
        client.set_terminated(run.info.run_id, "FAILED" if i == 14 else "FINISHED")
    return path


@pytest.fixture(scope="session")
def report_store(_report_template: Path) -> str:
    """The store, read-only: the tests that only read share it."""
    return f"sqlite:///{_report_template}"


@pytest.fixture
def report_store_copy(_report_template: Path, tmp_path: Path) -> str:
    dest = tmp_path / "mlflow.db"
    shutil.copyfile(_report_template, dest)
    return f"sqlite:///{dest}"
