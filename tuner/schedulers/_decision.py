"""What a policy (a scheduler, the pruner, the online diagnosis) decides about a running
attempt, and which decision wins when two disagree.

A policy reads an `AttemptView` and returns a decision; it never changes the attempt. The
controller applies the decision that `strongest` picks, in one place (`tuner.campaign`).
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import optuna

__all__ = [
    "KEEP",
    "AttemptView",
    "Continue",
    "Decision",
    "Keep",
    "Pause",
    "Stop",
    "strongest",
]


class AttemptView(Protocol):
    """What a policy reads of a running attempt (read-only)."""

    @property
    def number(self) -> int:
        """The trial's number."""
        ...

    @property
    def trial(self) -> optuna.Trial:
        """The study's trial (its attributes and parameters)."""
        ...

    @property
    def attempt(self) -> int:
        """Which attempt of the trial this is (1 for the first)."""
        ...

    @property
    def latest(self) -> Mapping[str, float]:
        """Each metric's newest reported value."""
        ...

    @property
    def reported_steps(self) -> Set[int]:
        """The steps whose target value reached the study."""
        ...

    @property
    def resumed_step(self) -> int | None:
        """The checkpoint step a continuation resumed from (None for a fresh start)."""
        ...


@dataclass(frozen=True)
class Decision:
    """A policy's verdict about one attempt. ``rank`` orders the kinds (see `strongest`)."""

    rank = 0


@dataclass(frozen=True)
class Keep(Decision):
    """The attempt goes on."""


#: The one `Keep`.
KEEP = Keep()


@dataclass(frozen=True)
class Stop(Decision):
    """Stop the attempt now; the trial is told PRUNED with ``reason`` and ``attrs`` (user
    attributes set just before)."""

    reason: str
    attrs: Mapping[str, Any] = field(default_factory=dict)
    rank = 1


@dataclass(frozen=True)
class Pause(Decision):
    """Stop the attempt once its checkpoint of ``step`` is committed (or the trial's grace
    period passed), as a pause a continuation may resume: PRUNED with ``tuner.paused_at`` =
    ``step``. ``what``: the verdict's words (``at rung step 3 (loss=..., rank 2 of 2)``)."""

    step: int
    what: str
    by: str = "asha"
    rank = 2


@dataclass(frozen=True)
class Continue(Decision):
    """The attempt's work goes on as trial ``successor`` (already in the study): stop it now,
    told PRUNED with ``reason`` and ``attrs``, and let the successor count in its place."""

    successor: int
    reason: str
    attrs: Mapping[str, Any] = field(default_factory=dict)
    rank = 3


def strongest(*decisions: Decision) -> Decision:
    """The decision that wins: `Continue` over `Pause` over `Stop` over `Keep`; between two of
    one kind, the first given (the controller passes the scheduler's, then the pruner's,
    then the diagnosis's).

    Why this order: a `Continue` has already put the attempt's successor into the study, so
    ignoring it would run the work twice; a `Pause` has already marked the trial as paused in
    the study (so that a restarted controller pauses it too) and keeps the work resumable,
    which a stop would throw away; any stop beats going on."""
    best: Decision = KEEP
    for decision in decisions:
        if decision.rank > best.rank:
            best = decision
    return best
