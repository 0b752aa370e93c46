"""A run-table cache for SQLite stores, kept in step with MLflow by SQLite's own counter.

SQLite (rollback-journal mode, MLflow's default) increments the *file change counter* in
the database header on every committed write, whoever the writer is. A cached table is
used only while that counter, and the file's identity (device, inode, size, mtime), are
those it was built at; any add, update or delete by any process changes them, and the
table is read afresh. WAL databases do not maintain the counter: they are never cached.

Only for short-lived processes such as the CLI (``open_store(uri, cache=True)``): the
header is read with a plain ``open``/``close``, and closing a file drops every POSIX lock
the process holds on it, which would be unsafe while another SQLite connection of the same
process were inside a write transaction. A CLI process has no such connection.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import zlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    Key = tuple[Any, ...]

FORMAT = 2


def cache_dir() -> str | None:
    """``$LINEAGE_CACHE_DIR``, else ``$XDG_CACHE_HOME/lineage``, else ``~/.cache/lineage``;
    ``None`` when ``LINEAGE_NO_CACHE`` is set."""
    if os.environ.get("LINEAGE_NO_CACHE"):
        return None
    explicit = os.environ.get("LINEAGE_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "lineage")


class RunTableCache:
    """The cached run table of one SQLite database file."""

    def __init__(self, db_path: str, directory: str) -> None:
        self.db_path = os.path.abspath(db_path)
        # The name only spreads files apart; the key, which holds the path, decides reuse.
        data = self.db_path.encode()
        self.directory = directory
        self.file = os.path.join(directory, f"runs-{zlib.crc32(data):08x}{zlib.adler32(data):08x}")

    def key(self) -> Key | None:
        """The database's current version, or ``None`` if it cannot be trusted (WAL mode)."""
        try:
            fd = os.open(self.db_path, os.O_RDONLY)
            try:
                header = os.read(fd, 100)
                st = os.fstat(fd)
            finally:
                os.close(fd)
        except OSError:
            return None
        if len(header) < 100 or header[18] != 1 or header[19] != 1:
            return None  # not a rollback-journal database: the counter is not maintained
        counter = int.from_bytes(header[24:28], "big")
        cookie = int.from_bytes(header[40:44], "big")
        return (
            FORMAT,
            self.db_path,
            st.st_dev,
            st.st_ino,
            st.st_size,
            st.st_mtime_ns,
            counter,
            cookie,
        )

    def load(self, key: Key) -> Any:
        """What :meth:`save` stored at ``key``, or ``None``."""
        try:
            with open(self.file, "rb") as f:
                stored_key, value = marshal.load(f)
        except (OSError, EOFError, ValueError, TypeError):
            return None
        return value if tuple(stored_key) == key else None

    def save(self, key: Key, value: Any) -> None:
        """Store ``value`` (marshal-able) at ``key``, atomically; errors are ignored."""
        tmp = f"{self.file}.{os.getpid()}.tmp"
        try:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            with open(tmp, "xb") as out:
                marshal.dump((key, value), out)
            os.replace(tmp, self.file)
        except (OSError, ValueError):
            with contextlib.suppress(OSError):
                os.unlink(tmp)
