"""`tuner resume` asks whether a campaign exists: "no" only when the storage holds no such
study; a storage that cannot be read is an error, never "no campaign"."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml

from tuner.config import load_config
from tuner.status import study_exists


def _config(tmp: Path, name: str, storage: Path) -> Any:
    data = {
        "name": name,
        "command": [sys.executable, "trial.py", "--x", "{x}"],
        "target": {"metric": "loss", "goal": "minimize"},
        "parameters": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "budget": {"trials": 1},
        "storage": f"sqlite:///{storage}",
    }
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_config(path, check_options=False)


def test_a_campaign_exists_only_once_its_study_is_stored(tmp_path: Path) -> None:
    db = tmp_path / "optuna.db"
    here, other = _config(tmp_path, "here", db), _config(tmp_path, "other", db)
    assert not study_exists(here)  # no database file yet
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.create_study(study_name=here.study_name, storage=f"sqlite:///{db}")
    assert study_exists(here)
    assert not study_exists(other)


def test_a_storage_that_cannot_be_read_is_an_error_not_no_campaign(tmp_path: Path) -> None:
    db = tmp_path / "optuna.db"
    db.write_bytes(b"this is not a database, " * 100)
    with pytest.raises(Exception, match="not a database"):
        study_exists(_config(tmp_path, "here", db))
