"""A stopped controller's last records on a locked SQLite store: kept in lineage's spool, not
dropped, and delivered by the next tuner process before it closes what was left open."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from tuner.records import LineageRecorder

pytestmark = pytest.mark.slow


def _written(recorder: LineageRecorder) -> None:
    """Wait until every write queued so far is made."""
    done = threading.Event()
    recorder.call(lambda _client: done.set())
    assert done.wait(30)


def _journals(root: Path) -> list[Path]:
    return sorted(root.glob("*/*.jsonl"))


def test_records_past_the_deadline_wait_in_the_spool(sqlite_uri, tmp_path, monkeypatch, caplog):
    spool = tmp_path / "spool"
    monkeypatch.setenv("LINEAGE_SPOOL_DIR", str(spool))
    first = LineageRecorder(sqlite_uri, "late", "camp")
    first.start(parent_run_id=None, params={"lr": "0.1"}, tags={})
    ended, cut = first.reserve_run(), first.reserve_run()
    for number, run_id in enumerate((ended, cut)):
        first.trial_started(
            run_id,
            number=number,
            attempt=1,
            params={"x": number},
            argv=["trial.py"],
            env={},
            device="cpu:0",
            sampler="random",
        )
    _written(first)

    # Another process holds the database: nothing the controller writes from now lands.
    holder = sqlite3.connect(sqlite_uri.removeprefix("sqlite:///"), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        first.trial_metrics(ended, [("loss", 0.25, 3, time.time())])
        first.trial_finished(
            ended, status="FINISHED", tags={"tuner.state": "COMPLETE"}, output_tail="tail"
        )
        t0 = time.monotonic()
        first.close("KILLED", tags={"tuner.stop_reason": "stopped"}, wait=1.0)
        assert time.monotonic() - t0 < 30  # bounded: it does not wait for the lock
        (journal,) = _journals(spool)
        assert "wait in" in caplog.text and journal.name in caplog.text
    finally:
        holder.execute("ROLLBACK")
        holder.close()

    # The next process on the store (`tuner resume` starts its recorder so) delivers them
    # first, then closes what is still open: the trial that ended keeps its own end.
    second = LineageRecorder(sqlite_uri, "late", "camp")
    second.start(
        parent_run_id=first.parent_run_id,
        params={},
        tags={},
        reconcile="interrupted: the controller stopped while the trial ran",
    )
    second.close("FINISHED")
    assert _journals(spool) == []
    client = MlflowClient(tracking_uri=sqlite_uri)
    done = client.get_run(ended)
    assert done.info.status == "FINISHED"
    assert done.data.tags["tuner.state"] == "COMPLETE"
    assert [(m.step, m.value) for m in client.get_metric_history(ended, "loss")] == [(3, 0.25)]
    killed = client.get_run(cut)  # running at the stop: ended as interrupted, once
    assert killed.info.status == "KILLED" and killed.data.tags["tuner.state"] == "FAIL"
    parent = client.get_run(first.parent_run_id)
    assert parent.data.tags["tuner.stop_reason"] == "stopped"
    assert parent.info.status == "FINISHED"  # the second controller's own end
