"""One varying recorded param of a derived campaign: its type, range and decision.

See `tuner.history._derive` for what is tuned, over which range, and what is fixed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from tuner.history._derive_ranges import (
    MARGIN,
    TOP_EDGE,
    add_focus,
    at_bound,
    log_scale,
    margin_share,
    numeric_spec,
    refined_span,
    widen,
)

if TYPE_CHECKING:
    from lineage.importance import ParamImportance
    from lineage.store import RunRecord

__all__ = [
    "FIX_BELOW",
    "FIX_RUNS",
    "NEAR_TOP",
    "DerivedParameter",
    "add_conditions",
    "derive_parameter",
    "margin_share",
]

#: The best runs a tuned range is refined around: this share of the runs, at least 3.
TOP_SHARE = 0.25
TOP_MIN = 3
#: A parameter is fixed only when the upper end of the 95% interval of its importance is
#: below this share of the explained variation: the analysis is confident it does not matter.
FIX_BELOW = 0.05
#: ... and the same holds over this best share of the runs (enough runs to analyse them) ...
NEAR_TOP = 0.5
#: ... and at least this many runs back the analysis. With fewer, such a parameter is tuned
#: with a focus on the best run's value (`pin`): an interval from a few dozen runs of a
#: related task says little about the new one, where the parameter may decide.
FIX_RUNS = 100
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
    #: Tuned with a focus on the best run's value: the analysis found it negligible, on too
    #: few runs to fix it (`FIX_RUNS`).
    pinned: bool = False


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
    declared: dict[str, Any] | None = None,
    pin: bool = False,
) -> DerivedParameter:
    """``declared``: the parameter as the source campaign declared it (its run's
    ``space.<name>``); its type, scale, step and choices are kept, and only its bounds are
    refined (inside them) or widened. ``pin``: the focus is refined around the best run's
    value alone (a parameter found negligible on too few runs to fix it)."""
    present = [r for r in rows if _present(r.params.get(name))]
    texts = [r.params[name] for r in present]
    kind = _infer_kind(recorded_type, texts)
    if declared is not None:
        kind = "categorical" if declared.get("type") == "categorical" else str(declared["type"])
        if kind == "categorical":
            return _derive_declared_choices(
                name,
                rows,
                present,
                texts,
                declared,
                tuned=tuned,
                refine=refine or pin,
                importance=importance,
                near=near,
                flag=flag,
                pin=pin,
            )
    values = [_parse(kind, t) for t in texts]
    best = next((v for r, v in zip(present, values, strict=True) if r is rows[0]), None)
    in_best = best is not None
    if best is None and values:
        best = values[0]  # the best run lacks it: a conditional parameter, not active there
    k = max(TOP_MIN, math.ceil(TOP_SHARE * len(present)))
    top = values[:k]  # rows come best first
    refine = refine or pin
    distinct = list(dict.fromkeys(values))
    as_categorical = kind in ("bool", "categorical") or (
        kind == "int" and len(distinct) <= FEW_INTS
    )
    if as_categorical:
        chosen = [best] if pin else top
        recorded, spec, how = _choices_spec(distinct, chosen, len(present), refine=refine)
        log = False
    else:
        around = [best] * len(top) if pin else top
        recorded, spec, how, log = _range_spec(name, kind, values, around, declared, refine=refine)
    if pin and "focus" in spec:
        how = _pinned_how(spec, best)
    reason = _reason(tuned, importance, near, how, pinned=pin)
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
        pinned=pin,
    )


def _pinned_how(spec: dict[str, Any], best: Any) -> str:
    categorical = spec["type"] == "categorical"
    whole = "every choice" if categorical else "all of it"
    return (
        f"{'the recorded choices' if categorical else 'the recorded range'}; a focus on the "
        f"best run's value {_show(best)}"
        + ("" if categorical else " and its surroundings")
        + " is written below, commented out (set, one trial in five samples "
        f"{whole}, and the focus widens when the best trials lie beyond it or at its edge)"
    )


def _choices_spec(
    distinct: list[Any], top: list[Any], n_present: int, *, refine: bool
) -> tuple[tuple[Any, ...], dict[str, Any], str]:
    """A parameter derived as choices: ``(recorded choices, spec, how it was derived)``."""
    recorded: tuple[Any, ...] = tuple(_sorted(distinct))
    choices = _sorted(dict.fromkeys(top)) if refine else list(recorded)
    spec: dict[str, Any] = {"type": "categorical", "choices": list(recorded)}
    how = f"every recorded choice ({n_present} runs)"
    if choices != list(recorded):
        spec["focus"] = {"choices": choices}
        how = (
            f"every recorded choice; a focus on the choices the best {len(top)} of "
            f"{n_present} runs used is written below, commented out (set, one trial in five "
            "samples every choice, and the focus gives way when the best trial has another)"
        )
    return recorded, spec, how


def _range_spec(
    name: str,
    kind: str,
    values: list[Any],
    top: list[Any],
    declared: dict[str, Any] | None,
    *,
    refine: bool,
) -> tuple[tuple[Any, ...], dict[str, Any], str, bool]:
    """A parameter derived as a range: ``(recorded bounds, spec, how it was derived, log)``."""
    from lineage.importance import infer_spec

    n_present = len(values)
    log = (
        bool(declared.get("log"))
        if declared
        else bool(infer_spec(name, values).log) or log_scale(values)
    )
    lo_all, hi_all = min(values), max(values)
    step = None
    if declared is not None:
        lo_all, hi_all = declared["low"], declared["high"]
        step = declared.get("step")
    recorded = (lo_all, hi_all)
    share = margin_share(len(top))
    span = [*values, lo_all, hi_all]
    lo, hi = refined_span(span, top, log=log, share=share) if refine else recorded
    side = at_bound(values, lo_all, hi_all, log=log)
    low, high = recorded
    if side is not None:
        low, high = widen(kind, lo_all, hi_all, log=log, side=side, values=values, step=step)
        lo, hi = (low, hi) if side == "low" else (lo, high)
    spec = numeric_spec(kind, low, high, log=log, values=values)
    if declared is not None:  # the campaign's own scale and grid, not inferred ones
        spec = {"type": kind, "low": spec["low"], "high": spec["high"]}
        if kind == "float" and side is None:
            spec["low"], spec["high"] = float(lo_all), float(hi_all)
        if log:
            spec["log"] = True
        if step is not None:
            spec["step"] = step
    if refine:
        add_focus(spec, kind, lo, hi)
    how = (
        f"the span of the best {len(top)} of {n_present} runs, widened on each side by "
        f"{share:.2f} of the recorded span [{_show(lo_all)}, {_show(hi_all)}] "
        f"({MARGIN:g}/sqrt({len(top)}))" + (" on the log scale" if log else "")
        if refine
        else f"the recorded range ({n_present} runs)"
    )
    if refine and "focus" in spec:
        how = (
            f"the recorded range; a focus on {how} is written below, commented out (set, "
            "one trial in five samples all of it, and the focus widens when the best trials "
            "sit at its edge or beyond)"
        )
    if side is not None:
        bound = lo_all if side == "low" else hi_all
        how += (
            f"; the best {TOP_EDGE} runs mostly sit at the {side} bound of the recorded "
            f"range ({_show(bound)}): the optimum may lie beyond it, so the range reaches "
            f"{_show(spec[side])}, half its width further" + (" on the log scale" if log else "")
        )
    return recorded, spec, how, log


def _derive_declared_choices(
    name: str,
    rows: Sequence[RunRecord],
    present: Sequence[RunRecord],
    texts: Sequence[str],
    declared: dict[str, Any],
    *,
    tuned: bool,
    refine: bool,
    importance: ParamImportance | None,
    near: ParamImportance | None,
    flag: str | None,
    pin: bool = False,
) -> DerivedParameter:
    """A categorical the source campaign declared: every declared choice (one only a pruned
    trial tried too), with a focus on those the best runs used (``pin``: the best run's)."""
    choices = list(declared.get("choices") or [])
    by_text = {str(c).lower(): c for c in choices}
    values = [by_text.get(t.strip().lower(), t) for t in texts]
    best = next((v for r, v in zip(present, values, strict=True) if r is rows[0]), None)
    in_best = best is not None
    if best is None and values:
        best = values[0]
    top = values[: max(TOP_MIN, math.ceil(TOP_SHARE * len(present)))]
    if pin:
        top = [best]
    spec: dict[str, Any] = {"type": "categorical", "choices": choices}
    how = f"every choice the source campaign declared ({len(present)} runs)"
    used = [c for c in choices if c in top]
    if refine and used and used != choices:
        spec["focus"] = {"choices": used}
        how = (
            f"every declared choice; a focus on the choices the best {len(top)} of "
            f"{len(present)} runs used is written below, commented out (set, one trial in "
            "five samples every choice, and the focus gives way when the best trial has "
            "another)"
        )
    if pin and "focus" in spec:
        how = _pinned_how(spec, best)
    return DerivedParameter(
        name=name,
        kind="categorical",
        tuned=tuned,
        spec=spec if tuned else {},
        recorded=tuple(choices),
        log=False,
        best=best,
        importance=importance,
        reason=_reason(tuned, importance, near, how, pinned=pin),
        flag=flag,
        is_range=False,
        in_best=in_best,
        pinned=pin,
    )


def _present(text: str | None) -> bool:
    return text is not None and text.strip().lower() not in ("", "none", "null", "nan")


def _sorted(values: Any) -> list[Any]:
    items = list(values)
    try:
        return sorted(items)
    except TypeError:
        return sorted(items, key=str)


def _show(x: Any) -> str:
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def _reason(
    tuned: bool,
    imp: ParamImportance | None,
    near: ParamImportance | None,
    how: str,
    *,
    pinned: bool = False,
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
    if pinned:
        return (
            f"tuned ({rank}: the upper ends of its intervals are below {FIX_BELOW:g}, but "
            f"fewer than {FIX_RUNS} runs are too few to be sure it does not matter here) "
            f"over {how}"
        )
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
