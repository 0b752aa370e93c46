"""The run a recorder writes into, the parameters it logs there, and how the run ends."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from lineage import checkpoints
from lineage import tags as T
from lineage._errors import UsageError

__all__ = ["ParamLog", "acquire_run", "checkpoint_root", "exit_status"]


def acquire_run(run: Any, experiment: str | None) -> tuple[Any, bool]:
    """``run`` when given, else the active lineage run, else a new run in ``experiment``
    (attached to ``MLFLOW_RUN_ID`` under the tuner); and whether the caller started it (and
    so ends it).

    Args:
        run: a `lineage.Run` to record into; None: the active run, else a new one.
        experiment: the experiment a new run is created in (None: `lineage.start_run`'s
            default); unused when a run is given or active.

    Returns:
        The run, and True when this call started it (the caller ends it), False otherwise.

    Raises:
        UsageError: starting a new run failed on an argument or the environment, as
            `lineage.start_run` raises it.
        StoreError: the store cannot be opened or refuses the new run.
    """
    if run is not None:
        return run, False
    import lineage

    active = lineage.active_run()
    if active is not None:
        return active, False
    return lineage.start_run(experiment=experiment), True


def exit_status(exc_type: type[BaseException] | None) -> str:
    """The status a recorder left by ``exc_type`` ends its run with: FINISHED without an
    exception, KILLED on Ctrl-C, else FAILED.

    Args:
        exc_type: the type of the exception the recorder's block ended with; None: it ended
            normally.

    Returns:
        ``FINISHED``, ``KILLED`` (a ``KeyboardInterrupt``) or ``FAILED``.
    """
    if exc_type is None:
        return "FINISHED"
    return "KILLED" if issubclass(exc_type, KeyboardInterrupt) else "FAILED"


class ParamLog:
    """Logs parameters into one run a key at a time. MLflow params are immutable: a value
    the script already logged differently is kept, and the clash is noted in the tag
    `lineage.tags.CONFLICTS` (JSON ``{key: the value not logged}``) instead of failing the
    training. None values are skipped."""

    def __init__(self) -> None:
        self.conflicts: dict[str, str] = {}

    def log(self, run: Any, params: Mapping[str, Any]) -> None:
        clashed = False
        for key, value in params.items():
            if value is None:
                continue
            try:
                run.log_params({key: value})
            except UsageError:
                self.conflicts[key] = str(value)
                clashed = True
        if clashed:
            run.set_tags({T.CONFLICTS: json.dumps(self.conflicts)[:4000]})


def checkpoint_root(rank: int | None) -> str | None:
    """The trial's checkpoint folder (``TUNER_CHECKPOINT_DIR``) when this process saves
    checkpoints: under the tuner, on rank 0 or in a single process (data parallel: every
    rank holds the same weights, and all of them restore rank 0's checkpoint). None
    otherwise, and saving does nothing.

    Args:
        rank: this process's rank; None: not distributed.

    Returns:
        The folder named by ``TUNER_CHECKPOINT_DIR`` when it is set and non-empty and
        ``rank`` is None or 0; None otherwise.
    """
    root = os.environ.get(checkpoints.CHECKPOINT_DIR)
    return root if root and rank in (None, 0) else None
