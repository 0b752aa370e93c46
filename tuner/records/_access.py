"""Whether the lineage store can be written, asked once before any trial starts."""

from __future__ import annotations

import base64
import json
import os
import urllib.error
import urllib.request

from lineage.masking import mask_uri
from tuner._errors import TunerError

__all__ = ["CredentialsError", "check_tracking_access", "start_failure"]


class CredentialsError(TunerError):
    """The MLflow server refused the credentials (or asked for some). ``exit_code`` 2: the
    fix is in the user's input (``MLFLOW_TRACKING_USERNAME`` / ``MLFLOW_TRACKING_PASSWORD``)."""

    exit_code = 2


def check_tracking_access(uri: str, *, timeout: float = 30.0) -> None:
    """Fail fast, in one line, when an ``http(s)://`` tracking server cannot be used.

    Sends one cheap authenticated request the way MLflow's client does (basic auth from
    ``MLFLOW_TRACKING_USERNAME``/``MLFLOW_TRACKING_PASSWORD``, or a bearer
    ``MLFLOW_TRACKING_TOKEN``). Raises `CredentialsError` on 401/403, `TunerError` when the
    server cannot be reached. A PostgreSQL/MySQL store is connected to once (nothing is
    created): `tuner._errors.StorageUnavailable` names a missing database with its
    ``createdb`` command. SQLite and file stores are not checked here.
    Neither the password nor the token ever appears in a message.
    """
    scheme = uri.split(":", 1)[0].split("+", 1)[0].lower()
    if scheme in ("postgresql", "mysql", "mssql"):
        # MLflow would retry a missing database for minutes, logging each attempt.
        from tuner.search import check_storage

        check_storage(uri, field="lineage.tracking_uri")
        return
    if not uri.lower().startswith(("http://", "https://")):
        return
    shown = mask_uri(uri)
    user = os.environ.get("MLFLOW_TRACKING_USERNAME")
    password = os.environ.get("MLFLOW_TRACKING_PASSWORD")
    token = os.environ.get("MLFLOW_TRACKING_TOKEN")
    request = urllib.request.Request(
        uri.rstrip("/") + "/api/2.0/mlflow/experiments/search",
        data=json.dumps({"max_results": 1}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    if user is not None and password is not None:
        raw = base64.b64encode(f"{user}:{password}".encode()).decode()
        request.add_header("Authorization", f"Basic {raw}")
    elif token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            return
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise TunerError(
            f"lineage.tracking_uri: cannot reach the MLflow server at {shown}: {reason}"
        ) from None
    if status == 401:
        if user is None or password is None:
            raise CredentialsError(
                f"lineage.tracking_uri: the MLflow server at {shown} requires a login (HTTP 401); "
                "set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD"
            )
        raise CredentialsError(
            f"lineage.tracking_uri: the MLflow server at {shown} rejected the credentials of "
            f"user {user!r} (HTTP 401); check MLFLOW_TRACKING_USERNAME and "
            "MLFLOW_TRACKING_PASSWORD"
        )
    if status == 403:
        raise CredentialsError(
            f"lineage.tracking_uri: user {user!r} may not use the MLflow server at {shown} "
            "(HTTP 403); ask its admin for EDIT permission on the experiment"
        )
    if status >= 500:
        raise TunerError(
            f"lineage.tracking_uri: the MLflow server at {shown} failed (HTTP {status})"
        )


def start_failure(exc: BaseException, uri: str, experiment: str) -> BaseException:
    """The one-line error for a campaign run the store at ``uri`` would not open: a full
    disk, a database that is not there, a user without write access to ``experiment``
    (HTTP 403), else what the store said. An error that is not a translation has ``exc``
    as its cause."""
    from tuner.records._disk_full import disk_full
    from tuner.search import storage_unavailable

    full = disk_full(exc, uri)
    if full is not None:
        return full
    explained = storage_unavailable(exc, uri, field="lineage.tracking_uri")
    if explained is not None:
        return explained
    if _forbidden(exc):
        user = os.environ.get("MLFLOW_TRACKING_USERNAME")
        return TunerError(
            f"lineage store {mask_uri(uri)}: user {user!r} may not write "
            f"to experiment {experiment!r} (HTTP 403); ask the server's admin "
            "for EDIT permission on it, or set lineage.experiment to one of your own"
        )
    error = TunerError(
        f"lineage store {mask_uri(uri)}: cannot open the campaign run: "
        + mask_uri(" ".join(str(exc).split()))
    )
    error.__cause__ = exc
    return error


def _forbidden(exc: BaseException) -> bool:
    """MLflow's answer to a user without the rights (basic-auth's 403 "Permission denied")."""
    status = getattr(exc, "get_http_status_code", None)
    if callable(status) and status() == 403:
        return True
    return "error code 403" in str(exc)
