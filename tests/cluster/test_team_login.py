"""Two non-admin users of a real ``mlflow server --app-name basic-auth``.

The admin creates ``alice`` and ``bob`` through MLflow's auth REST API, as the cluster guide
shows. Each runs a tiny campaign (2 trials of a plain Python script) into an experiment of
their own, which the tuner creates so that its creator may write to it; each can read the
other's; writing into the other's experiment ends with one line and exit code 1.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from _services import ADMIN_PASSWORD, MlflowServer

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.timeout(300)]

SCRIPT = """
import json, os, mlflow
x = json.loads(os.environ["TUNER_PARAMS"])["x"]
mlflow.log_metric("loss", (x - 0.3) ** 2)
"""


def _api(url: str, path: str, body: dict[str, Any], auth: tuple[str, str]) -> Any:
    get = path.endswith("get-by-name")
    query = "?" + urllib.parse.urlencode(body) if get else ""
    request = urllib.request.Request(
        f"{url}/api/2.0/mlflow/{path}{query}",
        data=None if get else json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            "Authorization": "Basic " + base64.b64encode(":".join(auth).encode()).decode(),
        },
        method="GET" if get else "POST",
    )
    with urllib.request.urlopen(request, timeout=60) as resp:
        return json.loads(resp.read() or b"{}")


def _campaign(
    url: str, tmp_path: Path, user: str, password: str, experiment: str
) -> subprocess.CompletedProcess[str]:
    folder = tmp_path / f"{user}-{experiment}"
    folder.mkdir()
    (folder / "train.py").write_text(SCRIPT)
    config = folder / "campaign.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": f"{user}-{experiment}",
                "command": [sys.executable, str(folder / "train.py")],
                "target": {"metric": "loss", "goal": "minimize"},
                "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
                "reads_tuner_params": True,
                "budget": {"trials": 2},
                "storage": f"sqlite:///{folder / 'optuna.db'}",
                "lineage": {"tracking_uri": url, "experiment": experiment},
            }
        )
    )
    env = {**os.environ, "MLFLOW_TRACKING_USERNAME": user, "MLFLOW_TRACKING_PASSWORD": password}
    env.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.run(
        [sys.executable, "-m", "tuner.cli", "run", str(config), "--quiet"],
        env=env,
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_each_user_writes_their_own_experiment_and_reads_the_others(
    mlflow_server: MlflowServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.server import get_app_client

    url = mlflow_server.url
    admin = ("admin", ADMIN_PASSWORD)
    users = {"alice": "alice-password-1234", "bob": "bob-password-5678"}
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "admin")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", ADMIN_PASSWORD)
    auth = get_app_client("basic-auth", tracking_uri=url)
    for user, password in users.items():
        auth.create_user(username=user, password=password)

    ids = {}
    for user, password in users.items():
        done = _campaign(url, tmp_path, user, password, f"team-{user}")
        assert done.returncode == 0, done.stderr
        got = _api(url, "experiments/get-by-name", {"experiment_name": f"team-{user}"}, admin)
        ids[user] = got["experiment"]["experiment_id"]

    for reader, other in (("alice", "bob"), ("bob", "alice")):
        runs = _api(url, "runs/search", {"experiment_ids": [ids[other]]}, (reader, users[reader]))[
            "runs"
        ]
        finished = [r for r in runs if r["info"]["status"] == "FINISHED"]
        assert len(finished) >= 2  # the other's two trials (and their campaign run)

        done = _campaign(url, tmp_path, reader, users[reader], f"team-{other}")
        assert done.returncode == 1, done.stdout + done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
        assert lines[0] == (
            f"tuner run: error: lineage store {url}: user {reader!r} may not write to "
            f"experiment 'team-{other}' (HTTP 403); ask the server's admin for EDIT "
            "permission on it, or set lineage.experiment to one of your own"
        )
        assert users[reader] not in done.stderr + done.stdout

    # EDIT granted by the admin lets bob write into alice's experiment.
    auth.grant_user_permission("bob", "experiment", ids["alice"], "EDIT")
    bob = ("bob", users["bob"])
    run = _api(url, "runs/create", {"experiment_id": ids["alice"]}, bob)["run"]["info"]
    assert run["experiment_id"] == ids["alice"]
