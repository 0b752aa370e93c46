"""Tracking URIs: which MLflow store a command talks to, and what a URI names on disk.

The one home of URI handling in ``lineage`` (and for ``tuner``): resolving the default,
telling SQL stores from the rest, and turning ``sqlite:``, ``postgresql:`` and ``file:`` URIs
into the paths and connection strings their drivers take. Masking the password of a URI for
display is :func:`lineage.masking.mask_uri`.

Only ``os`` is imported at module level: the ``lineage runs`` start-up path loads this module,
and ``urllib.parse`` is imported only for URIs that need it.
"""

from __future__ import annotations

import os

from lineage._errors import EnvironmentValueError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
"""The store used when neither ``--tracking-uri`` nor ``MLFLOW_TRACKING_URI`` names one."""

__all__ = [
    "DEFAULT_TRACKING_URI",
    "TRACKING_PLAIN_SCHEMES",
    "TRACKING_SCHEMES",
    "TRIALS_VIEW",
    "check_tracking_uri",
    "checked_tracking_uri",
    "compare_link",
    "file_uri_path",
    "is_sql_uri",
    "local_path",
    "masked",
    "postgres_conninfo",
    "resolve_tracking_uri",
    "scheme",
    "sqlite_path",
    "trials_link",
    "trials_view",
    "trials_view_link",
    "ui_link",
    "unsupported_scheme",
]

# MLflow 3's UI opens an experiment in its GenAI view (traces) unless the address asks for
# the view of training runs; every link the tools print asks for it.
TRAINING_VIEW = "workflowType=machine_learning"
#: The key of the view of a campaign's trials that a campaign stores on its experiment (the
#: experiment tag ``mlflow.sharedViewState.lineage-trials``, see `trials_view`).
TRIALS_VIEW = "lineage-trials"


#: URI schemes MLflow's tracking-store registry opens (a test keeps this list equal to
#: MLflow's), then those it opens only under their own name (no ``+driver``). A database
#: scheme may name a driver: ``postgresql+psycopg``.
TRACKING_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql", "http", "https", "file")
TRACKING_PLAIN_SCHEMES = ("databricks", "databricks-uc", "uc")
_DATABASES = ("sqlite", "postgresql", "mysql", "mssql")


def unsupported_scheme(uri: str) -> str | None:
    """The scheme of tracking URI ``uri`` as written when MLflow cannot open a store with it;
    None for a supported one and for a plain path (MLflow's file store)."""
    head, sep, _ = uri.partition(":")
    if not sep or len(head) <= 1 or not head[0].isalpha():
        return None  # a path (or a Windows drive letter)
    if not all(c.isalnum() or c in "+.-" for c in head):
        return None  # not a scheme: a path with a colon in it
    low = head.lower()
    base = low.split("+", 1)[0]
    if low in TRACKING_PLAIN_SCHEMES or (
        base in TRACKING_SCHEMES and ("+" not in low or base in _DATABASES)
    ):
        return None
    return head


def check_tracking_uri(uri: str, *, source: str = "tracking URI") -> str:
    """``uri``, refused with :class:`~lineage.UsageError` (one line naming ``source``, the
    scheme, the schemes supported and the masked URI) when MLflow cannot open it: MLflow's own
    error is about its model registry and lists no URI it accepts by name."""
    bad = unsupported_scheme(uri)
    if bad is None:
        return uri
    hint = " (SQLAlchemy spells it postgresql:)" if bad.lower().split("+")[0] == "postgres" else ""
    supported = ", ".join(f"{s}:" for s in (*TRACKING_SCHEMES, *TRACKING_PLAIN_SCHEMES))
    raise UsageError(
        f"{source} must be a path or start with one of {supported}{hint}; "
        f"got scheme {bad + ':'!r} in {masked(uri)!r}"
    )


def resolve_tracking_uri(uri: str | None = None) -> str:
    """``uri`` if given, else ``MLFLOW_TRACKING_URI``, else ``sqlite:///mlflow.db`` (cwd).

    Args:
        uri: a tracking URI (``sqlite:///...``, ``postgresql://...``, ``http://...``) or None to
            read the environment.

    Returns:
        The tracking URI to open, never empty.
    """
    return uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI


def checked_tracking_uri(uri: str | None = None) -> str:
    """`resolve_tracking_uri`, refused by `check_tracking_uri` when MLflow cannot open it: an
    :class:`~lineage.EnvironmentValueError` naming ``MLFLOW_TRACKING_URI`` when the URI came
    from there."""
    resolved = resolve_tracking_uri(uri)
    if uri or resolved == DEFAULT_TRACKING_URI:
        return check_tracking_uri(resolved)
    try:
        return check_tracking_uri(resolved, source="MLFLOW_TRACKING_URI")
    except UsageError as exc:
        raise EnvironmentValueError(str(exc)) from None


def scheme(uri: str) -> str:
    """The URI's scheme, lower case, without a SQLAlchemy driver suffix and with
    ``postgres`` spelled ``postgresql``: ``sqlite``, ``postgresql``, ``http``, ``file``, or
    ``""`` for a plain path."""
    if ":" not in uri:
        return ""
    head = uri.split(":", 1)[0].lower().split("+", 1)[0]
    if len(head) == 1 and os.name == "nt":
        return ""  # a Windows drive letter, C:\...
    return "postgresql" if head == "postgres" else head


def is_sql_uri(uri: str) -> bool:
    """True for stores whose MLflow tables this package may read directly (sqlite, postgresql)."""
    return scheme(uri) in ("sqlite", "postgresql")


def sqlite_path(uri: str) -> str:
    """The file behind a ``sqlite:///relative`` or ``sqlite:////absolute`` URI.

    Raises :class:`~lineage.UsageError` for a URI that names no file (``sqlite://``,
    ``sqlite:///:memory:``) or is not spelled ``sqlite:///...``."""
    rest = uri.split(":", 1)[1] if ":" in uri else ""
    if not rest.startswith("//"):
        raise UsageError(f"tracking URI must look like sqlite:///path/to/mlflow.db, got {uri!r}")
    path = rest[2:].split("?", 1)[0]
    if "%" in path:
        from urllib.parse import unquote

        path = unquote(path)
    if path.startswith("/"):
        path = path[1:]  # sqlite:///x.db -> x.db ; sqlite:////abs/x.db -> /abs/x.db
    if not path or path == ":memory:":
        raise UsageError(f"tracking URI must name a database file, got {uri!r}")
    return path


def postgres_conninfo(uri: str) -> str:
    """A libpq URI from SQLAlchemy's ``postgresql+driver://...`` or ``postgres://`` spelling."""
    from urllib.parse import urlsplit

    return urlsplit(uri)._replace(scheme="postgresql").geturl()


def local_path(uri: str) -> str | None:
    """The local path of a ``file:`` URI or a plain path; ``None`` for any other scheme."""
    kind = scheme(uri)
    if kind == "":
        return uri
    if kind != "file":
        return None
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(uri).path)


def file_uri_path(path: str) -> str:
    """``path`` escaped for a ``file:`` URI (``urllib.parse`` only when it needs escaping)."""
    if path.isascii() and not any(c in path for c in "%?# "):
        return path
    from urllib.parse import quote

    return quote(path)


def masked(uri: str) -> str:
    """``uri`` as it may be shown: :func:`lineage.masking.mask_uri`, skipped (with its
    import) when the URI has no ``user:password@`` and no query parameter that could hide a
    secret."""
    if "@" not in uri and "=" not in uri:
        return uri
    from lineage._secrets import mask_uri

    return mask_uri(uri)


def ui_link(
    base: str = "",
    *,
    experiment_id: str | None = None,
    run_id: str | None = None,
    artifact: str | None = None,
) -> str:
    """The MLflow UI address of the experiments list, an experiment, a run or one of its
    artifacts, in the training-runs view. ``base`` is the server's address
    (``http://host:port``) or empty for a link relative to the UI (a run description)."""
    route = "#/experiments"
    if experiment_id is not None:
        route += f"/{experiment_id}"
        if run_id is not None:
            route += f"/runs/{run_id}"
            if artifact is not None:
                route += f"/artifactPath/{artifact}"
    prefix = base.rstrip("/") + "/" if base else ""
    return f"{prefix}{route}?{TRAINING_VIEW}"


def trials_view(
    *,
    campaign: str,
    targets: Sequence[tuple[str, str]],
    tuned: Sequence[str],
    parent_run_id: str | None = None,
) -> tuple[str, str]:
    """The experiment tag (key, JSON value) of the MLflow UI view that opens on campaign
    ``campaign``'s trials: only its trial runs (so none hides under the campaign's run),
    best first by the first of ``targets`` (``(metric, goal)``, goal ``min``/``max`` or
    ``minimize``/``maximize``), the targets and the ``tuned`` parameters as columns, the
    campaign's run expanded should a filter ever show it. MLflow's UI reads the
    ``searchFilter``, ``orderByKey`` and ``orderByAsc`` facets and the ``selectedColumns``,
    ``runsExpanded`` and ``runsHiddenMode`` state from such a tag (its ``viewStateShareKey``)."""
    import json

    from lineage import tags as T

    def column(kind: str, key: str) -> str:
        return f"{kind}.`{key}`"

    quoted = campaign.replace("'", "\\'")
    state: dict[str, object] = {
        "searchFilter": (
            f"tags.`{T.CAMPAIGN}` = '{quoted}' and tags.`{T.RUN_TYPE}` = '{T.RUN_TYPE_TRIAL}'"
        ),
        "selectedColumns": [
            column("attributes", "Run Name"),
            *(column("metrics", m) for m, _ in targets),
            *(column("params", p) for p in tuned),
        ],
        "runsHiddenMode": "SHOW_ALL",
    }
    if targets:
        metric, goal = targets[0]
        state["orderByKey"] = column("metrics", metric)
        state["orderByAsc"] = goal in ("min", "minimize")
    if parent_run_id:
        state["runsExpanded"] = {parent_run_id: True}
    return T.MLFLOW_SHARED_VIEW_PREFIX + TRIALS_VIEW, json.dumps(state)


def trials_link(base: str, experiment_id: str, experiment_tags: Mapping[str, str]) -> str:
    """The MLflow UI address of an experiment opened on its campaign's trials where the
    experiment holds the view (`trials_view`), else on its runs (`ui_link`)."""
    from lineage import tags as T

    if T.MLFLOW_SHARED_VIEW_PREFIX + TRIALS_VIEW not in experiment_tags:
        return ui_link(base, experiment_id=experiment_id)
    return trials_view_link(base, experiment_id)


def trials_view_link(base: str, experiment_id: str) -> str:
    """The address of the trials view (`trials_view`) of an experiment that holds it."""
    # The view is read on the runs tab's own route: the experiment's address redirects
    # there and drops the key on the way.
    prefix = base.rstrip("/") + "/" if base else ""
    route = f"#/experiments/{experiment_id}/runs"
    return f"{prefix}{route}?viewStateShareKey={TRIALS_VIEW}&{TRAINING_VIEW}"


def compare_link(base: str, experiment_id: str, run_ids: Sequence[str]) -> str:
    """The MLflow UI address comparing ``run_ids`` (a campaign's trials): its parallel
    coordinates, scatter and contour plots over their params and metrics."""
    import json
    from urllib.parse import quote

    prefix = base.rstrip("/") + "/" if base else ""
    runs = quote(json.dumps(list(run_ids), separators=(",", ":")))
    experiments = quote(json.dumps([experiment_id], separators=(",", ":")))
    return f"{prefix}#/compare-runs?runs={runs}&experiments={experiments}&{TRAINING_VIEW}"
