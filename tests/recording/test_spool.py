"""The local spool without a server: a full disk, a torn journal, a dead process's journal.

The server outage itself (a real ``mlflow server`` stopped and started) is
``tests/cluster/test_mlflow_outage.py``. A full disk is simulated at the write layer
(``os.fsync`` raising ENOSPC in the script's process), which reaches each journal write;
``tests/tuner/test_disk_full.py`` fills a real tmpfs under a whole campaign.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from lineage import TransientError
from lineage._recording._spool import SpoolingWriter, spool_dir
from lineage._recording._writer import Batch, WriteResult

FULL_DISK = """
import errno, os
import lineage

def full(fd):
    raise OSError(errno.ENOSPC, "No space left on device")

os.fsync = full  # the write layer: every journal append fails as on a full disk
with lineage.start_run(record_identity=False) as run:
    for i in range(100):
        run.log_metric("loss", 1.0 / (i + 1), step=i)
"""


def _closed_port_uri() -> str:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # nothing listens: connection refused at once


def test_a_full_spool_is_one_line_and_exit_1(tmp_path: Path, python: str) -> None:
    uri = _closed_port_uri()
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": uri,
        "MLFLOW_RUN_ID": uuid.uuid4().hex,
        "LINEAGE_SPOOL_DIR": str(tmp_path / "spool"),
    }
    done = subprocess.run(
        [python, "-c", FULL_DISK], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    folder = next((tmp_path / "spool").iterdir())
    assert not [p for p in folder.glob("*.jsonl") if p.stat().st_size]  # nothing half-written
    assert last.startswith(f"lineage: spool {folder}/")
    assert ".jsonl: no space left on the device; needs " in last
    assert "bytes free (has " in last
    errors = [line for line in done.stderr.splitlines() if "no space" in line]
    assert errors == [last]


class _Server:
    """A stand-in for the http writer: down until ``up``, then applies what it gets."""

    def __init__(self) -> None:
        self.up = False
        self.applied: list[tuple[str, Any]] = []

    def write(self, run_id: str, batch: Batch) -> WriteResult:
        if not self.up:
            raise TransientError("connection refused")
        self.applied.append((run_id, list(batch.points)))
        return WriteResult()

    def set_status(self, run_id: str, status: str, end_time: int | None) -> bool:
        if not self.up:
            raise TransientError("connection refused")
        self.applied.append((run_id, status))
        return True

    def close(self) -> None:
        pass


def test_journal_of_a_dead_process_is_delivered_in_order_and_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LINEAGE_SPOOL_DIR", str(tmp_path))
    uri = "http://tracking.example:5000"
    folder = spool_dir(uri)
    folder.mkdir(parents=True)
    ops = [
        {"op": "batch", "run": "r1", "points": [["loss", 0.5, 1, 0]], "params": {}, "tags": {}},
        {"op": "batch", "run": "r1", "points": [["loss", 0.25, 2, 1]], "params": {}, "tags": {}},
        {"op": "status", "run": "r1", "status": "FINISHED", "end_time": 3},
    ]
    text = "".join(json.dumps(op) + "\n" for op in ops) + '{"op": "batch", "run"'  # torn
    (folder / "1-999-abcdef.jsonl").write_text(text)

    server = _Server()
    writer = SpoolingWriter(server, uri)  # type: ignore[arg-type]
    writer.write("r2", Batch(points=[("acc", 0.9, 5, 0)]))  # down: kept in its own journal
    assert writer.down and writer.journal is not None and not server.applied
    server.up = True
    assert writer.sync(force=True)
    assert server.applied == [
        ("r2", [("acc", 0.9, 5, 0)]),
        ("r1", [("loss", 0.5, 1, 0)]),
        ("r1", [("loss", 0.25, 2, 1)]),
        ("r1", "FINISHED"),
    ]
    assert not list(folder.glob("*.jsonl"))
    writer.write("r2", Batch(points=[("acc", 0.95, 6, 1)]))  # up again: straight through
    assert server.applied[-1] == ("r2", [("acc", 0.95, 6, 1)])


class _DeletedRunServer(_Server):
    """Up, but ``gone`` was deleted while its records waited: the server refuses them."""

    def __init__(self, gone: str) -> None:
        super().__init__()
        self.up = True
        self.gone = gone

    def set_status(self, run_id: str, status: str, end_time: int | None) -> bool:
        from lineage._recording._http import HttpError

        if run_id == self.gone:
            raise HttpError("HTTP 400 INVALID_PARAMETER_VALUE: run is deleted", "", 400)
        return super().set_status(run_id, status, end_time)


def test_a_record_refused_for_good_is_skipped_and_the_rest_delivered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("LINEAGE_SPOOL_DIR", str(tmp_path))
    uri = "http://tracking.example:5000"
    folder = spool_dir(uri)
    folder.mkdir(parents=True)
    ops = [
        {"op": "status", "run": "pruned", "status": "KILLED", "end_time": 1},
        {"op": "status", "run": "parent", "status": "FINISHED", "end_time": 2},
    ]
    (folder / "1-999-abcdef.jsonl").write_text("".join(json.dumps(op) + "\n" for op in ops))

    server = _DeletedRunServer("pruned")
    writer = SpoolingWriter(server, uri)  # type: ignore[arg-type]
    with caplog.at_level("WARNING", logger="lineage"):
        assert writer._drain_others() == 2
    assert server.applied == [("parent", "FINISHED")]  # the parent is not held back
    assert not list(folder.glob("*.jsonl"))
    refused = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refused) == 1 and "status record of run pruned" in refused[0]


def test_a_login_refusal_keeps_the_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lineage._recording._http import HttpError

    class _Forbidden(_Server):
        def set_status(self, run_id: str, status: str, end_time: int | None) -> bool:
            raise HttpError("HTTP 403 PERMISSION_DENIED", "PERMISSION_DENIED", 403)

    monkeypatch.setenv("LINEAGE_SPOOL_DIR", str(tmp_path))
    uri = "http://tracking.example:5000"
    folder = spool_dir(uri)
    folder.mkdir(parents=True)
    op = {"op": "status", "run": "r1", "status": "FINISHED", "end_time": 2}
    (folder / "1-999-abcdef.jsonl").write_text(json.dumps(op) + "\n")
    writer = SpoolingWriter(_Forbidden(), uri)  # type: ignore[arg-type]
    assert writer._drain_others() == 0
    assert list(folder.glob("*.jsonl"))  # waits for a login that may write
