"""``tuner`` whose lineage records meet a full spool: the tracking server goes away and the
spool's disk is full.

argv: the tuner CLI's own (``run c.yaml``). The campaign's ``lineage.tracking_uri`` is a
``sqlite:///`` store that stands behind a fake ``mlflow server``: the recorder writes through
lineage's real `SpoolingWriter`, whose inner writer answers (into the SQLite store) until it
has stored two FINISHED trial runs, then refuses every record as a server that went away
would (`TransientError`; run creation still answers, so the next trial starts). The spool's
disk is full at its write layer: its journal's ``os.fsync`` raises ENOSPC (this machine cannot mount a
small file system for a fast test; ``test_disk_full.py`` mounts a real one). Nothing else in
the process is changed.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any

import lineage._recording._journal as journal
import tuner.records._recorder as recorder
from lineage.recording import Batch, SpoolingWriter, TransientError, WriteResult, sql_writer
from tuner.cli import main


class _FullDisk:
    """The spool journal module's ``os``: every journal ``fsync`` finds no space left."""

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    @staticmethod
    def fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")


class _Server:
    """The server behind the spool: the SQLite store until two trial runs are FINISHED."""

    def __init__(self, uri: str) -> None:
        from mlflow.tracking import MlflowClient

        self.uri = uri
        self.store = sql_writer(uri)
        self.client = MlflowClient(tracking_uri=uri)
        self.finished = 0

    def _up(self) -> None:
        if self.finished >= 2:
            raise TransientError("tracking server http://tracking.test:5000: HTTP 503")

    def write(self, run_id: str, batch: Batch) -> WriteResult:
        self._up()
        assert self.store is not None
        return self.store.write(run_id, batch)

    def set_status(self, run_id: str, status: str, end_time: int | None) -> bool:
        self._up()
        assert self.store is not None
        done = self.store.set_status(run_id, status, end_time)
        if status == "FINISHED":  # a trial's (the campaign run ends last)
            self.finished += 1
        return done

    def set_name(self, run_id: str, name: str) -> bool:
        self._up()
        self.client.update_run(run_id, name=name)
        return True

    def create_run(
        self,
        experiment_id: str,
        *,
        tags: dict[str, str],
        run_name: str | None = None,
        start_time: int | None = None,
    ) -> str:
        run = self.client.create_run(
            experiment_id, start_time=start_time, tags=tags, run_name=run_name
        )
        return str(run.info.run_id)

    def find_run(self, experiment_id: str, tag: str, value: str) -> str | None:
        return None

    def close(self) -> None:
        if self.store is not None:
            self.store.close()


journal.os = _FullDisk()  # type: ignore[assignment]
recorder.open_sql_writer = lambda uri: None
recorder.open_http_writer = lambda uri: SpoolingWriter(
    _Server(uri),  # type: ignore[arg-type]
    "http://tracking.test:5000",
)
sys.exit(main(sys.argv[1:]))
