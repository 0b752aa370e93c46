"""Checkpoints in a folder: the campaign's state folder, or a shared filesystem path."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tuner.checkpoints._base import CheckpointStore


class FolderStore(CheckpointStore):
    """The trial processes write straight into the folder, so there is nothing to fetch.
    ``name`` is ``local`` (on the controller's host) or ``shared`` (a path every host
    mounts)."""

    def __init__(self, root: Path, *, name: str = "local") -> None:
        super().__init__(root)
        self.name = name

    def fetch(self, folder: Path, run_ids: Sequence[str]) -> None:
        return None
