"""The lifecycle of one trial attempt as the controller sees it, with its legal transitions.

    WAITING ──► RUNNING ──► COMPLETE
       │           ├──────► PRUNED
       │           └──────► FAIL
       └──────────────────► FAIL      (could not launch)

The final three are Optuna's own final states; `TrialState.optuna` maps them.
"""

from __future__ import annotations

import enum

from tuner._errors import TunerError

__all__ = ["IllegalTransition", "TrialState"]


class IllegalTransition(TunerError):
    """A trial was moved between two states that the lifecycle does not connect (a bug)."""


class TrialState(enum.Enum):
    WAITING = "WAITING"
    RUNNING = "RUNNING"
    COMPLETE = "COMPLETE"
    PRUNED = "PRUNED"
    FAIL = "FAIL"

    @property
    def is_final(self) -> bool:
        return self in _FINAL

    def can_become(self, other: TrialState) -> bool:
        return other in _LEGAL[self]

    def to(self, other: TrialState) -> TrialState:
        """``other`` if the move is legal; raises `IllegalTransition` otherwise."""
        if not self.can_become(other):
            raise IllegalTransition(
                f"a trial cannot move from {self.value} to {other.value}; "
                f"legal: {sorted(s.value for s in _LEGAL[self]) or 'none (final)'}"
            )
        return other

    @property
    def mlflow_status(self) -> str:
        """MLflow run status for this state: PRUNED runs are KILLED (tag says PRUNED)."""
        return _MLFLOW_STATUS[self]


_FINAL = frozenset({TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL})
_LEGAL: dict[TrialState, frozenset[TrialState]] = {
    TrialState.WAITING: frozenset({TrialState.RUNNING, TrialState.FAIL}),
    TrialState.RUNNING: frozenset({TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL}),
    TrialState.COMPLETE: frozenset(),
    TrialState.PRUNED: frozenset(),
    TrialState.FAIL: frozenset(),
}
_MLFLOW_STATUS = {
    TrialState.WAITING: "SCHEDULED",
    TrialState.RUNNING: "RUNNING",
    TrialState.COMPLETE: "FINISHED",
    TrialState.PRUNED: "KILLED",
    TrialState.FAIL: "FAILED",
}
