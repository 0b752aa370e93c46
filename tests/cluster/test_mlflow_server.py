"""A real ``mlflow server`` on PostgreSQL with MLflow's basic-auth app, as the lineage store."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from _services import ADMIN_PASSWORD, MlflowServer

from tuner.records import CredentialsError, check_tracking_access

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def _status(url: str, auth: tuple[str, str] | None) -> int:
    request = urllib.request.Request(
        f"{url}/api/2.0/mlflow/experiments/search",
        data=json.dumps({"max_results": 1}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    if auth:
        request.add_header(
            "Authorization", "Basic " + base64.b64encode(":".join(auth).encode()).decode()
        )
    try:
        with urllib.request.urlopen(request, timeout=60) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_server_requires_login(mlflow_server: MlflowServer) -> None:
    assert _status(mlflow_server.url, None) == 401
    assert _status(mlflow_server.url, ("admin", "not-the-password")) == 401
    assert _status(mlflow_server.url, ("admin", ADMIN_PASSWORD)) == 200


def test_access_check_gives_one_line_without_the_password(
    mlflow_server: MlflowServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_USERNAME", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_PASSWORD", raising=False)
    with pytest.raises(CredentialsError, match=r"requires a login .*MLFLOW_TRACKING_USERNAME"):
        check_tracking_access(mlflow_server.url)
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "admin")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "wrong-password-123")
    with pytest.raises(CredentialsError) as info:
        check_tracking_access(mlflow_server.url)
    message = str(info.value)
    assert "rejected the credentials of user 'admin' (HTTP 401)" in message
    assert "wrong-password-123" not in message and "\n" not in message
    assert info.value.exit_code == 2
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", ADMIN_PASSWORD)
    check_tracking_access(mlflow_server.url)


def test_lineage_records_into_the_server(
    mlflow_server: MlflowServer, mlflow_credentials: dict[str, str]
) -> None:
    from mlflow.tracking import MlflowClient

    import lineage

    with lineage.start_run(
        experiment="cluster-lineage",
        params={"optimizer": {"name": "sgd", "lr": 0.1}},
        tracking_uri=mlflow_server.url,
    ) as run:
        run.log_metric("loss", 0.5, step=1)
        run.log_metric("loss", 0.25, step=2)
        run_id = run.run_id
    got = MlflowClient(tracking_uri=mlflow_server.url).get_run(run_id)
    assert got.data.params["optimizer.lr"] == "0.1"
    assert got.data.metrics["loss"] == 0.25
    recorded = json.dumps([got.data.params, got.data.tags])
    assert ADMIN_PASSWORD not in recorded


@pytest.mark.parametrize("command", ["worker", "run"])
def test_cli_with_a_wrong_password_prints_one_line(
    mlflow_server: MlflowServer, tmp_path: Path, command: str
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "auth",
                "command": [sys.executable, "-c", "pass"],
                "target": {"metric": "loss", "goal": "minimize"},
                "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
                "reads_tuner_params": True,  # else a warning line: x reaches no argv
                "budget": {"trials": 1},
                "storage": f"sqlite:///{tmp_path / 'optuna.db'}",
                "lineage": {"tracking_uri": mlflow_server.url},
            }
        )
    )
    env = {
        **os.environ,
        "MLFLOW_TRACKING_USERNAME": "admin",
        "MLFLOW_TRACKING_PASSWORD": "wrong-password-456",
    }
    done = subprocess.run(
        [sys.executable, "-m", "tuner.cli", command, str(config), "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert lines[0].startswith(f"tuner {command}: error: lineage.tracking_uri: ")
    assert "rejected the credentials of user 'admin' (HTTP 401)" in lines[0]
    assert "wrong-password-456" not in done.stderr + done.stdout
    if command == "worker":
        assert not (tmp_path / "optuna.db").exists()  # checked before anything started
