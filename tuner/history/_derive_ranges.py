"""The numeric ranges of a derived campaign: the refined span around the best runs (the
focus), a recorded range widened at a bound, and the rounding of what is written.

See `tuner.history._derive` for when each applies.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = [
    "MARGIN",
    "TOP_EDGE",
    "add_focus",
    "at_bound",
    "log_scale",
    "margin_share",
    "numeric_spec",
    "refined_span",
    "widen",
]

#: A refined numeric range is widened on each side by ``MARGIN / sqrt(k)`` of the recorded
#: span, ``k`` the number of best runs it is refined around: the fewer runs locate the good
#: region, the less that location is known, and a related task's optimum may have moved
#: (0.24 of the span for the best 6 of 24 runs, 0.12 for 25 of 100).
MARGIN = 0.6
#: The best runs whose place at a bound of the recorded range widens it beyond that bound.
TOP_EDGE = 5


#: Positive values spanning at least this ratio, with at least `LOG_SHARE` of them below the
#: geometric middle of their span, were sampled on a log scale.
LOG_RATIO = 10.0
LOG_SHARE = 1 / 3


def log_scale(values: Sequence[float]) -> bool:
    """Whether recorded ``values`` were sampled on a log scale: positive, spanning a decade or
    more, with a third or more of them below the geometric middle of their span (half of a
    log-uniform sample is, a tenth of a uniform one over ``[8, 512]``). Looser than what the
    importance analysis takes for log (two decades): a width declared over ``[8, 512]`` on a log
    scale spans 1.8, and sampled uniformly a campaign would spend most trials above 128."""
    low, high = min(values), max(values)
    if low <= 0 or high < LOG_RATIO * low:
        return False
    middle = math.sqrt(low * high)
    return sum(v < middle for v in values) >= LOG_SHARE * len(values)


def margin_share(k: int) -> float:
    """The share of the recorded span a range refined around ``k`` best runs is widened by
    on each side."""
    return MARGIN / math.sqrt(max(k, 1))


def refined_span(
    values: Sequence[float], top: Sequence[float], *, log: bool, share: float
) -> tuple[float, float]:
    def scale(x: float) -> float:
        return math.log10(x) if log else x

    def back(x: float) -> float:
        return 10.0**x if log else x

    a, b = scale(min(values)), scale(max(values))
    lo, hi = scale(min(top)), scale(max(top))
    margin = share * (b - a)
    return back(max(a, lo - margin)), back(min(b, hi + margin))


def at_bound(values: Sequence[float], low: float, high: float, *, log: bool) -> str | None:
    """``low`` or ``high`` when most of the `TOP_EDGE` best ``values`` (best first) sit within
    `tuner.search.EDGE` of that end of ``[low, high]`` (on the log scale when ``log``)."""
    from tuner.search import EDGE

    best = values[:TOP_EDGE]
    if len(best) < TOP_EDGE or high <= low:
        return None

    def scaled(x: float) -> float:
        if log:
            return (math.log(x) - math.log(low)) / (math.log(high) - math.log(low))
        return (x - low) / (high - low)

    for side, near in (("low", lambda x: x <= EDGE), ("high", lambda x: x >= 1 - EDGE)):
        if sum(near(scaled(x)) for x in best) * 2 > len(best):
            return side
    return None


def widen(
    kind: str,
    lo: float,
    hi: float,
    *,
    log: bool,
    side: str,
    values: Sequence[float],
    step: float | None = None,
) -> tuple[float, float]:
    """``[lo, hi]`` grown beyond ``side`` (`tuner.search.widened`): on ``step``'s grid, or on
    the grid of the values of an int (their greatest common divisor), never across zero for
    values at or above it."""
    from tuner.search import widened

    if step is None and kind == "int" and not log:
        step = float(math.gcd(*(int(v) for v in values))) or None
    return widened(lo, hi, log, side, step=step, integer=kind == "int")


def add_focus(spec: dict[str, Any], kind: str, lo: float, hi: float) -> None:
    """``spec["focus"]`` = ``[lo, hi]`` rounded outwards, when that is inside and narrower
    than ``spec``'s range."""
    if kind == "int":
        flow, fhigh = float(math.floor(lo)), float(math.ceil(hi))
    else:
        flow, fhigh = _round_down(lo), _round_up(hi)
    flow, fhigh = max(flow, spec["low"]), min(fhigh, spec["high"])
    if (flow, fhigh) == (spec["low"], spec["high"]) or not flow < fhigh:
        return
    if kind == "int":
        spec["focus"] = {"low": int(flow), "high": int(fhigh)}
    else:
        spec["focus"] = {"low": flow, "high": fhigh}


def numeric_spec(
    kind: str, lo: float, hi: float, *, log: bool, values: Sequence[float]
) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": kind}
    if kind == "int":
        low, high = math.floor(lo), math.ceil(hi)
        if low == high:
            low, high = low - 1 if low - 1 >= min(values) else low, high + 1
        spec.update(low=int(low), high=int(high))
        step = math.gcd(*(int(v) for v in values))
        if not log and step > 1 and low % step == 0 and high % step == 0:
            spec["step"] = step
    else:
        flow, fhigh = _round_down(lo), _round_up(hi)
        if flow == fhigh:
            fhigh = _round_up(fhigh * 1.01 if fhigh else 1e-3)
        spec.update(low=flow, high=fhigh)
    if log and spec["low"] > 0:
        spec["log"] = True
    return spec


def _round_down(x: float, digits: int = 3) -> float:
    return _round(x, digits, math.floor)


def _round_up(x: float, digits: int = 3) -> float:
    return _round(x, digits, math.ceil)


def _round(x: float, digits: int, how: Any) -> float:
    """``x`` to ``digits`` significant digits, rounded by ``how`` (floor or ceil)."""
    if x == 0:
        return 0.0
    exponent = math.floor(math.log10(abs(x))) - digits + 1
    unit = 10.0**exponent
    return float(f"{how(x / unit) * unit:.{digits + 2}g}")
