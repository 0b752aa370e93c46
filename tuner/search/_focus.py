"""``parameters.<name>.focus``: most trials sample a sub-range, and a wrong one cannot trap.

A range `tuner init` refines around the best earlier runs is a bet that the new task's
optimum is where the old one was. The parameter keeps its full recorded range as its space
(``low``/``high``: every earlier run is imported, every trial is stored with the same
distribution) and the refinement as its ``focus``. `FocusedSampler` wraps the campaign's
sampler:

- **a focused trial** (four in five): the wrapped sampler samples every focused parameter
  over its focus (Optuna's own distributions, narrowed: a sub-range, or some of the choices),
  and sees only the trials whose values lie inside the focus (the others hidden:
  `tuner.search._view.hidden`), as a campaign over the refined range would;
- **an exploring trial** (every `EXPLORE_EVERY`-th trial number,
  `tuner.search._view.exploring`): the wrapped sampler samples the full range and sees the
  study as this wrapper is given it: under a warm start with ``compare: auto`` that is the
  campaign's own trials only (`tuner.search._view.PriorFree`), so the earlier runs the focus
  was built from do not steer the trials meant to check it;
- **open first**: until the campaign has `OPEN` (10) finished trials of its own, no focus
  narrows anything: those trials sample the whole declared space (as a cold TPE's first ten
  sample it at random), so that the focus never keeps the campaign from a region none of
  its own trials has tested, and a better region there can release it from the start;
- **widened on evidence**: a focus no longer holds on one side once the campaign's best own
  trial lies beyond it there, or most of its `TOP` best own trials sit at that edge
  (`tuner.search._bounds.EDGE` of the focus); that side then reaches the parameter's bound.
  A focus on choices gives way to every choice once the best own trial has another.

Both are recomputed from the study's trials at every ask (first objective), so a resumed
campaign or another worker on a shared study decides the same. A sampler that models the
space as one whole (CMA-ES) restarts when a focus widens.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tuner.search._attrs import IMPORTED_ATTR
from tuner.search._bounds import EDGE
from tuner.search._view import EXPLORE_EVERY, Narrow, StudyView, ViewSampler, exploring, hidden

if TYPE_CHECKING:
    import optuna
    from optuna.distributions import BaseDistribution
    from optuna.study import StudyDirection
    from optuna.trial import FrozenTrial

    from tuner.search._shapes import ParameterShape as Parameter

__all__ = [
    "EXPLORE_EVERY",
    "OPEN",
    "TOP",
    "FocusSpec",
    "FocusState",
    "FocusedSampler",
    "focus_of",
    "focus_state",
    "focused_if_set",
]

#: The best own trials whose place at a focus edge widens it.
TOP = 5
#: Own finished trials before a focus narrows anything: the first ones sample the whole
#: declared space (as Optuna's TPE samples its first ten at random), so that a focus never
#: keeps the campaign from a region none of its own trials has tested.
OPEN = 10


@dataclass(frozen=True)
class FocusSpec:
    """One parameter's space and focus: ``[low, high]`` and ``[focus_low, focus_high]``
    (numeric), or its ``choices`` and ``focus_choices`` (categorical)."""

    low: float = 0.0
    high: float = 0.0
    focus_low: float = 0.0
    focus_high: float = 0.0
    log: bool = False
    choices: tuple[Any, ...] | None = None
    focus_choices: tuple[Any, ...] | None = None


@dataclass(frozen=True)
class FocusState:
    """One parameter's focus now: ``[low, high]`` or ``choices`` (a side reaches the
    parameter's bound, or every choice comes back, once released), and why it was released
    (empty: held)."""

    param: str
    low: float
    high: float
    choices: tuple[Any, ...] | None
    released: tuple[str, ...]

    def contains(self, value: Any) -> bool:
        if self.choices is not None:
            return any(value == c and type(value) is type(c) for c in self.choices)
        return self.low <= float(value) <= self.high

    def line(self) -> str:
        where = (
            "[" + ", ".join(str(c) for c in self.choices) + "]"
            if self.choices is not None
            else f"[{self.low:g}, {self.high:g}]"
        )
        if not self.released:
            return f"focus on {self.param}: {where}, held"
        return f"focus on {self.param}: widened to {where}: " + "; ".join(self.released)


def _scaled(v: float, low: float, high: float, log: bool) -> float:
    if log:
        return (math.log(v) - math.log(low)) / (math.log(high) - math.log(low))
    return (v - low) / (high - low)


def focus_state(
    trials: Sequence[FrozenTrial],
    directions: Sequence[StudyDirection],
    focus: dict[str, FocusSpec],
) -> dict[str, FocusState]:
    """Per focused parameter, the focus the campaign's own COMPLETE ``trials`` leave
    standing (see the module's doc)."""
    from optuna.study import StudyDirection

    own = _own_trials(trials)
    sign = -1.0 if directions and directions[0] == StudyDirection.MAXIMIZE else 1.0
    best = sorted(own, key=lambda t: sign * t.values[0])[:TOP]
    out = {}
    for name, spec in focus.items():
        values = [t.params[name] for t in best if name in t.params]
        if spec.focus_choices is not None:
            held = FocusState(name, 0.0, 0.0, spec.focus_choices, ())
            if values and not held.contains(values[0]):
                why = (f"the best trial has {values[0]}, outside it",)
                out[name] = FocusState(name, 0.0, 0.0, spec.choices, why)
            else:
                out[name] = held
            continue
        out[name] = _numeric_state(name, spec, [float(v) for v in values])
    return out


def _own_trials(trials: Sequence[FrozenTrial]) -> list[FrozenTrial]:
    from optuna.trial import TrialState

    return [
        t
        for t in trials
        if t.state == TrialState.COMPLETE and t.values and IMPORTED_ATTR not in t.system_attrs
    ]


def _own(trials: Sequence[FrozenTrial]) -> int:
    return len(_own_trials(trials))


def _numeric_state(name: str, spec: FocusSpec, values: list[float]) -> FocusState:
    flow, fhigh, log = spec.focus_low, spec.focus_high, spec.log
    why: list[str] = []
    new_low, new_high = flow, fhigh
    if values and flow > spec.low:
        at = sum(_scaled(v, flow, fhigh, log) <= EDGE for v in values)
        if values[0] < flow:
            why.append(f"the best trial has {values[0]:g}, below it")
        elif len(values) >= TOP and at * 2 > len(values):
            why.append(f"{at} of the {len(values)} best trials sit at its low edge")
        new_low = spec.low if why else flow
    if values and fhigh < spec.high:
        at = sum(_scaled(v, flow, fhigh, log) >= 1 - EDGE for v in values)
        before = len(why)
        if values[0] > fhigh:
            why.append(f"the best trial has {values[0]:g}, above it")
        elif len(values) >= TOP and at * 2 > len(values):
            why.append(f"{at} of the {len(values)} best trials sit at its high edge")
        new_high = spec.high if len(why) > before else fhigh
    return FocusState(name, new_low, new_high, None, tuple(why))


def _narrow(dist: BaseDistribution, state: FocusState) -> BaseDistribution:
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    if isinstance(dist, CategoricalDistribution) and state.choices is not None:
        return CategoricalDistribution([c for c in dist.choices if state.contains(c)])
    if isinstance(dist, IntDistribution):
        step = dist.step
        first = dist.low + math.ceil((state.low - dist.low) / step) * step
        last = dist.low + math.floor((state.high - dist.low) / step) * step
        return IntDistribution(int(first), int(max(first, last)), log=dist.log, step=step)
    if isinstance(dist, FloatDistribution):
        if dist.step is None:
            return FloatDistribution(state.low, state.high, log=dist.log)
        k_low = math.ceil((state.low - dist.low) / dist.step - 1e-9)
        k_high = math.floor((state.high - dist.low) / dist.step + 1e-9)
        top = dist.low + max(k_low, k_high) * dist.step
        return FloatDistribution(dist.low + k_low * dist.step, top, step=dist.step)
    return dist


class FocusedSampler(ViewSampler):
    """``sampler``, sampling the parameters of ``focus`` over their focus in all but the
    exploring trials (`tuner.search._view.exploring`)."""

    def __init__(self, sampler: optuna.samplers.BaseSampler, focus: dict[str, FocusSpec]) -> None:
        super().__init__(sampler)
        self.focus = focus

    def __str__(self) -> str:
        return f"{self.sampler} (focused on {', '.join(self.focus)})"

    def plan(self, study: optuna.Study, trial: FrozenTrial) -> tuple[Any, Narrow | None]:
        if exploring(trial):
            return study, None
        from tuner.search._internals import sampler_trials

        trials = sampler_trials(study, False, None, True)
        if _own(trials) < OPEN:
            return study, None
        states = focus_state(trials, study.directions, self.focus)
        narrowed = {n: s for n, s in states.items() if not _whole(s, self.focus[n])}
        if not narrowed:
            return study, None

        def inside(t: FrozenTrial) -> bool:
            return all(s.contains(t.params[n]) for n, s in narrowed.items() if n in t.params)

        def narrow(name: str, dist: BaseDistribution) -> BaseDistribution:
            return _narrow(dist, narrowed[name]) if name in narrowed else dist

        view = StudyView(study, lambda ts: [t if inside(t) else hidden(t) for t in ts])
        return view, narrow


def _whole(state: FocusState, spec: FocusSpec) -> bool:
    if state.choices is not None:
        return state.choices == spec.choices
    return (state.low, state.high) == (spec.low, spec.high)


def focus_of(parameters: Mapping[str, Parameter]) -> dict[str, FocusSpec]:
    """The space and focus of every parameter of the ``parameters:`` section with a
    ``focus``."""
    out = {}
    for name, p in parameters.items():
        f = p.focus
        if f is None:
            continue
        if p.type == "categorical":
            out[name] = FocusSpec(
                choices=tuple(p.choices or []), focus_choices=tuple(f.choices or [])
            )
        elif None not in (p.low, p.high, f.low, f.high):
            bounds = (float(p.low), float(p.high), float(f.low), float(f.high))  # type: ignore[arg-type]
            out[name] = FocusSpec(*bounds, log=bool(p.log))
    return out


def focused_if_set(
    parameters: Mapping[str, Parameter], sampler: optuna.samplers.BaseSampler
) -> optuna.samplers.BaseSampler:
    """``sampler`` wrapped in `FocusedSampler` when a parameter of ``parameters`` has a ``focus`` (the caller
    leaves a grid sampler out: it walks its grid whatever the focus)."""
    focus = focus_of(parameters)
    return FocusedSampler(sampler, focus) if focus else sampler
