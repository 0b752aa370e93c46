"""The trial lifecycle the controller drives; defined in `tuner.records`, which also reads it
when it ends the runs of trials a dead controller had already told the study about."""

from __future__ import annotations

from tuner.records import IllegalTransition, TrialState

__all__ = ["IllegalTransition", "TrialState"]
