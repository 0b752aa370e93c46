"""A read-only command never writes MLflow's tables into someone else's database."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from lineage import UsageError
from lineage.store import open_store


def _tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


@pytest.fixture
def optuna_db(tmp_path: Path) -> Path:
    path = tmp_path / "optuna.db"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.create_study(storage=f"sqlite:///{path}")
    return path


def test_open_store_refuses_a_foreign_database(optuna_db: Path) -> None:
    before = _tables(optuna_db)
    with pytest.raises(UsageError, match="is not an MLflow tracking store"):
        open_store(f"sqlite:///{optuna_db}")
    assert _tables(optuna_db) == before


def test_cli_on_a_foreign_database_is_one_line_exit_2(optuna_db: Path) -> None:
    before = _tables(optuna_db)
    out = subprocess.run(
        [sys.executable, "-m", "lineage.cli", "runs", "--tracking-uri", f"sqlite:///{optuna_db}"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "not an MLflow tracking store" in out.stderr
    assert "runs" not in _tables(optuna_db) and _tables(optuna_db) == before
