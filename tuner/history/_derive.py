"""A campaign derived from history: ``tuner init --from EXPERIMENT``.

`derive_campaign` reads the finished runs of one experiment (lineage's public store and
query API), ranks their varying hyperparameters with lineage's importance analysis
(`lineage.importance.get_param_importances`) and decides, per parameter:

- **tuned** when the analysis finds it significant (the lower end of its interval is above
  zero), over a range *refined around the best runs*: the span of the values the best
  quarter of the runs (at least 3) used, widened by a tenth of the recorded span on each
  side (on the log scale when the values spread over decades) and kept within the recorded
  range; a categorical keeps the choices those best runs used;
- **fixed** at the best run's value otherwise (written into the command, where the recorded
  command line passes it), with its importance in a comment.

When no parameter is significant (or there are fewer runs than the analysis needs) every
varying parameter is tuned over its recorded range: too little evidence to fix anything.

Which recorded params are hyperparameters: a campaign's trials hold the campaign's search
space (its campaign run's ``space.*`` params); runs launched by hand hold the flags of their
recorded command line (``lineage.command``), the knobs the user turned, so quantities a
callback derives (parameter counts, steps per epoch) do not compete with their causes; runs
without a recorded command hold every varying param.

`render_campaign` (``_derive_yaml``) writes the result as a commented campaign YAML.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from tuner._errors import ConfigError
from tuner.history._derive_command import command_flags, derive_command

if TYPE_CHECKING:
    from lineage.importance import ImportanceResult, ParamImportance
    from lineage.store import RunRecord

__all__ = ["DerivedCampaign", "DerivedParameter", "derive_campaign"]

#: The best runs a tuned range is refined around: this share of the runs, at least 3.
TOP_SHARE = 0.25
TOP_MIN = 3
#: A tuned numeric range is widened by this share of the recorded span on each side.
MARGIN = 0.1
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


@dataclass
class DerivedCampaign:
    """What `derive_campaign` found; `tuner.history.render_campaign` writes it as YAML."""

    experiment: str
    target: str
    goal: str
    tracking_uri: str
    where: str | None
    n_runs: int
    best_run_id: str
    best_run_name: str
    best_value: float
    parameters: list[DerivedParameter]
    #: The trial command (``None``: lineage recorded none; the YAML holds a placeholder).
    command: list[str] | None
    command_source: str
    workdir: str | None
    #: Whether the analysis decided (else: too few runs, or nothing significant).
    ranked: bool
    analysis: str
    #: Varying params left out of the campaign, and why (derived quantities, aliases).
    left_out: dict[str, str] = field(default_factory=dict)

    @property
    def tuned(self) -> list[DerivedParameter]:
        return [p for p in self.parameters if p.tuned]

    @property
    def fixed(self) -> list[DerivedParameter]:
        return [p for p in self.parameters if not p.tuned]


def derive_campaign(
    experiment: str,
    *,
    target: str,
    goal: str,
    where: str | None = None,
    tracking_uri: str | None = None,
) -> DerivedCampaign:
    """Derive a campaign from the finished runs of ``experiment`` (see the module's doc).

    Reads only. Raises :class:`~tuner.ConfigError` (exit 2, one line) for an unknown
    experiment, a malformed ``where``, a store that cannot be read, a ``target`` no run
    recorded, or runs in which no hyperparameter varies.
    """
    from lineage import LineageError
    from lineage.importance import MIN_RUNS, get_param_importances, training_runs
    from lineage.masking import mask_uri
    from lineage.query import search_runs
    from lineage.store import open_store
    from lineage.uri import resolve_tracking_uri

    if goal not in ("minimize", "maximize"):
        raise ConfigError(f"--goal must be minimize or maximize, got {goal!r}.")
    uri = resolve_tracking_uri(tracking_uri)
    shown = mask_uri(uri)
    try:
        store = open_store(uri)
        try:
            exp = store.resolve_experiments([experiment])[0]
            runs = search_runs(store, experiments=[exp.experiment_id], where=where)
        finally:
            store.close()
    except LineageError as exc:
        text = " ".join(str(exc).split())
        raise ConfigError(f"tuner init --from {experiment}: {text}") from None
    kept, _ = training_runs(runs)
    label = f"experiment {exp.name!r} ({shown})" + (f" where {where}" if where else "")
    rows = [r for r in kept if _finite(r.metrics.get(target))]
    if not rows:
        metrics = sorted({m for r in kept for m in r.metrics})
        have = ", ".join(metrics[:12]) + (", ..." if len(metrics) > 12 else "")
        raise ConfigError(
            f"--target {target}: no finished run of {label} recorded it "
            f"({len(kept)} finished run(s); their metrics: {have or 'none'})."
        )
    candidates, left_out, source = _candidates(runs, rows)
    types = _param_types(rows)
    varying = [n for n in candidates if len({r.params.get(n) for r in rows}) > 1]
    if not varying:
        raise ConfigError(
            f"--from {experiment}: no recorded hyperparameter varies over the {len(rows)} "
            f"finished run(s) of {label} with {target} ({source}); nothing to tune."
        )
    sign = -1.0 if goal == "maximize" else 1.0
    rows.sort(key=lambda r: sign * r.metrics[target])
    best = rows[0]

    result: ImportanceResult | None = None
    if len(rows) >= MIN_RUNS:
        try:
            result = get_param_importances(
                rows, target=target, goal=goal, params=varying, experiment=exp.name
            )
        except LineageError as exc:  # a constant target, say: fall back to tuning all
            analysis = f"importance not ranked ({' '.join(str(exc).split())})"
    ranked = {p.name: p for p in result.params} if result else {}
    if result is not None:
        for name, same in result.aliases.items():
            for other in same:
                left_out[other] = f"same values as {name} in every run"
        evaluator = result.evaluator.split("(", 1)[0]
        analysis = (
            f"lineage importance ({evaluator}) over {result.n_runs} runs, * = significant: "
            + result.summary(k=8)
        )
    elif len(rows) < MIN_RUNS:
        analysis = f"importance not ranked: {len(rows)} runs, it needs at least {MIN_RUNS}"
    significant = {n for n, p in ranked.items() if p.significant}
    decided = bool(significant)
    if result is not None and not decided:
        analysis += "; no parameter is significant, so every one is tuned"
    names = [n for n in varying if n not in left_out]
    if result is not None:
        names.sort(key=lambda n: -ranked[n].importance if n in ranked else 1.0)
    flags = command_flags(rows)
    params = [
        _derive_parameter(
            n,
            rows,
            types.get(n),
            tuned=(n in significant) if decided else True,
            refine=decided,
            importance=ranked.get(n),
            flag=flags.get(n),
        )
        for n in names
    ]
    _add_conditions(params, rows)
    command, command_source, workdir = derive_command(best, rows, params)
    return DerivedCampaign(
        experiment=exp.name,
        target=target,
        goal=goal,
        tracking_uri=uri,
        where=where,
        n_runs=len(rows),
        best_run_id=best.run_id,
        best_run_name=best.name,
        best_value=float(best.metrics[target]),
        parameters=params,
        command=command,
        command_source=command_source,
        workdir=workdir,
        ranked=decided,
        analysis=analysis,
        left_out=left_out,
    )


# ----- which params ---------------------------------------------------------------------------


def _candidates(
    runs: Sequence[RunRecord], rows: Sequence[RunRecord]
) -> tuple[list[str], dict[str, str], str]:
    """The hyperparameter names, the varying params left out and why, and where the names
    came from (for messages)."""
    from lineage import tags

    recorded = list(dict.fromkeys(k for r in rows for k in sorted(r.params)))
    varying = {n for n in recorded if len({r.params.get(n) for r in rows}) > 1}
    campaigns = {r.tags[tags.CAMPAIGN] for r in rows if r.tags.get(tags.CAMPAIGN)}
    space: list[str] = []
    for run in runs:
        is_campaign = run.tags.get(tags.RUN_TYPE) == tags.RUN_TYPE_CAMPAIGN
        if is_campaign and run.tags.get(tags.CAMPAIGN) in campaigns:
            prefix = tags.CAMPAIGN_SPACE_PREFIX
            space += [k[len(prefix) :] for k in run.params if k.startswith(prefix)]
    if space:
        names = [n for n in dict.fromkeys(space) if n in recorded]
        why = "not in the search space of campaign " + ", ".join(sorted(campaigns))
        source = "the campaign's search space"
    else:
        flags = command_flags(rows)
        if flags:
            names = [n for n in recorded if n in flags]
            why = "on no recorded command line (derived, or set in code)"
            source = "params passed on the recorded command lines"
        else:
            names, why, source = recorded, "", "every recorded param"
    left_out = {n: why for n in recorded if n in varying and n not in names}
    return names, left_out, source


def _param_types(rows: Sequence[RunRecord]) -> dict[str, str]:
    """``{param: python type name}`` from the ``lineage.param_types`` tags of the runs."""
    from lineage import tags

    out: dict[str, str] = {}
    for run in rows:
        text = run.tags.get(tags.PARAM_TYPES)
        if not text:
            continue
        try:
            found = json.loads(text)
        except ValueError:
            continue
        if isinstance(found, dict):
            for k, v in found.items():
                out.setdefault(str(k), str(v))
    return out


# ----- one param ------------------------------------------------------------------------------


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


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


def _derive_parameter(
    name: str,
    rows: Sequence[RunRecord],
    recorded_type: str | None,
    *,
    tuned: bool,
    refine: bool,
    importance: ParamImportance | None,
    flag: str | None,
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
        if tuned and len(choices) < 2:
            choices = list(recorded)  # the best runs agree: keep the others to check it
        spec: dict[str, Any] = {"type": "categorical", "choices": choices}
        how = f"the choices the best {len(top)} of {len(present)} runs used"
        if choices == list(recorded):
            how = f"every recorded choice ({len(present)} runs)"
    else:
        log = bool(infer_spec(name, values).log)
        lo_all, hi_all = min(values), max(values)
        recorded = (lo_all, hi_all)
        lo, hi = _refine(values, top, log=log) if refine else recorded
        spec = _numeric_spec(kind, lo, hi, log=log, values=values)
        how = (
            f"the span of the best {len(top)} of {len(present)} runs, widened by a tenth of "
            f"the recorded span [{_show(lo_all)}, {_show(hi_all)}] on each side"
            + (" (log scale)" if log else "")
            if refine
            else f"the recorded range ({len(present)} runs)"
        )
    reason = _reason(tuned, importance, how)
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


def _refine(values: Sequence[float], top: Sequence[float], *, log: bool) -> tuple[float, float]:
    def scale(x: float) -> float:
        return math.log10(x) if log else x

    def back(x: float) -> float:
        return 10.0**x if log else x

    a, b = scale(min(values)), scale(max(values))
    lo, hi = scale(min(top)), scale(max(top))
    margin = MARGIN * (b - a)
    return back(max(a, lo - margin)), back(min(b, hi + margin))


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


def _reason(tuned: bool, imp: ParamImportance | None, how: str) -> str:
    if imp is None:
        rank = "not ranked"
    else:
        rank = f"importance {imp.importance:.2f} [{imp.ci[0]:.2f}, {imp.ci[1]:.2f}], " + (
            "significant" if imp.significant else "not significant"
        )
    if tuned:
        return f"tuned ({rank}) over {how}"
    return f"fixed at the best run's value ({rank})"


def _add_conditions(params: list[DerivedParameter], rows: Sequence[RunRecord]) -> None:
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
