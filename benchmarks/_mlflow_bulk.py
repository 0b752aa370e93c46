"""Bulk rows into a migrated MLflow SQLite store, in the shape ``log_batch`` writes them.

The benchmarks build stores of thousands of runs; MLflow's own API would take minutes. Each
caller reads one run back through ``MlflowClient`` to prove the store is genuine.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

Rows = Sequence[tuple[Any, ...]]


def bulk_insert(
    path: str | Path, *, runs: Rows, params: Rows, metrics: Rows, latest: Rows, tags: Rows
) -> None:
    """Insert rows into ``runs`` (13 columns, as below), ``params`` (key, value, run),
    ``metrics`` (key, value, timestamp, run, step, is_nan), ``latest_metrics`` (key, value,
    timestamp, step, is_nan, run) and ``tags`` (key, value, run), in one transaction."""
    with sqlite3.connect(path) as db:
        db.executemany(
            "INSERT INTO runs (run_uuid, name, source_type, source_name, entry_point_name, "
            "user_id, status, start_time, end_time, source_version, lifecycle_stage, "
            "artifact_uri, experiment_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            runs,
        )
        db.executemany("INSERT INTO params (key, value, run_uuid) VALUES (?,?,?)", params)
        db.executemany(
            "INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) "
            "VALUES (?,?,?,?,?,?)",
            metrics,
        )
        db.executemany(
            "INSERT INTO latest_metrics (key, value, timestamp, step, is_nan, run_uuid) "
            "VALUES (?,?,?,?,?,?)",
            latest,
        )
        db.executemany("INSERT INTO tags (key, value, run_uuid) VALUES (?,?,?)", tags)
