"""Which MLflow tracking store a command talks to (public face of ``lineage._uri``)."""

from __future__ import annotations

from lineage._uri import DEFAULT_TRACKING_URI, is_sql_uri, resolve_tracking_uri

__all__ = ["DEFAULT_TRACKING_URI", "is_sql_uri", "resolve_tracking_uri"]
