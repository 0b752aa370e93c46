"""``lineage importance`` on a campaign's experiment, recorded as the tuner records it (a
``lineage.run_type=campaign`` run with one ``space.<name>`` param per tuned parameter, trial
runs tagged ``tuner.campaign``), in a real MLflow SQLite store."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from lineage.cli import main

ARGS = ["importance", "-e", "quickstart", "--target", "val_accuracy", "--goal", "maximize"]


@pytest.fixture(scope="module")
def _campaign_template(_sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from mlflow.tracking import MlflowClient

    path = tmp_path_factory.mktemp("campaign-store") / "mlflow.db"
    shutil.copyfile(_sqlite_template, path)
    client = MlflowClient(tracking_uri=f"sqlite:///{path}")
    exp = client.create_experiment("quickstart", artifact_location=(path.parent / "a").as_uri())
    parent = client.create_run(
        exp, tags={"lineage.run_type": "campaign", "tuner.campaign": "quickstart"}
    )
    space = {
        "lr": {"type": "float", "low": 1e-3, "high": 0.5, "log": True},
        "optimizer": {"type": "categorical", "choices": ["sgd", "momentum", "adam"]},
        "momentum": {"type": "float", "low": 0.5, "high": 0.99},
        "batch_size": {"type": "int", "low": 16, "high": 128, "step": 16},
    }
    for name, spec in space.items():
        client.log_param(parent.info.run_id, f"space.{name}", json.dumps(spec))
    client.log_param(parent.info.run_id, "budget.trials", "16")
    rng = np.random.default_rng(5)
    for i in range(16):
        lr = float(10 ** rng.uniform(-3, math.log10(0.5)))
        opt = ["sgd", "adam"][i % 2]  # no trial drew optimizer=momentum
        batch = int(16 * rng.integers(1, 9))
        acc = 0.9 + 0.05 * (math.log10(lr) + 1.65) / 0.78 + 0.03 * float(rng.normal())
        run = client.create_run(
            exp,
            run_name=f"quickstart-trial-{i}",
            tags={
                "lineage.run_type": "trial",
                "tuner.campaign": "quickstart",
                "mlflow.parentRunId": parent.info.run_id,
            },
        )
        params = {
            "lr": lr,
            "optimizer": opt,
            "batch_size": batch,
            # what LineageCallback records beside them: the same lr, the class, the data
            "optimizer.lr": lr,
            "optimizer.name": {"sgd": "SGD", "adam": "Adam"}[opt],
            "dataset.train_size": 1437,
            "seed": i * 7919 % 1000,
        }
        for k, v in params.items():
            client.log_param(run.info.run_id, k, v)
        client.log_metric(run.info.run_id, "val_accuracy", acc)
        client.set_terminated(run.info.run_id)
    client.set_terminated(parent.info.run_id)
    return path


@pytest.fixture
def campaign_uri(_campaign_template: Path, tmp_path: Path) -> str:
    dest = tmp_path / "mlflow.db"
    shutil.copyfile(_campaign_template, dest)
    return f"sqlite:///{dest}"


def _run(capsys: pytest.CaptureFixture[str], uri: str, *args: str) -> tuple[int, str, str]:
    rc = main([*args, "--tracking-uri", uri])
    out, err = capsys.readouterr()
    return rc, out, err


def test_default_is_the_campaigns_tuned_parameters(
    capsys: pytest.CaptureFixture[str], campaign_uri: str
) -> None:
    rc, out, err = _run(capsys, campaign_uri, *ARGS, "--format", "json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["n_runs"] == 16
    assert {p["name"] for p in doc["params"]} == {"lr", "optimizer", "batch_size"}
    assert doc["params"][0]["name"] == "lr" and doc["params"][0]["significant"]
    assert doc["never_active"] == ["momentum"]
    assert doc["dropped"]["momentum"] == "never active in the 16 runs"
    assert "campaign quickstart" in doc["param_source"]
    assert doc["excluded_runs"] == {"campaign runs": 1}


def test_table_names_the_never_active_parameter(
    capsys: pytest.CaptureFixture[str], campaign_uri: str
) -> None:
    rc, out, _ = _run(capsys, campaign_uri, *ARGS)
    assert rc == 0
    assert "momentum: never active in the 16 runs" in out
    assert "tuned by campaign quickstart" in out


def test_explicit_params_with_a_never_active_one_exit_0(
    capsys: pytest.CaptureFixture[str], campaign_uri: str
) -> None:
    rc, out, err = _run(
        capsys, campaign_uri, *ARGS, "--params", "lr", "optimizer", "momentum", "--format", "json"
    )
    assert rc == 0, err
    assert json.loads(out)["never_active"] == ["momentum"]
    rc, out, err = _run(capsys, campaign_uri, *ARGS, "--params", "lr", "momentun")
    assert rc == 2 and out == ""
    assert "did you mean 'momentum'?" in err and err.count("\n") == 1


def test_every_parameter_merges_identical_ones(
    capsys: pytest.CaptureFixture[str], campaign_uri: str
) -> None:
    rc, out, err = _run(
        capsys,
        campaign_uri,
        *ARGS,
        "--params",
        "lr",
        "optimizer.lr",
        "optimizer",
        "optimizer.name",
        "seed",
        "--format",
        "json",
    )
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["aliases"] == {"lr": ["optimizer.lr"], "optimizer": ["optimizer.name"]}
    names = [p["name"] for p in doc["params"]]
    assert "optimizer.lr" not in names and names[0] == "lr"
    rc, out, _ = _run(capsys, campaign_uri, *ARGS, "--params", "lr", "optimizer.lr", "seed")
    assert "lr (= optimizer.lr)" in out
    assert "aliases: lr = optimizer.lr" in out
