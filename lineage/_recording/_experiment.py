"""Experiments ``lineage`` creates, and the names of the runs it creates.

An experiment made here carries ``mlflow.experimentKind = custom_model_development`` so that
the MLflow UI (3.x) opens it on its training runs, not on the empty GenAI traces view. A run
``start_run`` creates without a ``run_name`` is called ``<script>-<6 hex digits>``: MLflow's
own generated names (``overjoyed-slug-911``) come from the ``random`` module, so a script
that seeds it (``random.seed``, MindSpore's ``set_seed``) gives every run the same name.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence

from lineage import tags as T
from lineage._errors import NotFoundError, StoreError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["default_run_name", "ensure_experiment"]


def ensure_experiment(client_or_uri: Any, name: str, *, restore_deleted: bool = False) -> str:
    """The id of the active experiment called ``name``, created if missing.

    ``client_or_uri``: an ``mlflow.tracking.MlflowClient`` or a tracking URI (``None``: the
    default, see :func:`lineage.uri.resolve_tracking_uri`). A new experiment is tagged
    ``mlflow.experimentKind = custom_model_development`` (the MLflow UI then opens it on its
    runs). A deleted experiment of that name is restored when ``restore_deleted``, else
    :class:`~lineage.UsageError`. Safe against another process creating it at the same time.
    Raises :class:`~lineage.StoreError` when the store refuses."""
    if not isinstance(name, str) or not name.strip():
        raise UsageError(f"experiment name must be a non-empty string, got {name!r}")
    from mlflow.exceptions import MlflowException

    client = _client(client_or_uri)
    try:
        found = client.get_experiment_by_name(name)
        if found is not None:
            if found.lifecycle_stage != "active":
                if not restore_deleted:
                    raise UsageError(
                        f"experiment {name!r} is deleted; restore it or choose another name"
                    )
                client.restore_experiment(found.experiment_id)
            return str(found.experiment_id)
        try:
            return str(
                client.create_experiment(name, tags={T.EXPERIMENT_KIND: T.EXPERIMENT_KIND_TRAINING})
            )
        except MlflowException:
            # Another process created it between our lookup and our insert.
            again = client.get_experiment_by_name(name)
            if again is None:
                raise
            return str(again.experiment_id)
    except MlflowException as exc:
        from lineage._errors import one_line

        raise StoreError(f"experiment {name!r}: the store refused: {one_line(exc)}") from exc


def experiment_from_env(client: Any, experiment: str | None) -> str:
    """``start_run``'s experiment: ``experiment`` if given, else ``MLFLOW_EXPERIMENT_ID``
    (must exist), else ``MLFLOW_EXPERIMENT_NAME``, else ``Default``; created if missing."""
    if experiment is None:
        env_id = os.environ.get("MLFLOW_EXPERIMENT_ID")
        if env_id:
            if client.get_experiment(env_id) is None:
                raise NotFoundError(f"MLFLOW_EXPERIMENT_ID names no experiment, got {env_id!r}")
            return str(env_id)
        experiment = os.environ.get("MLFLOW_EXPERIMENT_NAME") or "Default"
    return ensure_experiment(client, experiment)


def _client(client_or_uri: Any) -> Any:
    if client_or_uri is None or isinstance(client_or_uri, str):
        from mlflow.tracking import MlflowClient

        from lineage.uri import resolve_tracking_uri

        return MlflowClient(tracking_uri=resolve_tracking_uri(client_or_uri))
    return client_or_uri


def default_run_name(argv: Sequence[str] | None = None) -> str:
    """``<script stem>-<6 hex digits>``: distinct per run whatever the script seeded (the
    digits come from ``os.urandom``), and saying which script made it (``train-3fa9c1``;
    ``run-...`` for ``python -c`` and the REPL, ``notebook-...`` under Jupyter)."""
    argv = sys.argv if argv is None else argv
    first = argv[0] if argv else ""
    stem = os.path.splitext(os.path.basename(first))[0]
    if stem.startswith("ipykernel"):
        stem = "notebook"
    elif stem in ("", "-c", "-m", "__main__"):
        stem = "run"
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-.")[:40] or "run"
    return f"{stem}-{os.urandom(3).hex()}"
