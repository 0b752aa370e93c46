"""Pick the fastest reader that understands a tracking URI."""

from __future__ import annotations

from lineage.store._base import RunStore
from lineage.uri import checked_tracking_uri, is_sql_uri


def open_store(tracking_uri: str | None = None, *, cache: bool = False) -> RunStore:
    """A :class:`RunStore` for ``tracking_uri`` (else ``$MLFLOW_TRACKING_URI``, else
    ``sqlite:///mlflow.db``).

    SQLite and PostgreSQL stores with a known MLflow schema are read with plain SQL and no
    ``import mlflow``; an ``http(s)://`` tracking server through its REST API, the filter
    pushed to the server (``_http.py``); anything else (``file:``, an unknown schema)
    through ``MlflowClient``. ``cache=True`` (short-lived processes such as the CLI only: see
    ``lineage/store/_cache.py``) keeps a SQLite store's run table between processes, reused
    only while SQLite's change counter says no one wrote since. Raises :class:`~lineage.NotFoundError` for a SQLite file that
    does not exist, :class:`~lineage.UsageError` for a URI whose scheme MLflow cannot open
    and :class:`~lineage.StoreError` for an unreachable database.
    """
    uri = checked_tracking_uri(tracking_uri)
    if is_sql_uri(uri):
        from lineage.store._sql import SchemaMismatch, SqlRunStore

        try:
            return SqlRunStore(uri, cache=cache)
        except SchemaMismatch:
            pass
    if uri.lower().startswith(("http://", "https://")):
        from lineage.store._http import HttpRunStore

        return HttpRunStore(uri)
    from lineage.store._client import ClientRunStore

    return ClientRunStore(uri)
