"""Where the campaign's two stores live: MLflow (lineage) and Optuna (the study)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

if TYPE_CHECKING:
    from tuner.config._model import CampaignConfig

__all__ = ["absolute_uri", "optuna_storage_url", "tracking_uri"]

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"


def absolute_uri(uri: str, base: Path) -> str:
    """``uri`` with a relative SQLite or local-file path made absolute against ``base``."""
    if uri.startswith("sqlite:///"):
        path = uri[len("sqlite:///") :]
        if path in ("", ":memory:") or path.startswith("/"):
            return uri
        query = ""
        if "?" in path:
            path, query = path.split("?", 1)
            query = "?" + query
        return f"sqlite:///{(base / path).resolve()}{query}"
    if "://" not in uri and not uri.startswith("file:"):
        # A bare path is MLflow's file store.
        return str((base / uri).resolve())
    if uri.startswith("file:") and not uri.startswith("file:///") and not uri.startswith("file://"):
        return "file://" + str((base / uri[len("file:") :]).resolve())
    return uri


def tracking_uri(config: CampaignConfig) -> str:
    if config.lineage.tracking_uri:
        return absolute_uri(config.lineage.tracking_uri, config.base_dir)
    env = os.environ.get("MLFLOW_TRACKING_URI")
    if env:
        return absolute_uri(env, Path.cwd())
    return absolute_uri(DEFAULT_TRACKING_URI, Path.cwd())


def _local_dir(uri: str) -> Path | None:
    """The directory holding a local lineage store, or None for a server or remote database."""
    if uri.startswith("sqlite:///"):
        path = uri[len("sqlite:///") :].split("?", 1)[0]
        if path and path != ":memory:":
            return Path(path).parent
        return None
    if uri.startswith("file://"):
        return Path(urlparse(uri).path).parent
    if "://" not in uri:
        return Path(uri).parent
    return None


def optuna_storage_url(config: CampaignConfig) -> str:
    if config.storage:
        return absolute_uri(config.storage, config.base_dir)
    directory = _local_dir(tracking_uri(config)) or Path.cwd().resolve()
    return f"sqlite:///{directory / 'optuna.db'}"
