"""The study lock: one lock shared by every process, on any host, that drives one study.

``pg_advisory_lock`` on PostgreSQL, ``GET_LOCK`` on MySQL, an ``flock`` beside the SQLite file.
New trials are created, and stale ones re-queued, only while holding it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["Held", "StudyLock"]


class Held:
    """What `StudyLock.hold` yields; ``lost`` is set when the block has ended."""

    lost = False


class StudyLock:
    """A lock shared by every process (on any host) that drives one study.

    Re-entrant within a process is not supported; hold it briefly (a count and an ask).
    Holders re-check what it guarded when ``held.lost`` (see `hold`).
    """

    def __init__(self, url: str, study_name: str) -> None:
        self._url = url
        self._key = int.from_bytes(hashlib.sha256(study_name.encode()).digest()[:8], "big") >> 1
        self._name = "tuner:" + hashlib.sha256(study_name.encode()).hexdigest()[:40]
        scheme = url.split(":", 1)[0].split("+", 1)[0].lower()
        self._kind = scheme if scheme in {"postgresql", "postgres", "mysql", "sqlite"} else ""
        self._engine: Any = None
        self._local = threading.Lock()

    def _sqlite_path(self) -> Path:
        path = self._url.split(":///", 1)[1].split("?", 1)[0]
        return Path(path + ".tuner-lock")

    @contextlib.contextmanager
    def hold(self) -> Iterator[Held]:
        """Hold the lock for the block. On a server database the lock lives in one database
        session: if that session dies inside the block (the server restarted, or every
        connection was terminated), the lock was released at that moment and another process
        may have entered; the block still ends normally, with ``held.lost`` true, and the
        caller re-checks, under the lock again, the state the lock guarded. Waiting for the
        lock survives lost connections (retried with backoff, one line per outage)."""
        held = Held()
        with self._local:
            if self._kind == "sqlite":
                with open(self._sqlite_path(), "a+b") as f:
                    fcntl.flock(f, fcntl.LOCK_EX)
                    try:
                        yield held
                    finally:
                        fcntl.flock(f, fcntl.LOCK_UN)
                return
            if not self._kind:
                yield held
                return
            conn = self._acquire()
            try:
                yield held
            finally:
                held.lost = not self._release(conn)

    def _statements(self) -> tuple[Any, Any, Any]:
        import sqlalchemy

        if self._kind == "mysql":
            return (
                sqlalchemy.text("SELECT GET_LOCK(:k, 3600)"),
                sqlalchemy.text("SELECT RELEASE_LOCK(:k)"),
                self._name,
            )
        return (
            sqlalchemy.text("SELECT pg_advisory_lock(:k)"),
            sqlalchemy.text("SELECT pg_advisory_unlock(:k)"),
            self._key,
        )

    def _acquire(self) -> Any:
        import sqlalchemy

        from tuner.search import outage_for, retrying

        if self._engine is None:
            # One pooled connection, kept: a new PostgreSQL session per trial would cost
            # more than the lock itself.
            self._engine = sqlalchemy.create_engine(
                self._url, pool_size=1, max_overflow=0, pool_pre_ping=True
            )
        lock, _, key = self._statements()

        def attempt() -> Any:
            conn = self._engine.connect()
            try:
                conn.execute(lock, {"k": key})
                conn.commit()
            except BaseException:
                with contextlib.suppress(Exception):
                    conn.invalidate()
                    conn.close()
                raise
            return conn

        return retrying(attempt, outage_for(self._url))

    def _release(self, conn: Any) -> bool:
        """Unlock; False when the session (and with it the lock) was lost meanwhile."""
        from tuner.search import is_disconnect

        _, unlock, key = self._statements()
        try:
            released = bool(conn.execute(unlock, {"k": key}).scalar())
            conn.commit()
        except Exception as exc:
            if not is_disconnect(exc):
                raise
            with contextlib.suppress(Exception):
                conn.invalidate()
            released = False
        with contextlib.suppress(Exception):
            conn.close()
        return released

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
