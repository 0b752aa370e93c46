"""Where the campaign's two stores live: MLflow (lineage) and Optuna (the study).

Also the rules a store URL must keep to be opened at all (checked by ``tuner validate``), and
:func:`explain_storage_error`, which turns SQLAlchemy's errors on opening one into a line a
user can act on.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from lineage.masking import mask_uri
from lineage.uri import DEFAULT_TRACKING_URI, TRACKING_PLAIN_SCHEMES, unsupported_scheme
from lineage.uri import TRACKING_SCHEMES as LINEAGE_TRACKING_SCHEMES
from tuner.config._types import RuleError
from tuner.search import STORAGE_SCHEMES, explain_storage_error, storage_unavailable

if TYPE_CHECKING:
    from tuner.config._shape import Campaign

__all__ = [
    "STORAGE_SCHEMES",
    "TRACKING_SCHEMES",
    "absolute_uri",
    "check_tracking_uri",
    "check_uris",
    "explain_storage_error",
    "optuna_storage_url",
    "storage_unavailable",
    "tracking_uri",
]

#: URI schemes MLflow's tracking-store registry opens, as lineage knows them. Database
#: schemes may name a driver: ``postgresql+psycopg``.
TRACKING_SCHEMES = LINEAGE_TRACKING_SCHEMES
_TRACKING_PLAIN = TRACKING_PLAIN_SCHEMES
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]+:")  # a scheme, not a drive letter


def check_uris(storage: str | None, tracking: str | None) -> None:
    """Raise :class:`RuleError` for a store URL that cannot be opened (values masked)."""
    if storage is not None:
        _check_storage(storage)
    if tracking:
        _check_tracking(tracking)


def _check_storage(storage: str) -> None:
    path = ("storage",)
    if "://" not in storage:
        raise RuleError(
            path,
            "must be an Optuna storage URL such as sqlite:///optuna.db or "
            "postgresql://user@host/db",
            mask_uri(storage),
        )
    _check_sqlite(path, storage)
    scheme = storage.split("://", 1)[0].lower()
    if not storage.lower().startswith(STORAGE_SCHEMES):
        hint = " (SQLAlchemy spells it postgresql://)" if scheme == "postgres" else ""
        raise RuleError(
            path,
            f"must start with {', '.join(STORAGE_SCHEMES[:-1])} or {STORAGE_SCHEMES[-1]}{hint}",
            mask_uri(storage),
        )


def _check_tracking(tracking: str) -> None:
    check_tracking_uri(("lineage", "tracking_uri"), tracking)


def check_tracking_uri(path: tuple[str | int, ...], tracking: str) -> None:
    """Raise :class:`RuleError` at ``path`` for a tracking URI MLflow cannot open."""
    _check_sqlite(path, tracking)
    bad = unsupported_scheme(tracking)
    if bad is None:
        if _SCHEME.match(tracking) is None and tracking.endswith((".db", ".sqlite", ".sqlite3")):
            raise RuleError(
                path,
                "is a bare path, which MLflow reads as a file-store directory; for a SQLite "
                f"file write sqlite:///{tracking}",
                tracking,
            )
        return
    hint = (
        " (SQLAlchemy spells it postgresql://)" if bad.lower().split("+")[0] == "postgres" else ""
    )
    raise RuleError(
        path,
        "must be a URI MLflow can open: a path, or one starting with "
        + ", ".join(f"{s}:" for s in (*TRACKING_SCHEMES, *_TRACKING_PLAIN))
        + hint,
        mask_uri(tracking),
    )


def _check_sqlite(path: tuple[str | int, ...], uri: str) -> None:
    if uri.startswith("sqlite:") and not uri.startswith("sqlite:///"):
        raise RuleError(
            path,
            "must be sqlite:///relative/file.db or sqlite:////absolute/file.db "
            "(three slashes, then the path)",
            mask_uri(uri),
        )


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


def tracking_uri(config: Campaign) -> str:
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


def optuna_storage_url(config: Campaign) -> str:
    if config.storage:
        return absolute_uri(config.storage, config.base_dir)
    directory = _local_dir(tracking_uri(config)) or Path.cwd().resolve()
    return f"sqlite:///{directory / 'optuna.db'}"
