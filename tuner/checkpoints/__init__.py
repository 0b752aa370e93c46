"""Where a campaign's trial checkpoints live: a local folder (the default), a shared
filesystem path, or the trials' MLflow run artifacts. `make_store` picks one from the
config's ``checkpoint:`` section."""

from __future__ import annotations

from tuner.checkpoints._base import CheckpointStore
from tuner.checkpoints._factory import make_store
from tuner.checkpoints._folder import FolderStore
from tuner.checkpoints._mlflow import MlflowArtifactStore

__all__ = ["CheckpointStore", "FolderStore", "MlflowArtifactStore", "make_store"]
