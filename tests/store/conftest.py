"""Fixtures of the store tests.

``sample`` logs the sample runs once per session and backend (logging them per test would
cost seconds each); tests that write get their own fresh store from ``store_uri``. The
``http`` backend is one real ``mlflow server`` over a PostgreSQL database, launched when
the first store test starts (it takes tens of seconds to come up) and waited for only when
a test needs it.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from _server import Server
from _store_sample import Logged, log_sample_runs

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
PG_BASE = "postgresql://postgres@127.0.0.1:5432"


def _pg_clone(request: pytest.FixtureRequest, prefix: str) -> str:
    import psycopg

    template_db: str = request.getfixturevalue("_pg_template")
    made: list[str] = request.getfixturevalue("_pg_databases")
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template_db}"')  # type: ignore[arg-type]
    made.append(name)
    return f"{PG_BASE}/{name}"


def _uses_http(request: pytest.FixtureRequest) -> bool:
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("sample") == "http":
            return True
    return False


@pytest.fixture(scope="session")
def _http_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server | None]:
    """The session's ``mlflow server`` (launched, not yet ready), or None if no test needs it."""
    if not _uses_http(request):
        yield None
        return
    server = Server(_pg_clone(request, "lt_srv_store"), tmp_path_factory.mktemp("mlflow-server"))
    yield server
    server.stop()


@pytest.fixture(scope="session", autouse=True)
def _launch_early(_http_server: Server | None) -> None:
    """Start the server with the first store test, so that it comes up meanwhile."""


@pytest.fixture(
    scope="session",
    params=[
        "sqlite",
        pytest.param("postgresql", marks=pytest.mark.postgres),
        pytest.param("http", marks=pytest.mark.postgres),
    ],
)
def sample(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Logged:
    """The sample runs in a session-wide store. Read it, never write it.

    Logged once per backend and session: pytest sets a parametrized session fixture up again
    when its tests are not contiguous (the ``http`` server still holds the first runs)."""
    if request.param not in _LOGGED:
        _LOGGED[request.param] = _log_sample(request, tmp_path_factory)
    return _LOGGED[request.param]


_LOGGED: dict[str, Logged] = {}


def _log_sample(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Logged:
    base = tmp_path_factory.mktemp(f"sample-{request.param}")
    if request.param == "http":
        server: Server = request.getfixturevalue("_http_server")
        return log_sample_runs(server.wait_ready(), base / "artifacts")
    if request.param == "sqlite":
        template: Path = request.getfixturevalue("_sqlite_template")
        shutil.copyfile(template, base / "mlflow.db")
        uri = f"sqlite:///{base / 'mlflow.db'}"
    else:
        uri = _pg_clone(request, "lt_sample")
    return log_sample_runs(uri, base / "artifacts")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """MlflowClient reading through the server is MLflow's own code, already read by the
    REST store's tests and by MLflow's: only the REST reader runs on the ``http`` sample."""
    dropped = []
    for item in items:
        params = getattr(item, "callspec", None)
        if (
            params
            and params.params.get("sample") == "http"
            and params.params.get("store") == "client"
        ):
            dropped.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]
