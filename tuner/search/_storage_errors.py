"""Why an Optuna or MLflow database could not be opened, in one line.

The study's storage is opened here (`tuner.search._study`) and the config checks its URL
(`tuner.config`); both explain a failure the same way, so the explanation lives at the
bottom of the two.
"""

from __future__ import annotations

import os
import re
from urllib.parse import unquote, urlparse

from lineage.masking import mask_uri
from tuner._errors import StorageUnavailable

__all__ = ["STORAGE_SCHEMES", "explain_storage_error", "storage_unavailable"]

#: URL beginnings ``storage:`` accepts: Optuna's RDB storage over the drivers installed with
#: the package (SQLAlchemy 2 maps ``postgresql://`` to psycopg 3).
STORAGE_SCHEMES = ("sqlite:///", "postgresql://", "postgresql+psycopg://")


def explain_storage_error(exc: BaseException, url: str, field: str = "storage") -> str | None:
    """One line saying why the database at ``url`` could not be opened, or None.

    Understands SQLAlchemy's ``NoSuchModuleError`` (an unknown scheme or a missing driver)
    and a PostgreSQL server's "database does not exist" / "could not connect", wherever
    they sit in ``exc``'s chain of causes. The URL's password is masked. Callers print the
    line (exit 1) instead of the raw exception, e.g.
    ``except Exception as exc: raise TunerError(explain_storage_error(exc, url) or ...)``.
    ``field`` names the setting in the line (``lineage.tracking_uri`` for MLflow's database).
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        line = _explain_one(current, url, field)
        if line:
            return line
        current = current.__cause__ or current.__context__ or getattr(current, "orig", None)
    return None


def _explain_one(exc: BaseException, url: str, field: str) -> str | None:
    text = " ".join(str(exc).split())
    head = f"{field} {mask_uri(url)}:"
    if type(exc).__name__ == "NoSuchModuleError":
        scheme = url.split("://", 1)[0]
        return (
            f"{head} SQLAlchemy has no driver for {scheme}://; use "
            f"{', '.join(STORAGE_SCHEMES[:-1])} or {STORAGE_SCHEMES[-1]}"
        )
    parts = urlparse(url)
    host = parts.hostname or "localhost"
    port = parts.port or 5432
    user = unquote(parts.username) if parts.username else os.environ.get("PGUSER", "postgres")
    at = f"PostgreSQL at {host}:{port}"
    missing = re.search(r'database "([^"]+)" does not exist', text)
    if missing:
        name = missing.group(1)
        return (
            f"{head} PostgreSQL database {name!r} does not exist on {host}:{port}; "
            f"create it with: createdb -h {host} -p {port} -U {user} {name}"
        )
    if "password authentication failed" in text or "no password supplied" in text:
        return f"{head} {at} refused user {user!r} (authentication failed); check the user and password"
    if "translate host name" in text or "resolve host" in text or "not known" in text:
        return f"{head} host {host!r} is unknown; check the host name"
    if "refused" in text:
        return f"{head} cannot connect to {at} (connection refused); is the server running there?"
    if "timeout" in text.lower() or "timed out" in text:
        return f"{head} cannot connect to {at} (no answer before the timeout)"
    if "could not connect" in text or "connection failed" in text:
        return f"{head} cannot connect to {at}"
    return None


_BAD_INPUT = ("does not exist", "has no driver", "is unknown", "authentication failed")


def storage_unavailable(
    exc: BaseException, url: str, field: str = "storage"
) -> StorageUnavailable | None:
    """`StorageUnavailable` explaining ``exc`` (raised opening ``url``), or None when it is
    not a failure to open the database (the caller re-raises ``exc`` then)."""
    line = explain_storage_error(exc, url, field=field)
    if line is None:
        return None
    return StorageUnavailable(line, exit_code=2 if any(k in line for k in _BAD_INPUT) else 1)
