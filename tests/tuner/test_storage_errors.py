"""A PostgreSQL database that does not exist (at run time), on the real server at
127.0.0.1:5432: `tuner run`, `resume`, `worker` and `status` say so in one line with the
``createdb`` command, exit 2, print no traceback and create nothing.

Before: `tuner run` printed SQLAlchemy's raw ``OperationalError ... (Background on this error
at: https://sqlalche.me/...)`` and `tuner resume` said there was no campaign to resume.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PG_ADMIN, PG_BASE
from tests.tuner.conftest import tuner_cli


def _databases() -> set[str]:
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        return {row[0] for row in conn.execute("SELECT datname FROM pg_database")}


def _files(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*")}


def _missing() -> str:
    name = f"tuner_missing_{uuid.uuid4().hex[:10]}"
    assert name not in _databases()
    return name


def _one_error_line(stderr: str, command: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"tuner {command}: error: "), stderr
    assert "Traceback" not in stderr and "sqlalche.me" not in stderr
    assert "OperationalError" not in stderr
    return lines[0]


@pytest.mark.parametrize("command", ["run", "resume", "worker", "status"])
def test_missing_study_database_is_named_with_createdb(
    command: str, campaign: Any, tmp_path: Path
) -> None:
    name = _missing()
    campaign(storage=f"{PG_BASE}/{name}", budget={"trials": 1})
    files = _files(tmp_path)
    flags = () if command == "status" else ("--quiet",)
    proc = tuner_cli(command, "campaign.yaml", *flags, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    line = _one_error_line(proc.stderr, command)
    assert f"storage postgresql://postgres@127.0.0.1:5432/{name}:" in line
    assert f"PostgreSQL database '{name}' does not exist on 127.0.0.1:5432" in line
    assert line.endswith(f"create it with: createdb -h 127.0.0.1 -p 5432 -U postgres {name}")
    # Nothing was made: not the database, no file (lineage store, campaign directory). Only the
    # named database is checked: other test workers create and drop theirs meanwhile.
    assert name not in _databases()
    assert _files(tmp_path) == files


def test_missing_tracking_database_is_named_with_createdb(campaign: Any, tmp_path: Path) -> None:
    name = _missing()
    campaign(budget={"trials": 1}, lineage={"tracking_uri": f"{PG_BASE}/{name}"})
    proc = tuner_cli("run", "campaign.yaml", "--quiet", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    line = _one_error_line(proc.stderr, "run")
    assert line.startswith(
        f"tuner run: error: lineage.tracking_uri postgresql://postgres@127.0.0.1:5432/{name}: "
    )
    assert line.endswith(f"create it with: createdb -h 127.0.0.1 -p 5432 -U postgres {name}")
    assert name not in _databases()


def test_storage_error_helper_for_other_commands() -> None:
    """What `tuner status` (or any caller) uses: `check_storage` raises the same one line."""
    from tuner.search._study import StorageUnavailable, check_storage

    name = _missing()
    with pytest.raises(StorageUnavailable) as info:
        check_storage(f"{PG_ADMIN.rsplit('/', 1)[0]}/{name}")
    assert info.value.exit_code == 2
    assert f"createdb -h 127.0.0.1 -p 5432 -U postgres {name}" in str(info.value)
    # A server that does not answer is a runtime failure (exit 1), named as such.
    with pytest.raises(StorageUnavailable) as info:
        check_storage("postgresql://postgres@127.0.0.1:1/optuna")
    assert info.value.exit_code == 1 and "connection refused" in str(info.value)
    check_storage(PG_ADMIN)  # an existing database: no error


def test_opening_the_study_waits_for_a_server_with_no_session_to_spare(monkeypatch) -> None:
    # PostgreSQL at max_connections refuses every new session until some client closes one:
    # the open waits for that (a server that is not there is still reported within seconds).
    import sqlalchemy.exc

    import tuner.search._resilient as resilient
    from tuner.search._study import create_rdb

    tries: list[int] = []

    def full_then_free(open_storage, url):  # type: ignore[no-untyped-def]
        tries.append(1)
        if len(tries) <= 6:  # more than the two seconds a dropped connection is retried
            raise sqlalchemy.exc.OperationalError(
                "connect", {}, Exception("FATAL:  sorry, too many clients already")
            )
        return "opened"

    monkeypatch.setattr(resilient, "starting", full_then_free)
    monkeypatch.setattr("time.sleep", lambda _s: None)
    assert create_rdb("postgresql://postgres@127.0.0.1:5432/x") == "opened"
    assert len(tries) == 7
