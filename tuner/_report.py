"""One report of a trial, as the controller reads it from the channel (`tuner._protocol`).

Part of the trial protocol, kept in a module of its own so that a training script importing
`tuner.trial` does not load `dataclasses`: only the controller's side builds reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Report"]


@dataclass(frozen=True)
class Report:
    """One intermediate report from a trial: ``step`` and its metric values.

    ``source`` is ``"api"`` for `tuner.trial.report` lines; collectors may add others.
    ``recorded``: the trial's own lineage run already holds these values (the script records
    into its trial's run with ``lineage``), so the controller does not write them again.
    """

    step: int
    metrics: Mapping[str, float]
    source: str = "api"
    timestamp: float = 0.0
    recorded: bool = False
