"""Bad input to a campaign, met as the user meets it: the real ``tuner`` command (or a trial
script) in a child process prints one line naming the file or variable, the field, the rule
and the value, exits 2, shows no traceback, and makes nothing (no study, no store, no run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

CAMPAIGN = {
    "name": "bad",
    "command": [sys.executable, "trial.py"],
    "reads_tuner_params": True,
    "target": {"metric": "loss", "goal": "minimize"},
    "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
    "budget": {"trials": 1},
    "resources": {"kind": "cpu", "parallel": 1},
}

SCRIPT = """
from tuner import trial
trial.report(0, loss=trial.params().get("x", 0.0))
"""

SCHEMES = (
    "sqlite:, postgresql:, mysql:, mssql:, http:, https:, file:, databricks:, databricks-uc:, uc:"
)


def _folder(tmp_path: Path, **overrides: object) -> Path:
    (tmp_path / "trial.py").write_text(SCRIPT)
    (tmp_path / "campaign.yaml").write_text(yaml.safe_dump({**CAMPAIGN, **overrides}))
    return tmp_path


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LINEAGE_", "MLFLOW_", "TUNER_", "OPTUNA_"))
    }
    return subprocess.run(
        argv, cwd=cwd, env={**clean, **env}, capture_output=True, text=True, timeout=120
    )


def _tuner(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, "-m", "tuner.cli", command, "campaign.yaml"], cwd, env)


def _refused(done: subprocess.CompletedProcess[str], line: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert done.stderr.splitlines() == [line]


def _nothing_made(folder: Path) -> None:
    assert sorted(p.name for p in folder.iterdir()) == ["campaign.yaml", "trial.py"]


@pytest.mark.parametrize("command", ["run", "validate"])
def test_a_lineage_variable_the_trials_would_refuse_stops_the_command(
    tmp_path: Path, command: str
) -> None:
    folder = _folder(tmp_path)
    done = _tuner(command, folder, {"LINEAGE_FLUSH_TIMEOUT": "x"})
    rule = "must be a number of seconds > 0"
    _refused(done, f"tuner {command}: error: LINEAGE_FLUSH_TIMEOUT {rule}, got 'x'")
    _nothing_made(folder)


def test_a_lineage_variable_in_the_config_env_is_refused_by_name(tmp_path: Path) -> None:
    folder = _folder(tmp_path, env={"LINEAGE_FLUSH_INTERVAL": "0"})
    done = _tuner("run", folder, {})
    _refused(
        done,
        "tuner run: error: campaign.yaml: env.LINEAGE_FLUSH_INTERVAL must be a number of "
        "seconds > 0, got '0'.",
    )
    _nothing_made(folder)


@pytest.mark.parametrize("command", ["run", "validate"])
def test_a_tracking_uri_of_unknown_scheme_stops_the_command(tmp_path: Path, command: str) -> None:
    folder = _folder(tmp_path)
    done = _tuner(command, folder, {"MLFLOW_TRACKING_URI": "bogus://me:s3cret@host/x"})
    _refused(
        done,
        f"tuner {command}: error: MLFLOW_TRACKING_URI must be a path or start with one of "
        f"{SCHEMES}; got scheme 'bogus:' in 'bogus://me:****@host/x'",
    )
    assert "s3cret" not in done.stdout + done.stderr
    _nothing_made(folder)


@pytest.mark.parametrize("command", ["run", "validate"])
def test_a_change_me_placeholder_left_by_tuner_init_is_refused(
    tmp_path: Path, command: str
) -> None:
    folder = _folder(tmp_path, command=["CHANGE-ME-no-command-was-recorded"])
    done = _tuner(command, folder, {})
    _refused(
        done,
        f"tuner {command}: error: campaign.yaml: command[0] holds a CHANGE-ME placeholder left "
        "by tuner init; replace it with the command that trains one run, passing each "
        "parameter as a {name} placeholder, got 'CHANGE-ME-no-command-was-recorded'.",
    )
    _nothing_made(folder)


def test_a_trial_script_given_bad_params_says_so_in_one_line(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    done = _run([sys.executable, "trial.py"], folder, {"TUNER_PARAMS": "{bad"})
    _refused(done, "tuner: TUNER_PARAMS must hold a JSON object, got '{bad'")


def test_validate_json_says_a_refused_variable_is_invalid(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    argv = [sys.executable, "-m", "tuner.cli", "validate", "campaign.yaml", "--format", "json"]
    done = _run(argv, folder, {"LINEAGE_SPOOL_WAIT": "soon"})
    message = "LINEAGE_SPOOL_WAIT must be a number of seconds >= 0, got 'soon'"
    _refused(done, f"tuner validate: error: {message}")
    assert json.loads(done.stdout) == {"valid": False, "error": message}
