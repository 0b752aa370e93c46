"""Fixtures shared by the whole suite.

Expensive things are made once per session and copied or cloned per test:
- one MLflow SQLite store with the schema already migrated (copying the file is ~1 ms,
  migrating a new one ~5 s);
- one PostgreSQL template database with the MLflow schema; each test gets a fresh database
  cloned from it (``CREATE DATABASE ... TEMPLATE``), dropped at the end of the session.
Every test runs in its own temporary working directory, so a default ``sqlite:///mlflow.db``
or ``./mlruns`` never lands in the repository.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# pytest-xdist's workers start with COLUMNS=80 in their environment, which every CLI the
# tests start would take for a terminal's width: the tests run as a pipe does (no COLUMNS),
# and those that check a width set their own.
os.environ.pop("COLUMNS", None)

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
PG_BASE = "postgresql://postgres@127.0.0.1:5432"

# Every `mlflow server` the tests start (directly or through `lineage ui`) inherits this:
# MLflow 3's GenAI job runner (eight huey consumer processes) is no part of what is tested,
# and on two cores it doubles each server's start-up.
os.environ.setdefault("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture
def seed() -> int:
    return 20261202


@pytest.fixture(autouse=True)
def _isolated_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for var in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID", "TUNER_PARAMS"):
        monkeypatch.delenv(var, raising=False)


def _migrate(uri: str) -> None:
    # In a child process, so that MLflow's pooled connections are gone when it returns
    # (PostgreSQL refuses to clone a template database that has open sessions).
    code = (
        "import sys; from mlflow.tracking import MlflowClient; "
        "MlflowClient(tracking_uri=sys.argv[1]).search_experiments()"
    )
    subprocess.run([sys.executable, "-c", code, uri], check=True, capture_output=True)


@pytest.fixture(scope="session")
def _sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mlflow-template") / "mlflow.db"
    _migrate(f"sqlite:///{path}")
    return path


@pytest.fixture
def sqlite_uri(tmp_path: Path, _sqlite_template: Path) -> str:
    """A fresh, migrated MLflow SQLite store in this test's directory."""
    dest = tmp_path / "mlflow.db"
    shutil.copyfile(_sqlite_template, dest)
    return f"sqlite:///{dest}"


def _pg_exec(sql: str) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(sql)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def _pg_databases() -> Iterator[list[str]]:
    """Databases made during the session; the last is dropped first (templates go last)."""
    made: list[str] = []
    yield made
    for db in reversed(made):
        _pg_exec(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


@pytest.fixture(scope="session")
def _pg_template(_pg_databases: list[str]) -> str:
    name = f"lt_tmpl_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    _pg_exec(f'CREATE DATABASE "{name}"')
    _pg_databases.append(name)
    _migrate(f"{PG_BASE}/{name}")
    return name


@pytest.fixture
def postgres_uri(_pg_template: str, _pg_databases: list[str]) -> Iterator[str]:
    """A fresh, migrated MLflow store in its own PostgreSQL database (127.0.0.1:5432),
    dropped when the test ends: the idle pooled sessions this process keeps to it (MLflow
    caches a store and its engine per address) end with it, instead of adding up over the
    session to the server's ``max_connections``."""
    name = f"lt_{uuid.uuid4().hex[:12]}"
    # A template must have no open connections while it is cloned; migration closed its own.
    _pg_exec(f'CREATE DATABASE "{name}" TEMPLATE "{_pg_template}"')
    _pg_databases.append(name)
    yield f"{PG_BASE}/{name}"
    _pg_exec(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_uri(request: pytest.FixtureRequest) -> str:
    """Each contract test runs once per SQL backend."""
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_uri"))
    return str(request.getfixturevalue("postgres_uri"))


@pytest.fixture
def python() -> str:
    """The interpreter running the tests, for subprocess trials and scripts."""
    return sys.executable


# Under pytest-xdist (`pytest -n 2`, the default in pyproject.toml) each worker is its own
# session. Tests that share an expensive session resource are grouped onto one worker, so the
# resource is still made once per run: one Ray cluster and one MLflow server ("services"), one
# MindSpore import, one recorded MindSpore run set, and so on. Cheap templates are per worker.
# The tests of one module that share a module-scoped fixture (a server, a campaign, a store of
# wide runs) are grouped too: split over both workers, each worker would make it again.
_PER_WORKER = {"_sqlite_template", "_pg_template", "_pg_databases"}
_SERVICES = {"_launched", "ray_cluster_address"}


# Shared fixtures that run real trainings as subprocesses (several MindSpore imports, a
# Lightning and a Trainer run): the first test to use one pays for it, which on a loaded
# 2-core machine can pass the suite's 300 s per-test limit. Such tests get 900 s.
_TRAININGS = {"provoked", "summaries", "autolog_uri", "digits_runs", "quickstart_run"}


# Before xdist's own hook, which reads the group marks each worker sends its controller.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _TRAININGS & set(getattr(item, "fixturenames", ())) and not item.get_closest_marker(
            "timeout"
        ):
            item.add_marker(pytest.mark.timeout(900))
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        shared = set()
        per_module = False
        for name in info.names_closure:
            defs = info.name2fixturedefs.get(name)
            if not defs or name in _PER_WORKER:
                continue
            fixture = defs[-1]
            if fixture.scope == "session" and fixture.baseid.startswith("tests"):
                shared.add(name)
            elif fixture.scope == "module" and fixture.baseid.startswith("tests"):
                per_module = True
        if item.get_closest_marker("ray"):
            # A test may take the cluster through `request.getfixturevalue` (the executor
            # contract's Ray backend), out of `names_closure`: the mark puts it beside the rest.
            shared.add("ray_cluster_address")
        if shared:
            group = "services" if shared & _SERVICES else min(shared)
            item.add_marker(pytest.mark.xdist_group(group))
        elif per_module and not item.get_closest_marker("xdist_group"):
            # One group per test module (a module-scoped fixture is made once per module).
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


def pytest_configure(config: pytest.Config) -> None:
    """Refuse a pytest whose node ids pytest-xdist 3.8 cannot suffix with the ``@group`` its
    loadgroup scheduler reads (pytest 9.2 and later): the groups would be ignored and every
    worker would start its own Ray cluster and MLflow servers."""
    if config.getoption("dist", None) == "loadgroup" and pytest.version_tuple[:2] >= (9, 2):
        raise pytest.UsageError(
            f"pytest {pytest.__version__} makes --dist loadgroup ignore the suite's xdist_group "
            "marks: install the dev extra's pytest (pip install 'pytest>=8,<9.2')"
        )
