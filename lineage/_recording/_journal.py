"""One process's spool journal: append-only JSON lines, each ``fsync``-ed, under an exclusive
``flock`` while the process writes it (see `lineage._recording._spool` for the whole design).

Where journals live: ``$LINEAGE_SPOOL_DIR`` (the tuner points its trials at the campaign's),
else ``~/.cache/lineage/spool``; one folder per tracking server (a hash of its address), one
journal per process: ``<time ns>-<pid>-<random>.jsonl``. A full disk is a
:class:`SpoolFullError` naming the journal and the free space needed; a failed append leaves
nothing half-written.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import threading
import time
import uuid
from pathlib import Path
from typing import IO, Any

from lineage._errors import StoreError
from lineage._recording._writer import Batch

__all__ = ["Journal", "SpoolFullError", "batch_op", "read_ops", "spool_dir", "spool_root"]


class SpoolFullError(StoreError):
    """The spool's disk is full; the message names the path and the space needed. A
    training script that does not catch it ends with this one line and exit code 1."""

    said_by_caller = True


def spool_root() -> Path:
    env = os.environ.get("LINEAGE_SPOOL_DIR")
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "lineage" / "spool"


def spool_dir(uri: str, root: Path | None = None) -> Path:
    """The folder of the journals for tracking server ``uri``."""
    from lineage.uri import masked

    address = masked(uri).rstrip("/")
    return (root or spool_root()) / hashlib.sha256(address.encode()).hexdigest()[:16]


def batch_op(run_id: str, batch: Batch) -> dict[str, Any]:
    """The journal line of a batch written to run ``run_id``."""
    return {
        "op": "batch",
        "run": run_id,
        "points": [list(p) for p in batch.points],
        "params": batch.params,
        "tags": batch.tags,
    }


def read_ops(path: Path) -> list[dict[str, Any]]:
    """The operations of journal ``path``, in order; a torn last line is left out."""
    ops = []
    with path.open("rb") as fh:
        for line in fh:
            try:
                ops.append(json.loads(line))
            except ValueError:
                break  # a torn last line: the process died mid-write
    return ops


class Journal:
    """This process's journal in ``directory`` (the folder of tracking server ``shown``, the
    masked address): opened, created and locked at the first append; thread-safe appends."""

    def __init__(self, directory: Path, shown: str) -> None:
        self.directory = directory
        self._shown = shown
        self._fh: IO[bytes] | None = None
        #: The journal's file while it is open, or after `close` that kept it.
        self.path: Path | None = None
        self._lock = threading.Lock()

    @property
    def open(self) -> bool:
        return self._fh is not None

    def append(self, op: dict[str, Any]) -> bool:
        """Append ``op`` durably; True when this append opened a new journal file."""
        data = (json.dumps(op, separators=(",", ":")) + "\n").encode()
        with self._lock:
            opened = self._fh is None
            if opened:
                self._open(len(data))
            assert self._fh is not None and self.path is not None
            start = self._fh.tell()
            try:
                self._fh.write(data)
                self._fh.flush()
                os.fsync(self._fh.fileno())
            except OSError as exc:
                with contextlib.suppress(OSError):
                    self._fh.truncate(start)  # nothing half-written stays
                    self._fh.seek(start)
                if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                    raise self._full(self.path, len(data)) from exc
                raise StoreError(f"spool {self.path}: cannot write: {exc}") from exc
            return opened

    def close(self, *, delete: bool) -> None:
        """Release the lock; ``delete``: the journal was delivered, remove its file."""
        if self._fh is None:
            return
        if delete and self.path is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
        self._fh.close()  # releases the lock
        self._fh = None
        self.path = None if delete else self.path

    def _full(self, path: Path, needed: int) -> SpoolFullError:
        try:
            free = shutil.disk_usage(path.parent).free
        except OSError:
            free = 0
        return SpoolFullError(
            f"spool {path}: no space left on the device; needs {needed:,} bytes free "
            f"(has {free:,}) to keep the records of tracking server {self._shown}"
        )

    def _open(self, needed: int) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            (self.directory / "server.txt").write_text(self._shown + "\n")
            name = f"{time.time_ns()}-{os.getpid()}-{uuid.uuid4().hex[:6]}.jsonl"
            self.path = self.directory / name
            fh = self.path.open("ab")
        except OSError as exc:
            path = self.path or self.directory
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise self._full(path, needed) from exc
            raise StoreError(f"spool {path}: cannot write: {exc}") from exc
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        self._fh = fh
