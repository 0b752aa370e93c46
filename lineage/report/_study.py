"""An in-memory Optuna study built from MLflow runs, so that any set of runs can be drawn
with Optuna's own visualization module.

Each run becomes a trial (``optuna.trial.create_trial``), in start order: COMPLETE with its
target values, PRUNED when the tuner tagged it so, FAIL when it failed, was killed or never
recorded a target. Distributions are read from a campaign's search space when one is given,
else inferred from the values the runs recorded (MLflow keeps every param as a string):
integers, numbers (on a log scale as ``lineage importance`` would analyse them) or categories.
A single-objective target's metric history becomes the trial's intermediate values.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lineage import tags

if TYPE_CHECKING:
    from optuna import Study
    from optuna.distributions import BaseDistribution

    from lineage.store import MetricPoint, RunRecord

__all__ = ["STATE_TAG", "distribution_for", "study_from_runs"]

#: The tag in which the tuner records a trial's final state (COMPLETE, PRUNED, FAIL).
STATE_TAG = tags.TRIAL_STATE
_MISSING = frozenset({"", "none", "null", "nan"})


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _is_int(text: str) -> bool:
    t = text.strip().lstrip("+-")
    return t.isdigit()


def distribution_for(
    name: str, values: Sequence[str], space: Mapping[str, Any] | None = None
) -> BaseDistribution:
    """The distribution of parameter ``name`` given the strings the runs recorded; the
    campaign's ``space`` entry (``type``, ``low``, ``high``, ``log``, ``choices``) decides
    the kind and scale when given, the values always widen the range."""
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    present = [v for v in values if v.strip().lower() not in _MISSING]
    kind = (space or {}).get("type")
    numbers = [_number(v) for v in present]
    numeric = bool(present) and all(n is not None for n in numbers)
    if kind == "categorical" or (kind is None and not numeric):
        choices = [str(c) for c in (space or {}).get("choices") or []]
        return CategoricalDistribution(list(dict.fromkeys([*choices, *sorted(set(present))])))
    nums = [float(n) for n in numbers if n is not None]
    bounds = [
        float(b) for b in ((space or {}).get("low"), (space or {}).get("high")) if b is not None
    ]
    low, high = min(nums + bounds), max(nums + bounds)
    if kind == "int" or (kind is None and all(_is_int(v) for v in present)):
        log = bool((space or {}).get("log")) and low >= 1
        return IntDistribution(math.floor(low), math.ceil(high), log=log)
    if space is not None and "log" in space:
        log = bool(space["log"]) and low > 0
    else:
        from lineage.importance import infer_spec

        log = infer_spec(name, present).log and low > 0
    return FloatDistribution(low, high, log=log)


def _value(dist: BaseDistribution, text: str) -> Any:
    from optuna.distributions import CategoricalDistribution, IntDistribution

    if isinstance(dist, CategoricalDistribution):
        return text
    if isinstance(dist, IntDistribution):
        return int(float(text))
    return float(text)


def study_from_runs(
    runs: Sequence[RunRecord],
    *,
    targets: Sequence[str],
    goals: Sequence[str],
    params: Sequence[str],
    spaces: Mapping[str, Mapping[str, Any]] | None = None,
    histories: Callable[[str], Mapping[str, Sequence[MetricPoint]]] | None = None,
    study_name: str = "runs",
    warm_tags: Sequence[str] = (),
) -> Study:
    """An in-memory study with one trial per run (see the module docstring). ``goals`` are
    ``minimize``/``maximize``, one per target; ``histories(run_id)`` returns a run's metric
    histories (for intermediate values, single target only); a run carrying one of
    ``warm_tags`` keeps it as a user attribute (warm-started trials and those a scheduler
    paused or copied over are drawn apart). Each trial's user attributes name its run
    (``mlflow.run_id``, ``mlflow.run_name``)."""
    import optuna
    from optuna.trial import TrialState, create_trial

    ordered = sorted(runs, key=lambda r: (r.start_time or 0, r.run_id))
    dists = {
        p: distribution_for(
            p, [r.params[p] for r in ordered if p in r.params], (spaces or {}).get(p)
        )
        for p in params
    }
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # no "A new study created" line
    try:
        study = optuna.create_study(
            study_name=study_name, directions=[_direction(g) for g in goals]
        )
    finally:
        optuna.logging.set_verbosity(verbosity)
    curves = _curves(ordered, targets, histories)
    trials = []
    for run in ordered:
        values = [run.metrics.get(t) for t in targets]
        complete = run.status == "FINISHED" and all(
            v is not None and math.isfinite(v) for v in values
        )
        state = TrialState.COMPLETE if complete else TrialState.FAIL
        if run.tags.get(STATE_TAG) == "PRUNED":
            state = TrialState.PRUNED
        chosen = {
            p: _value(d, run.params[p])
            for p, d in dists.items()
            if p in run.params and run.params[p].strip().lower() not in _MISSING
        }
        steps = curves.get(run.run_id, {}) if state != TrialState.FAIL else {}
        attrs = {"mlflow.run_id": run.run_id, "mlflow.run_name": run.name}
        attrs.update({k: run.tags[k] for k in warm_tags if k in run.tags})
        trials.append(
            create_trial(
                state=state,
                values=[float(v) for v in values] if state == TrialState.COMPLETE else None,  # type: ignore[arg-type]
                params=chosen,
                distributions={p: dists[p] for p in chosen},
                user_attrs=attrs,
                intermediate_values=steps,
            )
        )
    study.add_trials(trials)
    return study


def _curves(
    runs: Sequence[RunRecord],
    targets: Sequence[str],
    histories: Callable[[str], Mapping[str, Sequence[MetricPoint]]] | None,
) -> dict[str, dict[int, float]]:
    """Each run's target history by step (single target only). Kept where the target was
    reported step by step, that is where some run has two points or more: then a run
    stopped (pruned) after its first report keeps its one point, as the tuner's own study
    holds it; a target logged once at the end by every run is no curve."""
    if histories is None or len(targets) != 1:
        return {}
    curves = {}
    for run in runs:
        points = histories(run.run_id).get(targets[0], [])
        curves[run.run_id] = {int(p.step): float(p.value) for p in points if math.isfinite(p.value)}
    if not any(len(c) >= 2 for c in curves.values()):
        return {}
    return {k: c for k, c in curves.items() if c}


def _direction(goal: str) -> Any:
    return "maximize" if goal.lower().startswith("max") else "minimize"


def parse_space(text: str) -> dict[str, Any] | None:
    """A campaign run's ``space.<name>`` param (JSON) as a dict, ``None`` if unreadable."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
