"""Which MLflow tracking store a command talks to."""

from __future__ import annotations

import os

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"


def resolve_tracking_uri(uri: str | None = None) -> str:
    """``uri`` if given, else ``MLFLOW_TRACKING_URI``, else ``sqlite:///mlflow.db`` (cwd)."""
    return uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI


def is_sql_uri(uri: str) -> bool:
    """True for stores whose MLflow tables this package may read directly (sqlite, postgresql)."""
    scheme = uri.split(":", 1)[0].lower()
    return scheme.split("+", 1)[0] in {"sqlite", "postgresql", "postgres"}
