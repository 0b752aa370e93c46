"""MLflow opens its SQL stores through `lineage.store._schema_lock`: a new store's schema is
created under the lock; an up-to-date store opens without it (no lock file is written)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lineage.store import schema_lock
from lineage.store._schema_lock import tracking_store

pytestmark = pytest.mark.slow


def test_a_new_store_is_made_under_the_lock_and_an_old_one_opens_without_it(
    tmp_path: Path,
) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    lock = tmp_path / "mlflow.db.schema-lock"
    store = tracking_store(uri, str(tmp_path / "artifacts"))
    assert lock.exists()  # the schema was created under it
    assert store.get_experiment("0").name == "Default"
    lock.unlink()
    again = tracking_store(uri, str(tmp_path / "artifacts"))
    assert again.get_experiment("0").name == "Default"
    assert not lock.exists()  # nothing to create: no lock taken, no file written


def test_the_lock_is_held_by_one_holder_at_a_time(tmp_path: Path) -> None:
    import fcntl

    uri = f"sqlite:///{tmp_path / 'optuna.db'}"
    with schema_lock(uri, "optuna"), open(tmp_path / "optuna.db.schema-lock", "a+b") as other:
        refused = False
        try:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            refused = True
        assert refused  # another holder (even in this process) waits
    with open(tmp_path / "optuna.db.schema-lock", "a+b") as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released at the block's end


def test_a_store_in_memory_or_behind_a_server_takes_no_lock(tmp_path: Path) -> None:
    for uri in ("sqlite://", "sqlite:///:memory:", "http://127.0.0.1:1"):
        with schema_lock(uri, "mlflow"):
            pass
    assert list(tmp_path.iterdir()) == []
