"""The store a campaign's ``checkpoint:`` section names."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tuner.checkpoints._base import CheckpointStore
from tuner.checkpoints._folder import FolderStore
from tuner.checkpoints._mlflow import MlflowArtifactStore

if TYPE_CHECKING:
    from tuner.config import CheckpointConfig


def make_store(
    section: CheckpointConfig, *, state_dir: Path, campaign: str, tracking_uri: str
) -> CheckpointStore:
    """The store for ``section``: a ``path`` holds one subfolder per campaign; without one
    the checkpoints go to ``checkpoints/`` in the campaign's state folder."""
    root = Path(section.path).expanduser() / campaign if section.path else state_dir / "checkpoints"
    if section.store == "mlflow":
        return MlflowArtifactStore(root, tracking_uri=tracking_uri)
    return FolderStore(root, name=section.store)
