"""Where a campaign's trial checkpoints live: a local folder (the default), a shared
filesystem path, or the trials' MLflow run artifacts. `make_store` picks one from the
config's ``checkpoint:`` section; `copy_latest` copies a chain's checkpoint into another's
folder."""

from __future__ import annotations

from tuner.checkpoints._base import CheckpointStore
from tuner.checkpoints._copy import copy_latest
from tuner.checkpoints._factory import make_store
from tuner.checkpoints._folder import FolderStore
from tuner.checkpoints._mlflow import MlflowArtifactStore

__all__ = ["CheckpointStore", "FolderStore", "MlflowArtifactStore", "copy_latest", "make_store"]
