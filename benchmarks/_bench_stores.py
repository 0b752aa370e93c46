"""The three store kinds the query benchmark compares: a SQLite file, a PostgreSQL database,
and a real ``mlflow server`` in front of that PostgreSQL database.

Stores are migrated by MLflow itself (a child ``MlflowClient``), then filled with bulk rows
in the exact shape ``log_batch`` leaves them (see ``_mlflow_bulk.py``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PG_BASE = os.environ.get("BENCH_PG", "postgresql://postgres@127.0.0.1:5432")
Rows = Sequence[tuple[Any, ...]]


def migrate(uri: str) -> None:
    """MLflow's own migrations, in a child process (its pooled connections die with it)."""
    code = (
        "import sys; from mlflow.tracking import MlflowClient; "
        "MlflowClient(tracking_uri=sys.argv[1]).search_experiments()"
    )
    subprocess.run([sys.executable, "-c", code, uri], check=True, capture_output=True)


def pg_exists(name: str) -> bool:
    import psycopg

    with psycopg.connect(f"{PG_BASE}/postgres", autocommit=True) as conn:
        row = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
    return row is not None


def pg_create(name: str) -> str:
    """A fresh migrated MLflow database ``name`` (dropped first if it exists); its URI."""
    import psycopg

    with psycopg.connect(f"{PG_BASE}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]
        conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    uri = f"{PG_BASE}/{name}"
    migrate(uri)
    return uri


def pg_bulk_insert(
    uri: str, *, experiment: str, artifact_root: str, runs: Rows, params: Rows, metrics: Rows,
    latest: Rows, tags: Rows,
) -> str:  # fmt: skip
    """An experiment and the rows of ``_mlflow_bulk.bulk_insert`` (its ``experiment_id``
    column ignored), with COPY; returns the experiment id."""
    import psycopg

    with psycopg.connect(uri) as conn:
        exp_id = conn.execute(
            "INSERT INTO experiments (name, artifact_location, lifecycle_stage, creation_time, "
            "last_update_time) VALUES (%s, %s, 'active', 0, 0) RETURNING experiment_id",
            (experiment, artifact_root),
        ).fetchone()[0]  # type: ignore[index]
        cur = conn.cursor()
        run_cols = (
            "run_uuid, name, source_type, source_name, entry_point_name, user_id, status, "
            "start_time, end_time, source_version, lifecycle_stage, artifact_uri, experiment_id"
        )
        with cur.copy(f"COPY runs ({run_cols}) FROM STDIN") as copy:  # type: ignore[arg-type]
            for row in runs:
                copy.write_row((*row[:12], exp_id))
        for table, cols, rows in (
            ("params", "key, value, run_uuid", params),
            ("metrics", "key, value, timestamp, run_uuid, step, is_nan", metrics),
            ("latest_metrics", "key, value, timestamp, step, is_nan, run_uuid", latest),
            ("tags", "key, value, run_uuid", tags),
        ):
            with cur.copy(f"COPY {table} ({cols}) FROM STDIN") as copy:  # type: ignore[arg-type]
                for row in rows:
                    copy.write_row([bool(v) if c == "is_nan" else v
                                    for c, v in zip(cols.split(", "), row, strict=True)])  # fmt: skip
        conn.execute("ANALYZE")
    return str(exp_id)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """``mlflow server`` on 127.0.0.1 over ``backend_uri``, in its own process group."""

    def __init__(self, backend_uri: str, workdir: Path, workers: int = 4) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_TRACKING_")}
        # No job runner (its huey consumers are six more processes to start): searches only.
        env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] = "false"
        mlflow_bin = Path(sys.executable).with_name("mlflow")
        self.log = workdir / "server.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [str(mlflow_bin), "server", "--backend-store-uri", backend_uri,
                 "--default-artifact-root", str(workdir / "artifacts"), "--host", "127.0.0.1",
                 "--port", str(port), "--workers", str(workers),
                 # A worker busy with a search of 10,000 runs misses uvicorn's 5 s health
                 # check on a loaded machine and is killed mid-request without this.
                 "--uvicorn-opts", "--timeout-worker-healthcheck 300"],
                env=env, cwd=workdir, start_new_session=True, stdout=out,
                stderr=subprocess.STDOUT,
            )  # fmt: skip

    def wait_ready(self, timeout: float = 180.0) -> Server:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mlflow server exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as resp:
                    if resp.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"mlflow server did not answer /health in {timeout} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
