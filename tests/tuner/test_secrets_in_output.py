"""A trial that prints its secrets: they must not reach the output-tail artifact, the MLflow
``tuner.fail_reason`` tag, or the Optuna ``fail_reason`` attribute."""

from __future__ import annotations

import pytest

from tests.tuner.conftest import mlflow_runs, trials_of

FLAG_SECRET = "flag-secret-Zq81"
ENV_SECRET = "env-secret-Wp42"
PROCESS_SECRET = "proc-secret-Kd77"
URI_PASSWORD = "uri-pass-Hm35"

SCRIPT = """
import os, sys
print("argv:", " ".join(sys.argv))
print("env:", os.environ["DB_TOKEN"], os.environ["MLFLOW_TRACKING_PASSWORD"])
print("dsn: postgresql://me:" + "uri-pass-Hm35" + "@db.example/x")
print("last stdout", sys.argv[-1], file=sys.stdout)
print("fatal: cannot log in with", os.environ["DB_TOKEN"], file=sys.stderr)
sys.exit(4)
"""


def test_secrets_printed_by_a_failing_trial_are_masked(
    campaign, run_campaign, sqlite_uri, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", PROCESS_SECRET)
    config = campaign(
        SCRIPT,
        command=[sys.executable, "trial.py", "--x", "{x}", "--db-password", FLAG_SECRET],
        env={"DB_TOKEN": ENV_SECRET},
        budget={"trials": 1, "max_failures": 5},
    )
    result = run_campaign(config)
    assert result.counts["FAIL"] == 1
    secrets = (FLAG_SECRET, ENV_SECRET, PROCESS_SECRET, URI_PASSWORD)

    (trial,) = trials_of(config)
    reason = trial.user_attrs["fail_reason"]
    assert reason.startswith("exit code 4: fatal: cannot log in with ****")
    assert not any(s in reason for s in secrets)

    client = MlflowClient(tracking_uri=sqlite_uri)
    (run,) = [r for r in mlflow_runs(sqlite_uri) if r.info.status == "FAILED"]
    tag = run.data.tags["tuner.fail_reason"]
    assert tag == reason
    path = client.download_artifacts(run.info.run_id, "tuner/output_tail.txt")
    with open(path) as f:
        tail = f.read()
    # The output is there, with each secret replaced.
    assert "argv:" in tail and "--db-password ****" in tail
    assert "postgresql://me:****@db.example/x" in tail and "fatal: cannot log in" in tail
    assert not any(s in tail for s in secrets), tail


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_validate_prints_no_secret(campaign, cli, fmt: str) -> None:
    import sys

    config = campaign(
        command=[sys.executable, "trial.py", "--x", "{x}", "--db-password", FLAG_SECRET],
        env={"DB_TOKEN": ENV_SECRET, "DSN": f"postgresql://me:{URI_PASSWORD}@db/x"},
        storage=f"postgresql://me:{URI_PASSWORD}@db.example/optuna",
    )
    rc, out, err = cli("validate", str(config.source_path), "--format", fmt)
    assert rc == 0, err
    assert "--db-password" in out and "****" in out
    assert not any(s in out + err for s in (FLAG_SECRET, ENV_SECRET, URI_PASSWORD)), out


def test_status_error_masks_storage_password(campaign, cli, tmp_path) -> None:
    config = campaign(storage=f"sqlite:///{tmp_path / 'none.db'}?token={URI_PASSWORD}")
    rc, out, err = cli("status", str(config.source_path))
    assert rc == 2
    assert "token=****" in err and URI_PASSWORD not in out + err
