"""Best trials at the edge of a range: the sign that a range (a refined one from ``tuner init``
most often) cut the optimum off.

`at_bounds` looks at the campaign's own best finished trials (imported runs excluded) and
names every numeric parameter at whose low or high bound most of them sit (within ``EDGE`` of
the range, in log space for log ranges). `widened` proposes the range grown by half its width
on that side (in log space on a log range), on the parameter's step grid, to whole numbers
for an int, and never across zero for a range of values at or above it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tuner.search._attrs import IMPORTED_ATTR

if TYPE_CHECKING:
    from optuna.study import StudyDirection
    from optuna.trial import FrozenTrial


__all__ = ["EDGE", "AtBound", "at_bounds", "widened"]

#: How close to a bound (share of the range) counts as "at" it.
EDGE = 0.02


@dataclass(frozen=True)
class AtBound:
    """``param``'s best trials sit at its ``side`` (``low`` or ``high``) bound ``bound``."""

    param: str
    side: str
    bound: float
    best: int
    of: int
    low: float
    high: float
    log: bool
    step: float | None = None
    integer: bool = False

    def line(self) -> str:
        new_low, new_high = widened(
            self.low, self.high, self.log, self.side, step=self.step, integer=self.integer
        )
        return (
            f"{self.best} of the {self.of} best trials sit at the {self.side} bound of "
            f"{self.param} ({self.bound:g}): the optimum may lie beyond it; try "
            f"low: {new_low:g}, high: {new_high:g}"
        )


def widened(
    low: float,
    high: float,
    log: bool,
    side: str,
    *,
    step: float | None = None,
    integer: bool = False,
) -> tuple[float, float]:
    """``[low, high]`` grown beyond ``side`` by half its width (log ranges: in log space, at
    least half a decade), by whole ``step``s on a grid, to whole numbers for an ``integer``
    (at least 1 on a log scale), and never below zero for a range that starts at or above it
    (an int that starts above zero stays above it)."""
    if log and low > 0:
        span = max(math.log10(high) - math.log10(low), 1.0) / 2
        new_low, new_high = (low / 10**span, high) if side == "low" else (low, high * 10**span)
    else:
        span = (high - low) / 2
        if step:
            span = math.ceil(span / step) * step
        new_low, new_high = (low - span, high) if side == "low" else (low, high + span)
        if (low >= 0 and new_low < 0) or (integer and low > 0 and new_low <= 0):
            if integer and low > 0:  # a count stays positive: its smallest positive grid value
                unit = step or 1.0
                new_low = low - math.floor((low - 1e-9) / unit) * unit
            else:
                new_low = low - math.floor(low / step) * step if step else 0.0
    if integer:
        new_low, new_high = math.floor(new_low), math.ceil(new_high)
        if log:
            new_low = max(new_low, 1)
    return new_low, new_high


def at_bounds(
    trials: Sequence[FrozenTrial], directions: Sequence[StudyDirection], *, top: int = 5
) -> list[AtBound]:
    """Parameters at whose bound most of the ``top`` best own COMPLETE trials sit (first
    objective); empty with fewer than ``top`` such trials."""
    from optuna.distributions import FloatDistribution, IntDistribution
    from optuna.study import StudyDirection
    from optuna.trial import TrialState

    own = [
        t
        for t in trials
        if t.state == TrialState.COMPLETE and t.values and IMPORTED_ATTR not in t.system_attrs
    ]
    if len(own) < top:
        return []
    sign = -1.0 if directions and directions[0] == StudyDirection.MAXIMIZE else 1.0
    best = sorted(own, key=lambda t: sign * t.values[0])[:top]
    dists = {n: d for t in best for n, d in t.distributions.items()}
    out = []
    for name, dist in sorted(dists.items()):
        if not isinstance(dist, (FloatDistribution, IntDistribution)):
            continue
        low, high = float(dist.low), float(dist.high)
        log = bool(dist.log) and low > 0
        if high <= low:
            continue

        def scaled(v: float, low: float = low, high: float = high, log: bool = log) -> float:
            if log:
                return (math.log(v) - math.log(low)) / (math.log(high) - math.log(low))
            return (v - low) / (high - low)

        values = [scaled(float(t.params[name])) for t in best if name in t.params]
        for side, near in (("low", lambda x: x <= EDGE), ("high", lambda x: x >= 1 - EDGE)):
            count = sum(near(v) for v in values)
            if values and count * 2 > len(values):
                bound = low if side == "low" else high
                integer = isinstance(dist, IntDistribution)
                step = float(dist.step) if dist.step is not None and not log else None
                hit = AtBound(name, side, bound, count, len(values), low, high, log, step, integer)
                out.append(hit)
    return out
