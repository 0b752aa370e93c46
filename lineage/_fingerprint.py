"""Content fingerprints of dataset files and folders (data lineage).

A file's fingerprint is the SHA-256 of its bytes, read in 1 MiB chunks so that a
multi-gigabyte file costs memory of one chunk. A folder's fingerprint is the SHA-256 over its
files in sorted relative-path order, each contributing its relative POSIX path, its size and
its own digest, so renaming, adding, removing or editing any file changes it while the
folder's location and file timestamps do not. Symbolic links are followed; hidden files count.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from lineage._errors import UsageError

_CHUNK = 1 << 20


@dataclass(frozen=True)
class DataFingerprint:
    """What ``fingerprint`` found: ``sha256`` hex digest, total ``size`` in bytes, ``files``."""

    path: str
    sha256: str
    size: int
    files: int


def _hash_file(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb", buffering=0) as fh:
        buf = bytearray(_CHUNK)
        view = memoryview(buf)
        while True:
            n = fh.readinto(buf)
            if not n:
                break
            digest.update(view[:n])
            size += n
    return digest.hexdigest(), size


def fingerprint(path: str | os.PathLike[str]) -> DataFingerprint:
    """Fingerprint a file or a folder; :class:`UsageError` when ``path`` does not exist."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"dataset path must exist, got {str(path)!r}")
    resolved = str(p.resolve())
    if p.is_file():
        sha, size = _hash_file(p)
        return DataFingerprint(resolved, sha, size, 1)
    entries: list[tuple[str, Path]] = []
    for root, dirs, names in os.walk(p, followlinks=True):
        dirs.sort()
        for name in names:
            full = Path(root) / name
            if full.is_file():
                entries.append((full.relative_to(p).as_posix(), full))
    entries.sort()
    total = hashlib.sha256()
    size = 0
    for rel, full in entries:
        sha, n = _hash_file(full)
        total.update(f"{rel}\0{n}\0{sha}\n".encode())
        size += n
    return DataFingerprint(resolved, total.hexdigest(), size, len(entries))


def dataset_name(path: str | os.PathLike[str]) -> str:
    """A tag-safe default name for a dataset: its base name without extension."""
    base = Path(path).resolve().name or "data"
    stem = base.split(".", 1)[0] or base
    name = re.sub(r"[^\w\-]+", "_", stem).strip("_")
    return name or "data"
