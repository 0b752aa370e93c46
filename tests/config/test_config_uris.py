"""Store URLs: the schemes ``tuner validate`` accepts, and one line instead of SQLAlchemy's
error when a database cannot be opened, on the real PostgreSQL."""

from __future__ import annotations

import shlex
import subprocess
import uuid
import warnings
from collections.abc import Iterator

import pytest

from tuner.config import explain_storage_error
from tuner.config._uris import _TRACKING_PLAIN, TRACKING_SCHEMES


def _open_optuna(url: str) -> BaseException:
    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            optuna.storages.RDBStorage(url)
        except Exception as exc:  # the very exception `tuner run` used to print raw
            return exc
    raise AssertionError(f"{url} opened")


@pytest.fixture
def missing_db() -> Iterator[str]:
    name = f"lt_missing_{uuid.uuid4().hex[:10]}"
    yield name
    subprocess.run(["dropdb", "--if-exists", "-h", "127.0.0.1", "-U", "postgres", name])


@pytest.mark.postgres
def test_missing_database_is_named_with_the_command_that_creates_it(missing_db: str) -> None:
    url = f"postgresql://postgres:hunter2@127.0.0.1:5432/{missing_db}"
    line = explain_storage_error(_open_optuna(url), url)
    assert line == (
        f"storage postgresql://postgres:****@127.0.0.1:5432/{missing_db}: PostgreSQL database "
        f"'{missing_db}' does not exist on 127.0.0.1:5432; create it with: "
        f"createdb -h 127.0.0.1 -p 5432 -U postgres {missing_db}"
    )
    assert "hunter2" not in line and "\n" not in line
    # The advice works: run it as written, and the same URL opens.
    command = line.split("create it with: ", 1)[1]
    subprocess.run(shlex.split(command), check=True, capture_output=True, timeout=60)
    import optuna

    optuna.storages.RDBStorage(url).engine.dispose()


@pytest.mark.postgres
def test_missing_database_through_sqlalchemy_and_for_the_tracking_store(missing_db: str) -> None:
    import sqlalchemy

    url = f"postgresql+psycopg://postgres@127.0.0.1/{missing_db}"
    engine = sqlalchemy.create_engine(url)
    with pytest.raises(sqlalchemy.exc.OperationalError) as info:
        engine.connect()
    engine.dispose()
    line = explain_storage_error(info.value, url, "lineage.tracking_uri")
    assert line is not None
    assert line.startswith(f"lineage.tracking_uri {url}: PostgreSQL database '{missing_db}'")
    assert line.endswith(f"createdb -h 127.0.0.1 -p 5432 -U postgres {missing_db}")


def test_refused_connection() -> None:
    url = "postgresql://tuner:s3cret@127.0.0.1:1/optuna"
    line = explain_storage_error(_open_optuna(url), url)
    assert line == (
        "storage postgresql://tuner:****@127.0.0.1:1/optuna: cannot connect to PostgreSQL at "
        "127.0.0.1:1 (connection refused); is the server running there?"
    )


def test_unknown_scheme_names_the_supported_ones() -> None:
    url = "mongodb://x/y"
    line = explain_storage_error(_open_optuna(url), url)
    assert line == (
        "storage mongodb://x/y: SQLAlchemy has no driver for mongodb://; use sqlite:///, "
        "postgresql:// or postgresql+psycopg://"
    )


def test_other_errors_are_left_to_the_caller() -> None:
    try:
        raise RuntimeError("disk full")
    except RuntimeError as exc:
        assert explain_storage_error(exc, "sqlite:///x.db") is None


def test_tracking_schemes_are_the_ones_mlflow_registers() -> None:
    from mlflow.tracking._tracking_service.utils import _tracking_store_registry

    registered = set(_tracking_store_registry._registry) - {""}
    assert registered == set(TRACKING_SCHEMES) | set(_TRACKING_PLAIN)
