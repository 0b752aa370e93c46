"""What a ranking lets the user do: which parameters to tune, which did not matter, which the
runs cannot decide yet and about how many more runs would, and where the order is a tie.

Everything here reads the normalized result (shares, their intervals, the run count), so it
means the same for every evaluator.

Rank ranges. Two parameters whose intervals overlap cannot be told apart, so a parameter's
place is a range: its best possible rank is one more than the number of parameters whose
interval lies wholly above its own, its worst is the number of parameters less those whose
interval lies wholly below. Non-overlap of two 95% intervals is a stricter test of a
difference than a test of the difference itself: a rank shown as one place is an order the
runs support; a range is a tie.

Verdicts. ``tune``: significant (the interval's lower end is above zero). ``no effect``: not
significant and the upper end is below :data:`NEGLIGIBLE_SHARE`, so whatever effect it has is
too small to be worth a tuning dimension, at the interval's confidence. ``cannot tell``:
neither. For each undecided parameter the runs that would likely decide it are estimated from
its interval: the standard error of a mean over runs shrinks as ``1/sqrt(runs)``, so if the
share and the per-run spread stay what they are, ``runs * ((z_conf + z_power) * se / gap)**2``
runs put the interval on one side (``gap`` is the distance from the share to zero, for
significance, or to :data:`NEGLIGIBLE_SHARE`, for no effect; whichever needs fewer runs) with
probability :data:`POWER`. A point estimate from a noisy interval: a guide to the order of
magnitude, not a promise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Protocol


class Ranked(Protocol):
    """What the advice reads of a ranked parameter (`lineage.importance.ParamImportance`
    has it; the results import this module, so it names the shape, not the class)."""

    @property
    def name(self) -> str: ...
    @property
    def importance(self) -> float: ...
    @property
    def ci(self) -> tuple[float, float]: ...
    @property
    def significant(self) -> bool: ...


__all__ = [
    "NEGLIGIBLE_SHARE",
    "POWER",
    "Advice",
    "advise",
    "rank_ranges",
    "runs_to_decide",
    "verdict",
]

NEGLIGIBLE_SHARE = 0.05
"""A parameter whose interval stays below this share of the total importance did not matter."""

POWER = 0.8
"""The chance that the estimated number of runs decides an undecided parameter."""

_MAX_FACTOR = 20
"""Beyond this many times the current runs, the estimate is reported as "more than"."""

TUNE, NO_EFFECT, CANNOT_TELL = "tune", "no effect", "cannot tell"


def rank_ranges(params: Sequence[Ranked]) -> list[tuple[int, int]]:
    """``(best, worst)`` possible rank of each parameter, from whose intervals lie wholly above
    or below its own (1 is the most important).

    Args:
        params: the ranked parameters of an :class:`ImportanceResult` (``result.params``).

    Returns:
        One ``(best, worst)`` pair per parameter, in the order given.
    """
    out = []
    for p in params:
        above = sum(1 for q in params if q is not p and q.ci[0] > p.ci[1])
        below = sum(1 for q in params if q is not p and q.ci[1] < p.ci[0])
        out.append((1 + above, len(params) - below))
    return out


def _runs_to_decide(p: Ranked, n_runs: int, confidence: float) -> int | None:
    """Total runs that would likely decide ``p`` (see the module docs); None when too many."""
    normal = NormalDist()
    z_conf = normal.inv_cdf(0.5 + confidence / 2.0)  # the level of this one interval
    z_sum = z_conf + normal.inv_cdf(POWER)
    se = max(p.ci[1] - p.importance, 0.0) / z_conf
    if se == 0.0:
        return None
    needed = []
    for gap in (p.importance, NEGLIGIBLE_SHARE - p.importance):
        if gap > 0:
            needed.append(n_runs * (z_sum * se / gap) ** 2)
    if not needed or min(needed) > _MAX_FACTOR * n_runs:
        return None
    return max(n_runs + 1, math.ceil(min(needed)))


def verdict(p: Ranked) -> str:
    """What a ranked parameter's interval supports: tune it (significant), it did not matter
    (its interval's upper end is below a negligible share), or the runs cannot tell yet.

    Args:
        p: one ranked parameter.

    Returns:
        ``TUNE``, ``NO_EFFECT`` or ``CANNOT_TELL``.
    """
    if p.significant:
        return TUNE
    return NO_EFFECT if p.ci[1] < NEGLIGIBLE_SHARE else CANNOT_TELL


@dataclass(frozen=True)
class Advice:
    """What the ranking supports, in three groups, and the runs that would decide the third.

    ``more_runs`` is how many runs to *add* for every undecided parameter to be likely decided
    (None when none is undecided or the estimate exceeds ``20 x`` the runs so far, in which
    case ``more_runs_over`` holds that bound).
    """

    n_runs: int
    tune: list[str]
    no_effect: list[str]
    cannot_tell: list[str]
    more_runs: int | None
    more_runs_over: int | None = None

    def lines(self) -> list[str]:
        """One line per non-empty group, in words a user acts on."""
        out = []
        if self.tune:
            out.append(f"tune these: {', '.join(self.tune)}")
        if self.no_effect:
            out.append(f"these did not matter in {self.n_runs} runs: {', '.join(self.no_effect)}")
        if self.cannot_tell:
            if self.more_runs is not None:
                more = f"run about {self.more_runs} more"
            else:
                more = f"more than {self.more_runs_over} more runs would be needed"
            out.append(f"cannot tell yet: {', '.join(self.cannot_tell)} ({more})")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "tune": list(self.tune),
            "no_effect": list(self.no_effect),
            "cannot_tell": list(self.cannot_tell),
            "more_runs": self.more_runs,
            "more_runs_over": self.more_runs_over,
            "negligible_share": NEGLIGIBLE_SHARE,
            "lines": self.lines(),
        }


def runs_to_decide(p: Ranked, n_runs: int, confidence: float = 0.95) -> int | None:
    """Total runs that would likely decide an undecided parameter (None: decided, or more than
    20 times ``n_runs``).

    Args:
        p: one ranked parameter.
        n_runs: the runs the ranking was computed from.
        confidence: the level of each interval (``ImportanceResult.interval_level``).

    Returns:
        The total number of runs (not the runs to add), or None.
    """
    if verdict(p) != CANNOT_TELL:
        return None
    return _runs_to_decide(p, n_runs, confidence)


def advise(params: Sequence[Ranked], n_runs: int, confidence: float = 0.95) -> Advice:
    """Group ``params`` by verdict (in ranking order) and estimate the runs to add.

    ``confidence`` is the level of each interval (for intervals that hold together, the
    per-interval level: ``ImportanceResult.interval_level``).

    Args:
        params: the ranked parameters (``result.params``), most important first.
        n_runs: the runs the ranking was computed from.
        confidence: the level of each interval.

    Returns:
        An :class:`Advice`; its ``lines()`` are what ``lineage importance`` prints.
    """
    groups: dict[str, list[str]] = {TUNE: [], NO_EFFECT: [], CANNOT_TELL: []}
    for p in params:
        groups[verdict(p)].append(p.name)
    totals = [runs_to_decide(p, n_runs, confidence) for p in params if verdict(p) == CANNOT_TELL]
    more = over = None
    if totals:
        if any(t is None for t in totals):
            over = _MAX_FACTOR * n_runs
        else:
            more = max(t for t in totals if t is not None) - n_runs
    return Advice(n_runs, groups[TUNE], groups[NO_EFFECT], groups[CANNOT_TELL], more, over)
