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

__all__ = ["StudyLock"]


class StudyLock:
    """A lock shared by every process (on any host) that drives one study.

    Re-entrant within a process is not supported; hold it briefly (a count and an ask).
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
    def hold(self) -> Iterator[None]:
        with self._local:
            if self._kind == "sqlite":
                with open(self._sqlite_path(), "a+b") as f:
                    fcntl.flock(f, fcntl.LOCK_EX)
                    try:
                        yield
                    finally:
                        fcntl.flock(f, fcntl.LOCK_UN)
                return
            if not self._kind:
                yield
                return
            import sqlalchemy

            if self._engine is None:
                # One pooled connection, kept: a new PostgreSQL session per trial would cost
                # more than the lock itself.
                self._engine = sqlalchemy.create_engine(
                    self._url, pool_size=1, max_overflow=0, pool_pre_ping=True
                )
            with self._engine.connect() as conn:
                if self._kind == "mysql":
                    lock = sqlalchemy.text("SELECT GET_LOCK(:k, 3600)")
                    unlock = sqlalchemy.text("SELECT RELEASE_LOCK(:k)")
                    key: Any = self._name
                else:
                    lock = sqlalchemy.text("SELECT pg_advisory_lock(:k)")
                    unlock = sqlalchemy.text("SELECT pg_advisory_unlock(:k)")
                    key = self._key
                conn.execute(lock, {"k": key})
                conn.commit()
                try:
                    yield
                finally:
                    conn.execute(unlock, {"k": key})
                    conn.commit()

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
