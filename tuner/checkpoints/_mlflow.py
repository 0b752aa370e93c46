"""Checkpoints as the trial runs' MLflow artifacts (and so in the tracking server's
artifact store, S3 for instance)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lineage import checkpoint_artifacts
from tuner import _protocol as protocol
from tuner.checkpoints._base import CheckpointStore


class MlflowArtifactStore(CheckpointStore):
    """Each attempt writes its checkpoints into a local folder and uploads each committed one
    to its own MLflow run (``lineage.checkpoint_artifacts``). To resume, the chain's runs'
    checkpoints are downloaded into the chain's folder, newest run last so that its
    checkpoints win."""

    name = "mlflow"

    def __init__(self, root: Path, *, tracking_uri: str) -> None:
        super().__init__(root)
        self.tracking_uri = tracking_uri

    def env(self) -> dict[str, str]:
        return {protocol.CHECKPOINT_STORE: self.name}

    def fetch(self, folder: Path, run_ids: Sequence[str]) -> None:
        for run_id in reversed(run_ids):
            checkpoint_artifacts.download(run_id, folder, tracking_uri=self.tracking_uri)
