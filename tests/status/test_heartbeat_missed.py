"""Heartbeat writes a controller could not make reach `tuner status`: the count, where, when
and the last error, read by SQL (text and JSON) as the controller stored them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import optuna
import yaml

from lineage.trials import MISSED_ATTR


def _campaign(tmp: Path) -> Path:
    data = {
        "name": "beats",
        "command": [sys.executable, "trial.py", "--x", "{x}"],
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "budget": {"trials": 1},
        "storage": f"sqlite:///{tmp / 'optuna.db'}",
    }
    path = tmp / "beats.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _status(config: Path, *extra: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tuner.cli", "status", str(config), *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_missed_heartbeats_are_shown_by_tuner_status(tmp_path: Path) -> None:
    config = _campaign(tmp_path)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name="beats", storage=f"sqlite:///{tmp_path / 'optuna.db'}")
    assert "heartbeat" not in _status(config)
    record = {"count": 3, "last": "trial id 1: OperationalError: database is locked", "at": "T"}
    study._storage.set_study_system_attr(study._study_id, f"{MISSED_ATTR}:node-a:4242", record)
    text = _status(config)
    assert "heartbeat: 3 write(s) failed on node-a:4242 (last at T: trial id 1: " in text
    assert json.loads(_status(config, "--format", "json"))["heartbeat_missed"] == {
        "node-a:4242": record
    }
