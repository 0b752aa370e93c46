"""The records a stopped controller could not make in time on a SQL store, kept for later.

A controller told to stop gives its last lineage writes a bounded time (`STOP_WAIT_S`). On a
tracking server, lineage's spool keeps what the server did not take. On a SQL store (SQLite
held by another process, a busy PostgreSQL) the writes the deadline cuts short, and those
still queued behind them, go instead to this process's journal in lineage's spool for that
store (`lineage.recording.JournalWriter`); whichever tuner process opens the store next
(`tuner resume`, a worker, another campaign) delivers them before it closes what the stopped
controller left open, so a trial that ended before the stop keeps its own end, not
"interrupted". Writes that only MLflow's client can make (an artifact, deleting an unused
reserved run) are not kept: `tuner resume` closes and deletes what they would have.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from lineage.recording import Batch, JournalWriter, TransientError, Writer, WriteResult

__all__ = ["LateWriter", "RefusingClient", "TooLate", "deliver_spooled"]

T = TypeVar("T")


class TooLate(Exception):
    """A write past the stop's deadline that the journal cannot keep: it is dropped."""


class LateWriter(Writer):
    """``inner`` (lineage's SQL writer) until the monotonic ``deadline`` it is given, then
    the journal; a write the deadline cut short goes to the journal too."""

    def __init__(self, inner: Writer, uri: str) -> None:
        self.inner = inner
        self.kind = inner.kind
        self._uri = uri
        self._deadline: float | None = None
        self.journal: JournalWriter | None = None

    def retry_until(self, deadline: float | None) -> None:
        self._deadline = deadline
        retry_until = getattr(self.inner, "retry_until", None)
        if retry_until is not None:
            retry_until(deadline)

    @property
    def late(self) -> bool:
        return self._deadline is not None and time.monotonic() >= self._deadline

    def write(self, run_id: str, batch: Batch) -> WriteResult:
        return self._either(
            lambda: self.inner.write(run_id, batch), lambda j: j.write(run_id, batch)
        )

    def set_status(self, run_id: str, status: str, end_time: int | None) -> bool:
        return self._either(
            lambda: self.inner.set_status(run_id, status, end_time),
            lambda j: j.set_status(run_id, status, end_time),
        )

    def set_name(self, run_id: str, name: str) -> bool:
        return self._either(
            lambda: self.inner.set_name(run_id, name), lambda j: j.set_name(run_id, name)
        )

    def _either(self, store: Callable[[], T], journal: Callable[[JournalWriter], T]) -> T:
        """``store()`` before the deadline; past it, or when the deadline cut it short (a
        locked database given up on), ``journal`` with this process's journal."""
        if not self.late:
            try:
                return store()
            except TransientError:
                if not self.late:
                    raise
        return journal(self._journal())

    def set_start_time(self, run_id: str, start_ms: int) -> bool:
        if self.late:
            return False  # the run keeps the time it was created at
        return self.inner.set_start_time(run_id, start_ms)

    def sync(self) -> bool:
        return self.inner.sync()

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()
        if not self.late:
            self.inner.close()
        # Past the deadline the recorder's thread may still be inside the SQL writer: the
        # process ends its connection.

    def _journal(self) -> JournalWriter:
        if self.journal is None:
            self.journal = JournalWriter(self._uri)
        return self.journal


def deliver_spooled(uri: str) -> int:
    """Deliver what stopped controllers left in the spool of SQL store ``uri``; how many
    records. Journals a live process holds are left to it."""
    from lineage.recording import drain_spool

    return drain_spool(uri)


class RefusingClient:
    """Stands for MLflow's client once the deadline passed: every call raises `TooLate`
    at once, instead of waiting on a store that already made the controller late."""

    def __getattr__(self, name: str) -> Any:
        def refused(*_args: Any, **_kwargs: Any) -> Any:
            raise TooLate(f"MlflowClient.{name} past the stop's deadline")

        return refused
