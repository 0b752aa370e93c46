"""The local spool: where records wait while the tracking server is away.

A :class:`SpoolingWriter` wraps the writer of an ``http(s)://`` store. While the server answers
it passes every call through. The first call that fails for a reason that may pass (refused
connection, timeout, HTTP 5xx/429) makes it *down*: one warning line, and from then on every
write, status, rename and run creation is appended to this process's journal in the spool, in
order, and the call returns at once. Every few seconds (and whenever the recorder is idle) it
replays the journal; when the whole journal is in the store it deletes it, says so in one line
and goes back to passing calls through.

Where: ``$LINEAGE_SPOOL_DIR`` (the tuner points its trials at the campaign's), else
``~/.cache/lineage/spool``; one folder per tracking server (a hash of its address), one
journal per process: ``<time ns>-<pid>-<random>.jsonl``.

Crash safety: a journal is append-only JSON lines, each ``fsync``-ed before the call returns;
a torn last line (the process died mid-write) is skipped. The process writing a journal holds
an exclusive ``flock`` on it; any other process writing to the same server replays journals
nobody holds (a process that died) and deletes them, so records survive the process too.

Exactly once: replaying is idempotent. A metric point is ``(key, timestamp, step, value)``
and MLflow's SQL store keeps one row per point (its primary key): a request applied whose
answer was lost, sent again, stores nothing twice. Params are sent only where the run has none
of that name; tags and statuses are set in journal order (the last wins, as it did live). A
run created while the server was away gets a provisional id and the tag
``lineage.spool_id=<provisional id>``; replay looks for a run with that tag before creating
one, so a creation is never made twice.

A full disk: :class:`SpoolFullError` (a :class:`~lineage.StoreError`, exit code 1) naming the
journal and the free space needed; nothing half-written stays in the journal.
"""

from __future__ import annotations

import fcntl
import logging
import threading
import time
import uuid
from pathlib import Path
from typing import Any, cast

from lineage import environment
from lineage._errors import LineageError, StoreError, TransientError
from lineage._recording._http import HttpError, HttpWriter
from lineage._recording._journal import (
    Journal,
    SpoolFullError,
    batch_op,
    read_ops,
    spool_dir,
    spool_root,
)
from lineage._recording._writer import Batch, Writer, WriteResult

__all__ = [
    "SPOOL_TAG",
    "JournalWriter",
    "SpoolFullError",
    "SpoolingWriter",
    "drain",
    "spool_dir",
    "spool_root",
]

log = logging.getLogger("lineage.recording")

SPOOL_TAG = "lineage.spool_id"
_RETRY_MIN_S = 0.5
_RETRY_MAX_S = 5.0


class SpoolingWriter(Writer):
    """``inner`` while the server answers, the spool while it does not. Used from one thread
    at a time (the recorder's, or the tuner's lineage thread)."""

    kind = "mlflow-http+spool"

    def __init__(self, inner: HttpWriter, uri: str, *, root: Path | None = None) -> None:
        from lineage.uri import masked

        self.inner = inner
        self.uri = uri
        self.directory = spool_dir(uri, root)
        self.down = False
        self.delivered = 0  # ops replayed from journals
        self._shown = masked(uri)
        self._journal = Journal(self.directory, self._shown)
        self._replayed = 0  # ops of our own journal already in the store
        self._ids: dict[str, str] = {}  # provisional run id -> the server's
        self._next_try = 0.0
        self._retry_s = _RETRY_MIN_S
        # The tuner creates runs from its controller thread while its lineage thread writes.
        self._busy = threading.RLock()
        self._others_checked = False
        self._warned = False

    # -- state ------------------------------------------------------------------------------
    def go_down(self, exc: BaseException) -> None:
        if not self.down:
            self.down = True
            self._retry_s = _RETRY_MIN_S
            self._next_try = time.monotonic() + self._retry_s
        if not self._warned:
            self._warned = True
            log.warning(
                "lineage: tracking server %s unreachable (%s); records wait in the spool %s "
                "and are sent when it is back",
                self._shown,
                str(exc)[:200],
                self.directory,
            )

    def run_id(self, run_id: str) -> str:
        """The server's id of ``run_id`` (itself unless it was created in the spool)."""
        return self._ids.get(run_id, run_id)

    @property
    def journal(self) -> Path | None:
        return self._journal.path

    # -- Writer ----------------------------------------------------------------------------
    def write(self, run_id: str, batch: Batch) -> WriteResult:
        with self._busy:
            return self._write(run_id, batch)

    def _write(self, run_id: str, batch: Batch) -> WriteResult:
        if not self.down and not self._others_checked:
            self._others_checked = True
            self._drain_others()
        if not self.down:
            try:
                return self.inner.write(self.run_id(run_id), batch)
            except TransientError as exc:
                self.go_down(exc)
        self._append(batch_op(run_id, batch))
        self.sync()
        return WriteResult()

    def set_status(self, run_id: str, status: str, end_time: int | None) -> bool:
        return self._call({"op": "status", "run": run_id, "status": status, "end_time": end_time})

    def set_name(self, run_id: str, name: str) -> bool:
        return self._call({"op": "name", "run": run_id, "name": name})

    def _call(self, op: dict[str, Any]) -> bool:
        with self._busy:
            return self._call_locked(op)

    def _call_locked(self, op: dict[str, Any]) -> bool:
        if not self.down:
            try:
                self._apply(op)
                return True
            except TransientError as exc:
                self.go_down(exc)
        self._append(op)
        return True

    def create_spooled(
        self,
        *,
        experiment: str,
        by_name: bool,
        run_name: str | None,
        tags: dict[str, str],
        start_time: int,
    ) -> str:
        """A provisional run id; the run is created when the journal is replayed."""
        local = uuid.uuid4().hex
        self._append(
            {
                "op": "create",
                "run": local,
                "experiment": experiment,
                "by_name": by_name,
                "run_name": run_name,
                "tags": {**tags, SPOOL_TAG: local},
                "start_time": start_time,
            }
        )
        return local

    def create_run(
        self,
        experiment_id: str,
        *,
        tags: dict[str, str],
        run_name: str | None = None,
        start_time: int | None = None,
        timeout: float | None = None,
    ) -> str:
        """A run created on the server now, waiting while it is away (up to ``timeout``, default
        ``$LINEAGE_SPOOL_CREATE_WAIT`` or 600 s, then :class:`~lineage.TransientError`): a
        caller that must hand the run id to another process cannot take a provisional one.
        Created once: a retry after a lost answer finds the run by its ``lineage.spool_id``."""
        if timeout is None:
            timeout = environment.spool_create_wait()
        local = uuid.uuid4().hex
        tags = {**tags, SPOOL_TAG: local}
        deadline = time.monotonic() + timeout
        sent = False
        while True:
            try:
                found = self.inner.find_run(experiment_id, SPOOL_TAG, local) if sent else None
                sent = True
                run_id = found or self.inner.create_run(
                    experiment_id, run_name=run_name, tags=tags, start_time=start_time
                )
                break
            except TransientError as exc:
                self.go_down(exc)
                if time.monotonic() >= deadline:
                    raise
                time.sleep(self._retry_s)
                self._retry_s = min(self._retry_s * 2, _RETRY_MAX_S)
        return run_id  # the recorder's thread delivers the journal, if any

    def sync(self, *, force: bool = False) -> bool:
        """Replay the journal if the server may be back; True when nothing waits."""
        with self._busy:
            return self._sync(force)

    def _sync(self, force: bool) -> bool:
        if not self.down:
            return True
        now = time.monotonic()
        if not force and now < self._next_try:
            return False
        path = self._journal.path
        if path is None or not read_ops(path)[self._replayed :]:
            # Nothing waits: the next call tries the server itself (no line: nothing to say).
            self.down = False
            self._journal.close(delete=True)
            return True
        try:
            self._replay_own()
        except TransientError:
            self._retry_s = min(self._retry_s * 2, _RETRY_MAX_S)
            self._next_try = time.monotonic() + self._retry_s
            return False
        self.down = False
        self._warned = False
        log.warning(
            "lineage: tracking server %s is back; %d spooled records delivered",
            self._shown,
            self._replayed,
        )
        self._journal.close(delete=True)
        self._drain_others()
        return True

    def wait(self, timeout: float) -> bool:
        """Replay until the journal is delivered or ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        while not self.sync(force=True):
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(self._retry_s, max(0.0, deadline - time.monotonic())))
        return True

    def close(self) -> None:
        """Try once more; what is still undelivered stays in the journal for the next process."""
        wait = environment.spool_wait()
        delivered = self.wait(wait) if self.down else True
        if not delivered and self._journal.path is not None:
            log.warning(
                "lineage: tracking server %s still unreachable; %s keeps the unsent records, "
                "delivered by the next lineage process writing to it "
                "(or: python -m lineage.recording drain %s)",
                self._shown,
                self._journal.path,
                self._shown,
            )
            self._journal.close(delete=False)
        self.inner.close()

    # -- journal ----------------------------------------------------------------------------
    def _append(self, op: dict[str, Any]) -> None:
        if self._journal.append(op):
            self._replayed = 0  # a new journal file: nothing of it is in the store yet

    def _replay_own(self) -> None:
        path = self._journal.path
        if path is None:
            return
        ops = read_ops(path)
        for op in ops[self._replayed :]:
            self._apply_or_skip(op, path)
            self._replayed += 1
            self.delivered += 1

    def _drain_others(self) -> int:
        """Replay the journals no live process holds; the number delivered."""
        done = 0
        if not self.directory.is_dir():
            return 0
        for path in sorted(self.directory.glob("*.jsonl")):
            if path == self._journal.path:
                continue
            try:
                fh = path.open("rb")
            except OSError:
                continue
            with fh:
                try:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue  # its process is alive and sends it itself
                if not path.exists():
                    continue  # drained and deleted by another process meanwhile
                try:
                    ops = read_ops(path)
                    for op in ops:
                        self._apply_or_skip(op, path)
                except TransientError as exc:
                    self.go_down(exc)
                    return done
                except LineageError as exc:
                    log.error("lineage: spool %s: %s; journal kept", path, exc)
                    continue
                path.unlink()
                done += len(ops)
                log.warning(
                    "lineage: delivered %d spooled records of a finished process (%s) to %s",
                    len(ops),
                    path.name,
                    self._shown,
                )
        self.delivered += done
        return done

    def _apply_or_skip(self, op: dict[str, Any], journal: Path) -> None:
        """Apply one record; one the server refuses for good is skipped with one line.

        A run deleted while its records waited (a pruned trial's run, say) answers every
        later record with a 4xx that no retry changes. Keeping such a record would hold back
        everything behind it in the journal (the parent run's final status among them), so it
        is dropped and the replay goes on. Missing credentials or rights (401/403) are not
        dropped: fixing the login delivers them.
        """
        try:
            self._apply(op)
        except TransientError:
            raise
        except (HttpError, LineageError) as exc:
            if _fixable(exc):
                raise
            log.warning(
                "lineage: spool %s: the server refused a %s record of run %s for good (%s); "
                "skipped",
                journal.name,
                op.get("op"),
                op.get("run"),
                exc,
            )

    def _apply(self, op: dict[str, Any]) -> None:
        kind = op["op"]
        run_id = self.run_id(op["run"])
        if kind == "batch":
            batch = Batch(
                points=[(str(k), float(v), int(ts), int(s)) for k, v, ts, s in op["points"]],
                params=dict(op["params"]),
                tags=dict(op["tags"]),
            )
            self.inner.write(run_id, batch)
        elif kind == "status":
            self.inner.set_status(run_id, op["status"], op["end_time"])
        elif kind == "name":
            self.inner.set_name(run_id, op["name"])
        elif kind == "create":
            self._ids[op["run"]] = self._create(op)
        else:
            raise StoreError(f"spool: unknown record {kind!r}")

    def _create(self, op: dict[str, Any]) -> str:
        from lineage import tags as T

        if not isinstance(self.inner, HttpWriter):  # only a server's spool holds creations
            raise StoreError(f"spool: a run created in the spool of {self._shown}")
        if op["by_name"]:
            experiment_id = self.inner.experiment_id(
                op["experiment"], (T.EXPERIMENT_KIND, T.EXPERIMENT_KIND_TRAINING)
            )
        else:
            experiment_id = op["experiment"]
        found = self.inner.find_run(experiment_id, SPOOL_TAG, op["run"])
        if found is not None:
            return found
        return self.inner.create_run(
            experiment_id, run_name=op["run_name"], tags=op["tags"], start_time=op["start_time"]
        )


class JournalWriter(Writer):
    """Appends every batch, status and name to this process's journal in the spool of ``uri``
    and sends nothing: for a process that must end before a locked or slow store took its
    last records (a stopped tuner controller). The next process that drains that spool
    (:func:`drain`; the tuner drains it whenever it opens the store) delivers them."""

    kind = "spool-only"

    def __init__(self, uri: str, *, root: Path | None = None) -> None:
        from lineage.uri import masked

        self.directory = spool_dir(uri, root)
        self._journal = Journal(self.directory, masked(uri))
        self.records = 0

    @property
    def journal(self) -> Path | None:
        return self._journal.path

    def write(self, run_id: str, batch: Batch) -> WriteResult:
        if batch:
            self._append(batch_op(run_id, batch))
        return WriteResult()

    def set_status(self, run_id: str, status: str, end_time: int | None) -> bool:
        self._append({"op": "status", "run": run_id, "status": status, "end_time": end_time})
        return True

    def set_name(self, run_id: str, name: str) -> bool:
        self._append({"op": "name", "run": run_id, "name": name})
        return True

    def close(self) -> None:
        """Keep the journal (unlocked) for the next process."""
        self._journal.close(delete=False)

    def _append(self, op: dict[str, Any]) -> None:
        self._journal.append(op)
        self.records += 1


def _fixable(exc: BaseException) -> bool:
    """A refusal that a person can fix (login, rights, a full disk), so the record waits."""
    if isinstance(exc, HttpError):
        return exc.status in (401, 403, 408)
    return isinstance(exc, SpoolFullError)


def drain(uri: str, *, timeout: float = 0.0, root: Path | None = None) -> int:
    """Deliver the journals left for ``uri`` (a tracking server, or a SQL store a stopped
    tuner could not finish writing to) by processes that ended; the records delivered.
    Raises :class:`~lineage.TransientError` when the store is still unreachable."""
    from lineage._recording._sql import SqlWriter
    from lineage.uri import is_sql_uri

    if not spool_dir(uri, root).is_dir():
        return 0  # nothing was ever spooled for it: no connection opened
    # A SQL store's journals hold batches, statuses and names only (`JournalWriter`), which
    # the SQL writer takes as the http one does; a creation there is refused (`_create`).
    inner = cast("HttpWriter", SqlWriter(uri)) if is_sql_uri(uri) else HttpWriter(uri)
    writer = SpoolingWriter(inner, uri, root=root)
    try:
        deadline = time.monotonic() + timeout
        done = 0
        while True:
            writer.down = False
            done += writer._drain_others()
            if not writer.down:
                return done
            if time.monotonic() >= deadline:
                raise TransientError(f"tracking server {writer._shown} is still unreachable")
            time.sleep(1.0)
    finally:
        writer.inner.close()
