"""What a storage exception means: a lost connection, a database restarting, a full disk.

Read from the exception and what caused it, by type and by the drivers' own words (libpq and
psycopg, PyMySQL, SQLAlchemy, SQLite), so that the retrying storage
(`tuner.search._resilient`) waits out only what a reconnect can cure.
"""

from __future__ import annotations

import errno
import shutil
from collections.abc import Iterator
from pathlib import Path

from tuner._errors import TunerError

__all__ = [
    "DISCONNECT_TEXT",
    "DiskFull",
    "driver_reason",
    "exception_chain",
    "is_disconnect",
    "is_disk_full",
    "is_restarting",
]

# Lower-cased fragments of the messages that libpq/psycopg, PyMySQL and SQLAlchemy give for a
# connection that is gone or a server that is not (yet) accepting connections.
DISCONNECT_TEXT = (
    "terminating connection",
    "server closed the connection",
    "connection refused",
    "could not connect",
    "connection failed",
    "connection is closed",
    "connection already closed",
    "the database system is",
    "ssl connection has been closed",
    "consuming input failed",
    "no connection to the server",
    "connection timed out",
    "connection reset",
    "broken pipe",
    "lost connection",
    "server has gone away",
    "cannot operate on a closed",
    "can't reconnect until invalid",
    "is not currently accepting connections",
)
# Of those, the ones a server that exists gives while it restarts or refuses sessions for a
# while: worth waiting for even when a controller starts (a refused connection is not: the
# server may not be there at all, and the user should hear so at once).
_RESTARTING_TEXT = (
    "terminating connection",
    "server closed the connection",
    "the database system is",
    "is not currently accepting connections",
    "consuming input failed",
    "connection reset",
)
_DISK_FULL_TEXT = ("database or disk is full", "no space left on device")


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what caused it (``__cause__``, else ``__context__``), at most 12 deep."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 12:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def is_disconnect(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) says the database connection was lost or the
    server is not reachable: worth a retry once it is back."""
    import sqlalchemy.exc

    for err in exception_chain(exc):
        if isinstance(err, sqlalchemy.exc.DBAPIError) and err.connection_invalidated:
            return True
        if isinstance(
            err, sqlalchemy.exc.PendingRollbackError | sqlalchemy.exc.ResourceClosedError
        ):
            text = str(err).lower()
            if any(t in text for t in DISCONNECT_TEXT):
                return True
        name = type(err).__name__
        if name in {"OperationalError", "InterfaceError", "AdminShutdown", "DisconnectionError"}:
            text = str(err).lower()
            if any(t in text for t in DISCONNECT_TEXT):
                return True
    return False


def is_restarting(exc: BaseException) -> bool:
    """Whether ``exc`` says a database that exists is restarting or refusing sessions for a
    while (not: no server listens there)."""
    return any(t in str(err).lower() for err in exception_chain(exc) for t in _RESTARTING_TEXT)


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is a write that found no space left."""
    for err in exception_chain(exc):
        if isinstance(err, OSError) and err.errno == errno.ENOSPC:
            return True
        if any(t in str(err).lower() for t in _DISK_FULL_TEXT):
            return True
    return False


def driver_reason(exc: BaseException) -> str:
    """The driver's own first line (no SQL, no SQLAlchemy background link)."""
    import sqlalchemy.exc

    for err in exception_chain(exc):
        if isinstance(err, sqlalchemy.exc.DBAPIError) and err.orig is not None:
            exc = err.orig
            break
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    text = lines[0] if lines else type(exc).__name__
    # psycopg: 'connection failed: connection to server at "h", port 5432 failed: ...'
    return text.split(" failed: ")[-1][:200]


class DiskFull(TunerError):
    """A write to a file-backed store found no space left. ``exit_code`` 1; the message
    names the file, the free space there and the space needed."""

    @classmethod
    def at(cls, path: Path, what: str) -> DiskFull:
        path = Path(path)
        folder = path.parent if path.parent.exists() else Path(".")
        free = shutil.disk_usage(folder).free
        size = sum(
            p.stat().st_size
            for p in (path, Path(f"{path}-wal"), Path(f"{path}-journal"))
            if p.exists()
        )
        # Room for SQLite's write-ahead log to grow and be checkpointed back, with a margin.
        need = max(16 << 20, size + (8 << 20))
        return cls(
            f"{path}: disk full writing {what} ({_size(free)} free on {folder}, need at least "
            f"{_size(need)}); the store is intact: free space there, then continue with "
            "tuner resume"
        )


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")
