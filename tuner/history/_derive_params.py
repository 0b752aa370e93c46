"""One varying recorded param of a derived campaign: its type, range and decision.

See `tuner.history._derive` for what is tuned, over which range, and what is fixed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from lineage.importance import ParamImportance
    from lineage.store import RunRecord

__all__ = [
    "FIX_BELOW",
    "NEAR_TOP",
    "DerivedParameter",
    "add_conditions",
    "derive_parameter",
    "margin_share",
]

#: The best runs a tuned range is refined around: this share of the runs, at least 3.
TOP_SHARE = 0.25
TOP_MIN = 3
#: A refined numeric range is widened on each side by ``MARGIN / sqrt(k)`` of the recorded
#: span, ``k`` the number of best runs it is refined around: the fewer runs locate the good
#: region, the less that location is known, and a related task's optimum may have moved
#: (0.24 of the span for the best 6 of 24 runs, 0.12 for 25 of 100).
MARGIN = 0.6
#: A parameter is fixed only when the upper end of the 95% interval of its importance is
#: below this share of the explained variation: the analysis is confident it does not matter.
FIX_BELOW = 0.05
#: ... and the same holds over this best share of the runs (enough runs to analyse them).
NEAR_TOP = 0.5
#: The best runs whose place at a bound of the recorded range widens it beyond that bound.
TOP_EDGE = 5
#: An int parameter with at most this many distinct recorded values is a categorical.
FEW_INTS = 4


@dataclass
class DerivedParameter:
    """One varying recorded hyperparameter and what the derived campaign does with it."""

    name: str
    #: ``float``, ``int``, ``bool`` or ``categorical`` (a bool is written as a categorical).
    kind: Literal["float", "int", "bool", "categorical"]
    tuned: bool
    #: The campaign's ``parameters.<name>`` entry (empty when fixed).
    spec: dict[str, Any]
    #: ``(low, high)`` of the recorded values, or the recorded choices.
    recorded: tuple[Any, ...]
    log: bool
    best: Any
    importance: ParamImportance | None = None
    #: Whether ``recorded`` is a ``(low, high)`` range rather than choices.
    is_range: bool = False
    #: Whether the best run had it (a conditional parameter may be inactive there).
    in_best: bool = True
    #: Why it is tuned over this range, or why it is fixed (one line).
    reason: str = ""
    #: The command-line flag that passes it (``--batch-size``), when the runs recorded one.
    flag: str | None = None


def _parse(kind: str, text: str) -> Any:
    if kind == "bool":
        return text.strip().lower() == "true"
    if kind == "int":
        return int(float(text))
    if kind == "float":
        return float(text)
    return text


def _infer_kind(recorded_type: str | None, texts: Sequence[str]) -> str:
    if recorded_type in ("int", "float", "bool"):
        return recorded_type
    if recorded_type == "str":
        return "categorical"
    if all(t.strip().lower() in ("true", "false") for t in texts):
        return "bool"
    try:
        numbers = [float(t) for t in texts]
    except ValueError:
        return "categorical"
    if not all(math.isfinite(x) for x in numbers):
        return "categorical"
    return (
        "int"
        if all(x.is_integer() and "." not in t for x, t in zip(numbers, texts, strict=True))
        else "float"
    )


def derive_parameter(
    name: str,
    rows: Sequence[RunRecord],
    recorded_type: str | None,
    *,
    tuned: bool,
    refine: bool,
    importance: ParamImportance | None,
    flag: str | None,
    near: ParamImportance | None = None,
) -> DerivedParameter:
    from lineage.importance import infer_spec

    present = [r for r in rows if _present(r.params.get(name))]
    texts = [r.params[name] for r in present]
    kind = _infer_kind(recorded_type, texts)
    values = [_parse(kind, t) for t in texts]
    best = next((v for r, v in zip(present, values, strict=True) if r is rows[0]), None)
    in_best = best is not None
    if best is None and values:
        best = values[0]  # the best run lacks it: a conditional parameter, not active there
    k = max(TOP_MIN, math.ceil(TOP_SHARE * len(present)))
    top = values[:k]  # rows come best first
    distinct = list(dict.fromkeys(values))
    as_categorical = kind in ("bool", "categorical") or (
        kind == "int" and len(distinct) <= FEW_INTS
    )
    log = False
    if as_categorical:
        recorded: tuple[Any, ...] = tuple(_sorted(distinct))
        choices = _sorted(dict.fromkeys(top)) if refine else list(recorded)
        spec: dict[str, Any] = {"type": "categorical", "choices": list(recorded)}
        how = f"every recorded choice ({len(present)} runs)"
        if choices != list(recorded):
            spec["focus"] = {"choices": choices}
            how = (
                f"every recorded choice, with a focus on the choices the best {len(top)} of "
                f"{len(present)} runs used (one trial in five samples every choice, and the "
                "focus gives way when the best trial has another)"
            )
    else:
        log = bool(infer_spec(name, values).log)
        lo_all, hi_all = min(values), max(values)
        recorded = (lo_all, hi_all)
        share = margin_share(len(top))
        lo, hi = _refine(values, top, log=log, share=share) if refine else recorded
        side = _at_bound(values, lo_all, hi_all, log=log)
        low, high = recorded
        if side is not None:
            low, high = _widen(kind, lo_all, hi_all, log=log, side=side)
            lo, hi = (low, hi) if side == "low" else (lo, high)
        spec = _numeric_spec(kind, low, high, log=log, values=values)
        if refine:
            _add_focus(spec, kind, lo, hi)
        how = (
            f"the span of the best {len(top)} of {len(present)} runs, widened on each side by "
            f"{share:.2f} of the recorded span [{_show(lo_all)}, {_show(hi_all)}] "
            f"({MARGIN:g}/sqrt({len(top)}))" + (" on the log scale" if log else "")
            if refine
            else f"the recorded range ({len(present)} runs)"
        )
        if refine and "focus" in spec:
            how = (
                f"a focus on {how}, inside the recorded range (one trial in five samples all "
                "of it, and the focus widens when the best trials sit at its edge or beyond)"
            )
        if side is not None:
            bound = lo_all if side == "low" else hi_all
            how += (
                f"; the best {TOP_EDGE} runs mostly sit at the {side} bound of the recorded "
                f"range ({_show(bound)}): the optimum may lie beyond it, so the range reaches "
                f"{_show(spec[side])}, half its width further"
                + (" on the log scale" if log else "")
            )
    reason = _reason(tuned, importance, near, how)
    return DerivedParameter(
        name=name,
        kind=kind,  # type: ignore[arg-type]
        tuned=tuned,
        spec=spec if tuned else {},
        recorded=recorded,
        log=log,
        best=best,
        importance=importance,
        reason=reason,
        flag=flag,
        is_range=not as_categorical,
        in_best=in_best,
    )


def _present(text: str | None) -> bool:
    return text is not None and text.strip().lower() not in ("", "none", "null", "nan")


def _sorted(values: Any) -> list[Any]:
    items = list(values)
    try:
        return sorted(items)
    except TypeError:
        return sorted(items, key=str)


def margin_share(k: int) -> float:
    """The share of the recorded span a range refined around ``k`` best runs is widened by
    on each side."""
    return MARGIN / math.sqrt(max(k, 1))


def _refine(
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


def _at_bound(values: Sequence[float], low: float, high: float, *, log: bool) -> str | None:
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


def _widen(kind: str, lo: float, hi: float, *, log: bool, side: str) -> tuple[float, float]:
    """``[lo, hi]`` grown beyond ``side`` (`tuner.search.widened`), not across zero for a
    range of positive values, and to whole numbers for an int."""
    from tuner.search import widened

    low, high = widened(lo, hi, log, side)
    if lo >= 0 and low < 0:
        low = 0.0
    if kind == "int":
        low, high = math.floor(low), math.ceil(high)
        if log:
            low = max(low, 1)
    return low, high


def _add_focus(spec: dict[str, Any], kind: str, lo: float, hi: float) -> None:
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


def _numeric_spec(
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


def _show(x: Any) -> str:
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def _reason(
    tuned: bool, imp: ParamImportance | None, near: ParamImportance | None, how: str
) -> str:
    if imp is None:
        return f"tuned (not ranked) over {how}" if tuned else "fixed at the best run's value"
    rank = f"importance {imp.importance:.2f} [{imp.ci[0]:.2f}, {imp.ci[1]:.2f}]"
    if near is not None:
        rank += (
            f", over the best half of the runs {near.importance:.2f} "
            f"[{near.ci[0]:.2f}, {near.ci[1]:.2f}]"
        )
    if not tuned:
        return (
            f"fixed at the best run's value ({rank}: not significant, and the upper ends of its "
            f"intervals are below {FIX_BELOW:g}, so it does not matter)"
        )
    if imp.significant:
        return f"tuned ({rank}; significant) over {how}"
    return (
        f"tuned ({rank}; not significant, but not shown to be below {FIX_BELOW:g} either, so "
        f"it may matter) over {how}"
    )


def add_conditions(params: list[DerivedParameter], rows: Sequence[RunRecord]) -> None:
    """A tuned parameter some runs lack, present exactly when a tuned categorical takes
    certain values, gets ``when: {that: [values]}`` (``momentum`` only with ``optimizer:
    momentum``)."""
    for p in params:
        if not p.tuned:
            continue
        has = [_present(r.params.get(p.name)) for r in rows]
        if all(has):
            continue
        for q in params:
            if q is p or not q.tuned or q.spec.get("type") != "categorical":
                continue
            on = {r.params.get(q.name) for r, h in zip(rows, has, strict=True) if h}
            off = {r.params.get(q.name) for r, h in zip(rows, has, strict=True) if not h}
            if None in on or on & off:
                continue
            chosen = [c for c in q.spec["choices"] if str(c) in on or _text(c) in on]
            if chosen:
                p.spec["when"] = {q.name: chosen if len(chosen) > 1 else chosen[0]}
                break


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
