"""Former home of the URI helpers, kept for callers not yet moved to :mod:`lineage.uri`
(``lineage/importance/_experiment.py`` imports it); new code imports
:mod:`lineage.uri`."""

from __future__ import annotations

from lineage.uri import DEFAULT_TRACKING_URI, is_sql_uri, resolve_tracking_uri

__all__ = ["DEFAULT_TRACKING_URI", "is_sql_uri", "resolve_tracking_uri"]
