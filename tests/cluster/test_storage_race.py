"""Optuna creates its tables on the first use of an empty database; clients that race to do
so (a worker starting while `tuner status` or a notebook opens the study) must all get a
storage."""

from __future__ import annotations

import threading

import pytest

from tuner.search._study import create_rdb

pytestmark = pytest.mark.postgres


def test_clients_racing_to_create_the_tables_all_get_a_storage(pg_storage: str) -> None:
    # Stock RDBStorage fails here with a duplicate key on PostgreSQL's catalog (seen in 9 of
    # 12 racing constructions); the worker's kill -9 test once died of it.
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def open_one() -> None:
        start.wait()
        try:
            create_rdb(pg_storage).get_all_studies()
        except BaseException as exc:  # collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
