"""Warm start: earlier runs enter a campaign's study as finished trials before its first ask.

Contract (``tuner run``, ``tuner validate`` and ``benchmarks/bench_outcome.py`` rely on it):

- `load_history(context)` reads every ``warm_start.from`` source (read-only; it creates
  nothing in any store) and returns a `WarmStartPlan`: one COMPLETE
  ``optuna.trial.FrozenTrial`` per usable run, built with the *new* space's distributions,
  and a tally of the runs it skipped, by reason. A source that cannot be read, or names
  something its store does not hold, raises :class:`~tuner.ConfigError` (one line, exit 2).
- `apply(study, plan)` adds those trials to the study (``study.add_trials``) and enqueues the
  ``enqueue_best`` best configurations (``study.enqueue_trial``), once: a study that
  already holds the import (`tuner resume`, a second ``tuner run``, a second worker) is left
  as it is, and a run id already imported is never imported twice (a crash between the two
  writes). Call it before the first ask, under the study's setup lock where several
  controllers share the study.

Every imported trial carries the system attribute ``tuner:imported`` (the source run id: the
budget never counts it) and the user attribute ``tuner.imported_from`` (``{"run_id",
"source", "tracking_uri"}``). Samplers see them as the COMPLETE trials they are.

A run is skipped, with one of `SKIP_REASONS`, when it did not finish (a FAILED or KILLED
run, a failed trial), was pruned (its value is that of an earlier step than a finished run's;
pruned earlier runs are skipped, not imported with their last intermediate value), lacks
an active parameter of the space, holds a value outside the space, or lacks a finite value
of an objective. A PBT member's later segment (run tag ``tuner.member``) is skipped too: its
parameters changed during training, so no one configuration reached its value. Parameters a run recorded that the space does not have are ignored; a
conditional parameter whose ``when`` does not hold for the run is left out, as a trial of
the campaign would leave it out.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lineage.tags import TRIAL_STATE
from tuner.history._sources import HistoryContext, SourceRuns, read_source
from tuner.search import (
    ENQUEUED_FROM_ATTR,
    IMPORTED_ATTR,
    IMPORTED_FROM_ATTR,
    MEMBER_ATTR,
    WARM_START_ATTR,
)

if TYPE_CHECKING:
    import optuna

    from lineage.store import RunRecord
    from tuner.config import Parameter, WarmStartSource

__all__ = ["SKIP_REASONS", "SourceTally", "WarmStartPlan", "apply", "load_history"]

#: Why a run was not imported, in the order the skip line lists them.
SKIP_REASONS = (
    "not finished",
    "pruned",
    "parameters changed during training",
    "missing a parameter",
    "outside the space",
    "missing the target",
)


@dataclass
class SourceTally:
    """What one source gave: the runs it selected, imported, and skipped by reason."""

    label: str
    uri: str
    selected: int = 0
    imported: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    #: One example per reason: ``run 1a2b3c4d: lr=0.5 is outside [0.0001, 0.1]``.
    examples: dict[str, str] = field(default_factory=dict)


@dataclass
class WarmStartPlan:
    """What `load_history` found: the trials to import, what to enqueue, what it skipped."""

    #: COMPLETE trials with the new space's distributions, marked as imported.
    trials: list[optuna.trial.FrozenTrial]
    #: Per source, in ``warm_start.from`` order.
    sources: list[SourceTally]
    #: The ``enqueue_best`` best imported configurations, best first (params, source run id).
    enqueue: list[tuple[dict[str, Any], str]] = field(default_factory=list)

    @property
    def imported(self) -> int:
        return len(self.trials)

    @property
    def skipped(self) -> Counter[str]:
        """Skipped runs by reason, over every source."""
        total: Counter[str] = Counter()
        for s in self.sources:
            total.update(s.skipped)
        return total

    def lines(self) -> list[str]:
        """Two lines: how many runs were imported (per source, and how many are enqueued),
        and how many were skipped and why (with one example per reason)."""
        per = ", ".join(f"{s.imported} from {s.label}" for s in self.sources)
        first = f"warm start: {self.imported} earlier run(s) imported as finished trials ({per})"
        if self.enqueue:
            first += f"; the {len(self.enqueue)} best re-run first as new trials"
        first += "; imported trials do not count against budget.trials"
        skipped = self.skipped
        total = sum(skipped.values())
        if not total:
            return [first, "warm start: 0 runs skipped"]
        parts = []
        for reason in SKIP_REASONS:
            if skipped.get(reason):
                example = next(
                    (s.examples[reason] for s in self.sources if reason in s.examples), ""
                )
                parts.append(
                    f"{skipped[reason]} {reason}" + (f" (e.g. {example})" if example else "")
                )
        return [first, f"warm start: {total} run(s) skipped: " + "; ".join(parts)]

    def summary(self) -> dict[str, Any]:
        """The plan as JSON (``tuner validate --format json``)."""
        return {
            "imported": self.imported,
            "skipped": {r: n for r, n in self.skipped.items() if n},
            "enqueue_best": len(self.enqueue),
            "sources": [
                {
                    "source": s.label,
                    "tracking_uri": s.uri,
                    "selected": s.selected,
                    "imported": s.imported,
                    "skipped": dict(s.skipped),
                }
                for s in self.sources
            ],
        }


def load_history(context: HistoryContext) -> WarmStartPlan:
    """The trials the ``warm_start:`` section imports into the campaign of ``context``
    (`HistoryContext.of` a config); an empty plan when it has none.

    Reads the sources only (nothing is created in any store); raises
    :class:`~tuner.ConfigError` (exit 2) for a source that cannot be read or names what its
    store does not hold."""
    section = context.warm_start
    if section is None:
        return WarmStartPlan([], [])
    trials: list[optuna.trial.FrozenTrial] = []
    tallies: list[SourceTally] = []
    for index, source in enumerate(section.sources):
        got = read_source(context, index, source)
        tally = SourceTally(source.label, got.uri, selected=len(got.runs))
        trials.extend(_convert(context, got, tally))
        tallies.append(tally)
    plan = WarmStartPlan(trials, tallies)
    # An enqueued trial is run whatever the count: never more of them than the budget.
    plan.enqueue = _best(
        context.directions,
        trials,
        min(section.enqueue_best, context.budget or section.enqueue_best),
    )
    return plan


def apply(study: optuna.Study, plan: WarmStartPlan) -> int:
    """Import ``plan`` into ``study`` once; returns the number of trials added now (0 when
    the study already holds the import). See the module's contract."""
    if WARM_START_ATTR in study.user_attrs:
        return 0
    trials = study.get_trials(deepcopy=False)
    done = {str(t.system_attrs[IMPORTED_ATTR]) for t in trials if IMPORTED_ATTR in t.system_attrs}
    queued = {
        str(t.user_attrs[ENQUEUED_FROM_ATTR]) for t in trials if ENQUEUED_FROM_ATTR in t.user_attrs
    }
    new = [t for t in plan.trials if str(t.system_attrs[IMPORTED_ATTR]) not in done]
    if new:
        study.add_trials(new)
    for params, run_id in plan.enqueue:
        if run_id not in queued:  # a controller that died mid-import enqueued it already
            study.enqueue_trial(
                params, user_attrs={ENQUEUED_FROM_ATTR: run_id}, skip_if_exists=False
            )
    study.set_user_attr(WARM_START_ATTR, plan.summary())
    return len(new)


# ----- one run -> one trial ------------------------------------------------------------------


class _Skip(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


def _convert(
    context: HistoryContext, got: SourceRuns, tally: SourceTally
) -> list[optuna.trial.FrozenTrial]:
    import optuna

    from tuner.search import distributions

    out = []
    for run in got.runs:
        try:
            _check_finished(run)
            params = _params(context.parameters, got.source, run)
            values = _values(context.metric_names, got.source, run)
        except _Skip as skip:
            tally.skipped[skip.reason] += 1
            tally.examples.setdefault(skip.reason, f"run {run.run_id[:8]}: {skip.detail}")
            continue
        mark = {"run_id": run.run_id, "source": got.source.label, "tracking_uri": got.uri}
        out.append(
            optuna.trial.create_trial(
                state=optuna.trial.TrialState.COMPLETE,
                values=values,
                params=params,
                distributions=distributions(context.parameters, params),
                user_attrs={IMPORTED_FROM_ATTR: mark},
                system_attrs={IMPORTED_ATTR: run.run_id},
            )
        )
        tally.imported += 1
    return out


def _check_finished(run: RunRecord) -> None:
    if run.tags.get(MEMBER_ATTR) is not None:
        # A PBT segment that went on from another member's checkpoint: its parameters
        # changed during training, so no one configuration reached its value.
        raise _Skip("parameters changed during training", "a PBT member's later segment")
    state = run.tags.get(TRIAL_STATE)  # a campaign's trial: its final state
    if state == "PRUNED":
        raise _Skip("pruned", "pruned by its campaign")
    if state is not None and state != "COMPLETE":
        raise _Skip("not finished", f"trial state {state}")
    if state is None and run.status != "FINISHED":
        raise _Skip("not finished", f"status {run.status}")


def _params(
    parameters: Mapping[str, Parameter], source: WarmStartSource, run: RunRecord
) -> dict[str, Any]:
    from tuner.search import is_active, sampling_order

    out: dict[str, Any] = {}
    for name in sampling_order(parameters):
        param = parameters[name]
        if not is_active(param, out):
            continue
        recorded = source.recorded_param(name)
        raw = run.params.get(recorded)
        if raw is None:
            shown = name if recorded == name else f"{name} (recorded as {recorded})"
            raise _Skip("missing a parameter", f"no {shown}")
        value = _parse(param, raw)
        if value is _OUTSIDE:
            raise _Skip("outside the space", f"{name}={_short(raw)} is outside {_describe(param)}")
        out[name] = value
    return out


_OUTSIDE = object()


def _parse(param: Parameter, raw: str) -> Any:
    """The recorded string as a value of ``param``'s space, or `_OUTSIDE`."""
    text = raw.strip()
    if param.type == "categorical":
        for choice in param.choices or []:
            if _same_choice(choice, text):
                return choice
        # Recorders spell names in their own case (MLflow's autologging logs the optimizer
        # class, ``SGD``, where a campaign's choice is ``sgd``): one choice equal but for case.
        folded = [
            c for c in param.choices or [] if isinstance(c, str) and c.lower() == text.lower()
        ]
        return folded[0] if len(folded) == 1 else _OUTSIDE
    try:
        number = float(text)
    except ValueError:
        return _OUTSIDE
    if not math.isfinite(number):
        return _OUTSIDE
    assert param.low is not None and param.high is not None
    tol = 1e-9 * max(1.0, abs(param.high - param.low))
    if number < param.low - tol or number > param.high + tol:
        return _OUTSIDE
    if param.type == "int":
        if not number.is_integer():
            return _OUTSIDE
        value: float = int(number)
    else:
        value = min(max(number, float(param.low)), float(param.high))
    if param.step is not None:
        k = (value - param.low) / param.step
        if abs(k - round(k)) > 1e-6:
            return _OUTSIDE
        if param.type == "float":
            value = float(param.low + round(k) * param.step)
    return value


def _short(raw: str) -> str:
    try:
        return f"{float(raw):.6g}"
    except ValueError:
        return raw if len(raw) <= 40 else raw[:37] + "..."


def _same_choice(choice: Any, text: str) -> bool:
    # MLflow keeps params as text: True -> "True", None -> "None", 0.5 -> "0.5".
    if choice is None:
        return text in ("None", "null", "")
    if isinstance(choice, bool):
        return text.lower() == str(choice).lower()
    if isinstance(choice, int | float):
        try:
            return float(text) == float(choice)
        except ValueError:
            return False
    return str(choice) == text


def _describe(param: Parameter) -> str:
    if param.type == "categorical":
        return "the choices " + ", ".join(repr(c) for c in param.choices or [])
    text = f"[{param.low}, {param.high}]"
    if param.step is not None:
        text += f" step {param.step}"
    return text


def _values(metric_names: Sequence[str], source: WarmStartSource, run: RunRecord) -> list[float]:
    values = []
    for i, metric in enumerate(metric_names):
        recorded = source.recorded_metric(metric, first=i == 0)
        value = run.metrics.get(recorded)
        if value is None or not math.isfinite(value):
            shown = metric if recorded == metric else f"{metric} (recorded as {recorded})"
            what = "no" if value is None else f"{value} for"
            raise _Skip("missing the target", f"{what} {shown}")
        values.append(float(value))
    return values


# ----- enqueue_best --------------------------------------------------------------------------


def _best(
    directions: Sequence[str], trials: Sequence[optuna.trial.FrozenTrial], k: int
) -> list[tuple[dict[str, Any], str]]:
    """The ``k`` best distinct configurations: by value (one objective), else front by front
    of the non-dominated sort (ties by order of import)."""
    if k <= 0 or not trials:
        return []
    signs = [-1.0 if d == "maximize" else 1.0 for d in directions]
    keyed = [(tuple(s * v for s, v in zip(signs, t.values, strict=True)), t) for t in trials]
    ranked: list[optuna.trial.FrozenTrial] = []
    if len(signs) == 1:
        ranked = [t for _, t in sorted(keyed, key=lambda kt: kt[0])]
    else:
        rest = keyed
        while rest:
            front = [a for a in rest if not any(_dominates(b[0], a[0]) for b in rest)]
            ranked.extend(t for _, t in sorted(front, key=lambda kt: kt[0]))
            ids = {id(t) for _, t in front}
            rest = [a for a in rest if id(a[1]) not in ids]
    out: list[tuple[dict[str, Any], str]] = []
    seen: list[Mapping[str, Any]] = []
    for t in ranked:
        if t.params in seen:
            continue
        seen.append(t.params)
        out.append((dict(t.params), str(t.system_attrs[IMPORTED_ATTR])))
        if len(out) == k:
            break
    return out


def _dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(x <= y for x, y in zip(a, b, strict=True)) and a != b
