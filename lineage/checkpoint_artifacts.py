"""Checkpoints kept as MLflow run artifacts: a committed checkpoint folder ``step-<N>/`` is
uploaded to ``checkpoints/step-<N>/`` of a run, and a run's checkpoints are downloaded back
into a local folder to resume from. The manifest travels with the files, so a checkpoint
whose upload was cut short is recognised as torn after the download, as it is locally.

MLflow is imported only when a function here is called.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["ARTIFACT_PATH", "download", "upload"]

ARTIFACT_PATH = "checkpoints"


def upload(folder: str | os.PathLike[str], keep: int, *, run_id: str | None = None) -> bool:
    """Upload the committed checkpoint ``folder`` to the artifacts of ``run_id`` (default:
    ``MLFLOW_RUN_ID``), then delete that run's older checkpoint artifacts beyond the newest
    ``keep``. A failure is reported on stderr in one line and returns False: the local copy
    stays, and the training goes on."""
    run_id = run_id or os.environ.get("MLFLOW_RUN_ID")
    if not run_id:
        return False
    folder = Path(folder)
    try:
        from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository
        from mlflow.tracking import MlflowClient

        client = MlflowClient()
        client.log_artifacts(run_id, str(folder), f"{ARTIFACT_PATH}/{folder.name}")
        names = sorted(
            (f.path for f in client.list_artifacts(run_id, ARTIFACT_PATH) if f.is_dir),
            reverse=True,
        )
        stale = names[max(1, int(keep)) :]
        if stale:
            repo = get_artifact_repository(client.get_run(run_id).info.artifact_uri)
            for path in stale:
                repo.delete_artifacts(path)
    except Exception as exc:  # the checkpoint is on disk; the upload is a copy
        print(
            f"checkpoint {folder}: upload to MLflow run {run_id} failed ({exc}); kept locally only",
            file=sys.stderr,
        )
        return False
    return True


def download(run_id: str, dest: str | os.PathLike[str], *, tracking_uri: str | None = None) -> int:
    """Download the checkpoints of ``run_id`` into ``dest`` (one ``step-<N>/`` folder each,
    beside any already there); how many were downloaded. A run without checkpoints gives 0."""
    import shutil
    import tempfile

    from mlflow.artifacts import download_artifacts
    from mlflow.environment_variables import MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR
    from mlflow.tracking import MlflowClient

    os.environ.setdefault(MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR.name, "false")  # a bar per step
    client = MlflowClient(tracking_uri=tracking_uri)
    found = [f.path for f in client.list_artifacts(run_id, ARTIFACT_PATH) if f.is_dir]
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest) as tmp:
        for path in found:
            got = download_artifacts(
                run_id=run_id, artifact_path=path, dst_path=tmp, tracking_uri=tracking_uri
            )
            target = dest / Path(path).name
            shutil.rmtree(target, ignore_errors=True)
            shutil.move(got, target)
    return len(found)
