"""The checkpoint store interface."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from pathlib import Path


class CheckpointStore(abc.ABC):
    """Where the checkpoints of a campaign's trials are kept.

    Every attempt of a trial's chain shares one folder, :meth:`folder`, which the trial
    process writes its checkpoints into (``TUNER_CHECKPOINT_DIR``; the folder protocol is
    `lineage.checkpoints`). Before an attempt resumes, :meth:`fetch` makes the chain's
    checkpoints present in that folder, so the launcher can pick the newest good one there.
    Called from the controller's thread only.
    """

    #: The config's name for the store.
    name: str

    def __init__(self, root: Path) -> None:
        self.root = root

    def folder(self, first_trial: int) -> Path:
        """The checkpoint folder of the chain that starts with trial ``first_trial``."""
        return self.root / f"trial-{first_trial}"

    def retire(self, folder: Path, keep: int) -> None:
        """The chain of ``folder`` ended: keep only its newest ``keep`` good checkpoints (0:
        remove the folder). Copies a store keeps elsewhere (MLflow artifacts) stay."""
        import shutil

        from lineage import checkpoints

        if keep <= 0:
            shutil.rmtree(folder, ignore_errors=True)
        elif folder.is_dir():
            checkpoints.prune(folder, keep)

    def env(self) -> dict[str, str]:
        """Variables the trial process needs besides its folder (none for a folder store)."""
        return {}

    @abc.abstractmethod
    def fetch(self, folder: Path, run_ids: Sequence[str]) -> None:
        """Make the checkpoints of the attempts whose MLflow runs are ``run_ids`` (newest
        first) present in ``folder``. Raises OSError or the store's error when they cannot be
        read; the launcher then resumes from what the folder already holds."""
