"""Fixtures of the store tests.

``sample`` logs the sample runs once per session and backend (logging them per test would
cost seconds each); tests that write get their own fresh store from ``store_uri``.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest
from _store_sample import Logged, log_sample_runs

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
PG_BASE = "postgresql://postgres@127.0.0.1:5432"


@pytest.fixture(
    scope="session", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def sample(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Logged:
    """The sample runs in a session-wide store. Read it, never write it."""
    base = tmp_path_factory.mktemp(f"sample-{request.param}")
    if request.param == "sqlite":
        template: Path = request.getfixturevalue("_sqlite_template")
        shutil.copyfile(template, base / "mlflow.db")
        uri = f"sqlite:///{base / 'mlflow.db'}"
    else:
        import psycopg

        template_db: str = request.getfixturevalue("_pg_template")
        made: list[str] = request.getfixturevalue("_pg_databases")
        name = f"lt_sample_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template_db}"')  # type: ignore[arg-type]
        made.append(name)
        uri = f"{PG_BASE}/{name}"
    return log_sample_runs(uri, base / "artifacts")
