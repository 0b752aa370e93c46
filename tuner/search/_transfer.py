"""``warm_start.compare: auto``: measure how far each set of earlier runs carries over, and
let the sampler see it only as much as the campaign's own trials show that it does.

The campaign's own finished trials are paired with what each source of earlier runs says of
the same configurations: a re-run of an imported configuration (``enqueue_best``) with that
run's recorded value, any other trial with the prediction of a model of the source's runs
(`tuner.search._prior_model.PriorModel`, a Gaussian process). Over the pairs, per source and
for the first objective:

- ``agreement``: Kendall's tau between the earlier values and this task's, weighted toward
  the best pairs (``scipy.stats.weightedtau``: hyperbolic weights on the ranks, averaged over
  the earlier runs' order and this task's), so that a plateau of configurations both tasks
  score alike cannot outvote the best ones, where an optimum that moved shows;
- ``noise``: the agreement these pairs reach by chance one time in twenty (`_chance`: a
  permutation test, the 95th percentile of the agreement over shuffles of this task's values
  against the earlier ones, so it is the weighted tau's own spread, ties included);
- ``shift``: the median of (this task - earlier) in units of the earlier values' spread
  (their interquartile range), signed so that positive means this task scores worse.

Trust is earned (`_decide`): until `MIN_PAIRS` pairs exist, and while the agreement lies
within chance, the evidence is too thin to act on (mode ``thin``): the source weighs
nothing and the campaign runs as a cold one. An agreement beyond chance also waits for
`MIN_OWN` (10) own trials: a cold TPE samples its first ten at random, and a source shown
earlier would end that survey of the whole space, the only measure of the source there,
before the campaign had made it. Past that, each source gets a **mode**:

- ``value``: the values carry over as recorded (agreement, and a level within half a spread);
- ``rank``: the order carries over but the level does not: the sampler sees each set's normal
  scores, as ``compare: rank`` does (`tuner.search._ranked.ranked_view`; the whole view is
  ranked as soon as one shown source is not seen by value);
- ``discount``: the earlier runs agree with this task less than ``AGREE``, or disagree:
  ranked, and their weight falls with the agreement.

and a **weight** in [0, 1]: ``clip((tau - noise) / AGREE, 0, 1) * FADE / (FADE + own)``: it
grows as the campaign's own trials agree with the source beyond chance, and falls as the
campaign's own evidence grows (``own``: its finished trials), as the decaying prior of pi-BO
(Hvarfner et al., 2022) falls with the trials, here scaled by the measured similarity, as
the task weights of meta-learning TPE (Watanabe et al., 2022) are. The sampler sees a weight
``w`` as ``round(w * n)`` of the source's ``n`` runs, picked evenly over their order, so the
shape of what the source says is kept while its mass shrinks; at zero the source is gone from
the sampler's view and the campaign runs as a cold one.

**Per parameter** (`blind`): a parameter the source's runs show no effect of (its model's
value moves by less than `tuner.search._prior_model.SEEN` of their spread when that
parameter alone varies around their best runs) is sampled without the source: the earlier
task had no preference there, and its best runs hold whatever values its search tried,
which would outweigh what the campaign's own trials say of a parameter that may matter now.
This reaches a sampler that samples each parameter on its own (TPE's default, independent
sampling: `tuner.search._ranked.RankedWarmStart` with ``per_param``); a sampler that models
the space as one whole sees one view for all parameters.

The agreement is measured where the campaign has been; where it has not, earlier runs that
agree may still mislead. The exploring trials (`tuner.search._view.PriorFree`, one in
`tuner.search._view.EXPLORE_EVERY`) therefore see none of them, whatever their weight.

Everything is recomputed from the study's trials at every ask: a resumed campaign, or another
worker on a shared study, decides the same from the same trials; nothing lives only in
memory. `describe` gives what was measured and chosen, for ``tuner status``, the campaign's
MLflow run and the report. Only the sampler's view changes: the study keeps every value.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from tuner.search._attrs import ENQUEUED_FROM_ATTR, IMPORTED_ATTR
from tuner.search._prior_model import SEEN, PriorModel

if TYPE_CHECKING:
    import optuna
    from optuna.study import StudyDirection
    from optuna.trial import FrozenTrial

__all__ = [
    "AGREE",
    "FADE",
    "MIN_PAIRS",
    "SourceTransfer",
    "apart",
    "describe",
    "line",
    "measure",
    "steers",
    "transfer_view",
]

#: The weighted Kendall's tau at and above which a source fully agrees with this task.
AGREE = 0.4
#: Own finished trials at which a fully agreeing source's weight has halved.
FADE = 8
#: Pairs needed before agreement and shift are trusted.
MIN_PAIRS = 4
#: Own finished trials before a source may weigh anything: Optuna's TPE samples its first
#: ten trials at random (``n_startup_trials``), and a prior shown earlier would end that
#: exploration of the whole space before the campaign has seen any of it.
MIN_OWN = 10
#: A level shift within this many spreads keeps raw values.
LEVEL = 0.5
#: How often an unrelated source may clear the bar for "beyond chance" at one measurement.
CHANCE = 0.05
#: Shuffles of the pairs that give the agreement's distribution by chance (`_chance`).
SHUFFLES = 400


@dataclass(frozen=True)
class SourceTransfer:
    """What was measured of one set of earlier runs, and what the sampler is shown of it."""

    source: str
    runs: int
    pairs: int
    exact_pairs: int
    agreement: float | None
    #: The agreement these pairs reach by chance one time in twenty (`_chance`).
    noise: float | None
    shift: float | None
    mode: str
    weight: float
    shown: int
    #: The parameters the source's runs show no effect of (`blind`): for these the sampler
    #: sees none of its runs.
    blind: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        # a list, as JSON gives it back: stored decisions compare equal to fresh ones
        return {**asdict(self), "blind": list(self.blind)}


def _group(trial: FrozenTrial) -> str | None:
    from tuner.search._ranked import _group as group

    return group(trial)


def _label(group: str) -> str:
    return group.rsplit("\n", 1)[-1] or "earlier runs"


#: The model of each source, by what it was fitted to (a source's runs do not change).
_models: dict[Any, PriorModel] = {}


def _model(members: list[FrozenTrial], sign: float) -> PriorModel:
    key = (sign, tuple((t.number, tuple(t.values), tuple(t.params.items())) for t in members))
    if key not in _models:
        if len(_models) > 16:  # another study's sources: keep the cache small
            _models.clear()
        _models[key] = PriorModel(members, sign)
    return _models[key]


def _spread(values: list[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    q1, q3 = ordered[n // 4], ordered[(3 * n) // 4 if n > 1 else 0]
    spread = q3 - q1
    return spread if spread > 0 else (max(ordered) - min(ordered)) or 1.0


def measure(
    trials: Sequence[FrozenTrial], directions: Sequence[StudyDirection]
) -> list[SourceTransfer]:
    """Per imported source, the agreement, level shift, chosen mode and weight, measured from
    the campaign's own COMPLETE trials in ``trials`` (on the first objective)."""
    return [d for _, d in _measure(trials, directions)]


#: The last measurement and what it was measured from: a sampler reads the trials several
#: times per ask (once per parameter, and to infer its space), all from the same finished
#: trials. Keyed by everything the measurement reads, so a hit is the same measurement.
_last: tuple[Any, list[tuple[str, SourceTransfer]]] | None = None


def _measure(
    trials: Sequence[FrozenTrial], directions: Sequence[StudyDirection]
) -> list[tuple[str, SourceTransfer]]:
    global _last
    from optuna.trial import TrialState

    key = (
        tuple(directions),
        tuple(
            (
                t.number,
                tuple(t.values),
                _group(t),
                t.user_attrs.get(ENQUEUED_FROM_ATTR),
                str(t.system_attrs.get(IMPORTED_ATTR)),
                tuple(t.params.items()),
            )
            for t in trials
            if t.state == TrialState.COMPLETE and t.values is not None
        ),
    )
    last = _last
    if last is not None and last[0] == key:
        return last[1]
    out = _measured(trials, directions)
    _last = (key, out)
    return out


def _measured(
    trials: Sequence[FrozenTrial], directions: Sequence[StudyDirection]
) -> list[tuple[str, SourceTransfer]]:
    from optuna.study import StudyDirection
    from optuna.trial import TrialState

    groups: dict[str | None, list[FrozenTrial]] = {}
    for t in trials:
        if t.state == TrialState.COMPLETE and t.values is not None:
            groups.setdefault(_group(t), []).append(t)
    own = groups.pop(None, [])
    sign = -1.0 if directions and directions[0] == StudyDirection.MAXIMIZE else 1.0
    out = []
    for group, members in sorted(groups.items(), key=lambda kv: str(kv[0])):
        by_run = {str(t.system_attrs.get(IMPORTED_ATTR)): t for t in members}
        matches = [by_run.get(str(t.user_attrs.get(ENQUEUED_FROM_ATTR))) for t in own]
        exact = sum(m is not None for m in matches)
        unmatched = [t for t, m in zip(own, matches, strict=True) if m is None]
        predicted = iter(_model(members, sign).predict(unmatched))
        pairs = [
            (sign * m.values[0] if m is not None else next(predicted), sign * t.values[0])
            for t, m in zip(own, matches, strict=True)
        ]
        agreement = shift = noise = None
        if len(pairs) >= MIN_PAIRS:
            noise = _chance(pairs)
            agreement = _agreement(pairs)
            diffs = sorted(b - a for a, b in pairs)
            shift = diffs[len(diffs) // 2] / _spread([sign * m.values[0] for m in members])
        mode, weight = _decide(agreement, shift, noise, len(own))
        n = len(members)
        unseen = tuple(blind(members, sign)) if weight > 0 else ()
        out.append(
            (
                str(group),
                SourceTransfer(
                    source=_label(str(group)),
                    runs=n,
                    pairs=len(pairs),
                    exact_pairs=exact,
                    agreement=None if agreement is None else round(agreement, 3),
                    noise=None if noise is None else round(noise, 3),
                    shift=None if shift is None else round(shift, 3),
                    mode=mode,
                    weight=round(weight, 3),
                    shown=min(n, round(weight * n)),
                    blind=unseen,
                ),
            )
        )
    return out


def _agreement(pairs: Sequence[tuple[float, float]]) -> float:
    """Kendall's tau between the (earlier, this task) losses of ``pairs``, weighted toward the
    best of either ranking (`scipy.stats.weightedtau`); 0 when it is undefined."""
    from scipy.stats import weightedtau

    # Higher counts as better for weightedtau: the values are negated losses.
    tau = weightedtau([-p[0] for p in pairs], [-p[1] for p in pairs]).statistic
    return 0.0 if tau is None or math.isnan(tau) else float(tau)


def _chance(pairs: Sequence[tuple[float, float]]) -> float:
    """The agreement (`_agreement`) that ``pairs`` reach by chance one time in twenty: its 95th
    percentile over `SHUFFLES` shuffles of this task's values against the earlier ones.

    The weighted tau counts the best few pairs most, so it strays further by chance than plain
    Kendall's tau (whose spread is 0.25 over 10 pairs): between unrelated rankings it reaches
    about 0.49 over 10 pairs, 0.36 over 20 and 0.30 over 30 one time in twenty. The shuffles
    depend only on the ranks' ties (none, for most campaigns: then only on the number of
    pairs) and are seeded, so the same trials give the same bar in a resumed campaign and on
    every worker of a study."""
    from scipy.stats import rankdata

    earlier = tuple(float(r) for r in sorted(rankdata([-p[0] for p in pairs])))
    own = tuple(float(r) for r in sorted(rankdata([-p[1] for p in pairs])))
    return _chance_of_ranks(earlier, own)


@functools.lru_cache(maxsize=256)
def _chance_of_ranks(earlier: tuple[float, ...], own: tuple[float, ...]) -> float:
    import numpy as np
    from scipy.stats import weightedtau

    rng = np.random.default_rng(len(earlier))
    fixed, shuffled = np.array(earlier), np.array(own)
    taus = np.array(
        [weightedtau(fixed, rng.permutation(shuffled)).statistic for _ in range(SHUFFLES)],
        dtype=float,
    )
    return float(np.quantile(np.nan_to_num(taus, nan=0.0), 1 - CHANCE))


def _decide(
    agreement: float | None, shift: float | None, noise: float | None, own: int
) -> tuple[str, float]:
    """``(mode, weight)`` of a source: trust is earned. Until `MIN_PAIRS` pairs exist, and
    while the agreement is within chance either way (``noise``: `_chance`), the evidence is
    ``thin`` and the source weighs nothing; the weight grows with the agreement above it."""
    if agreement is None or noise is None or shift is None:
        return "thin", 0.0
    earned = agreement - noise
    if (earned <= 0 and agreement > -noise) or (earned > 0 and own < MIN_OWN):
        return "thin", 0.0
    if agreement < AGREE:
        mode = "discount"
    elif abs(shift) <= LEVEL:
        mode = "value"
    else:
        mode = "rank"
    return mode, min(1.0, max(0.0, earned / AGREE)) * FADE / (FADE + own)


def _evenly(members: list[FrozenTrial], k: int, sign: float) -> list[FrozenTrial]:
    if k >= len(members):
        return members
    if k <= 0:
        return []
    ordered = sorted(members, key=lambda t: sign * t.values[0])
    step = len(ordered) / k
    return [ordered[int(i * step)] for i in range(k)]


def transfer_view(
    trials: Sequence[FrozenTrial],
    directions: Sequence[StudyDirection],
    params: Collection[str] = (),
) -> list[FrozenTrial]:
    """``trials`` as the sampler sees them under ``compare: auto``: each imported source
    thinned to its weight (the runs left out hidden: `tuner.search._ranked.hidden`), and
    seen by rank unless its mode is ``value``. For ``params`` sampled apart from the others
    (`apart`), a source that shows no effect of one of them (`blind`) is hidden whole."""
    from optuna.study import StudyDirection
    from optuna.trial import TrialState

    from tuner.search._ranked import ranked_view
    from tuner.search._view import hidden

    decided = dict(_measure(trials, directions))
    if not decided:
        return list(trials)
    sign = -1.0 if directions and directions[0] == StudyDirection.MAXIMIZE else 1.0
    groups: dict[str, list[FrozenTrial]] = {}
    for t in trials:
        group = _group(t)
        if group is not None and t.state == TrialState.COMPLETE and t.values is not None:
            groups.setdefault(group, []).append(t)
    keep: set[int] = set()
    by_rank = False
    for group, members in groups.items():
        d = decided[group]
        if params and set(d.blind) & set(params):
            continue
        shown = _evenly(members, d.shown, sign)
        keep.update(t.number for t in shown)
        by_rank = by_rank or (d.mode != "value" and bool(shown))
    view = [t if _group(t) is None or t.number in keep else hidden(t) for t in trials]
    # One scale for the whole view: ranked as soon as one shown source is not seen by value.
    return ranked_view(view, directions) if by_rank else view


def blind(members: list[FrozenTrial], sign: float) -> list[str]:
    """The parameters a source's runs (``members``) show no effect of: those its model's
    value moves with by less than `tuner.search._prior_model.SEEN` of its spread
    (`PriorModel.effects`). Where the earlier task's value did not depend on a parameter, its
    best runs hold whatever values its search happened to try; shown to the sampler they would
    outweigh what the campaign's own trials say of that parameter."""
    return sorted(n for n, e in _model(members, sign).effects().items() if e < SEEN)


def apart(trials: Sequence[FrozenTrial], directions: Sequence[StudyDirection]) -> set[str]:
    """The parameters some source the sampler sees shows no effect of (`blind`): sampled
    apart from the others, without that source."""
    return {n for _, d in _measure(trials, directions) if d.shown for n in d.blind}


def steers(study: optuna.Study) -> bool:
    """Whether the sampler's view of ``study`` now shows any earlier run (some source weighs
    more than nothing): a trial proposed now is steered by them
    (`tuner.search._view.PriorFree`)."""
    from tuner.search._internals import sampler_trials

    trials = sampler_trials(study, False, None, True)
    return any(d.shown for _, d in _measure(trials, study.directions))


def describe(
    trials: Sequence[FrozenTrial], directions: Sequence[StudyDirection]
) -> list[dict[str, Any]]:
    """`measure` as plain dicts (JSON, MLflow params, ``tuner status``)."""
    return [d.as_dict() for d in measure(trials, directions)]


def line(d: SourceTransfer) -> str:
    """One source's decision in words, for the end of `tuner run`."""
    if d.agreement is None:
        return (
            f"warm start from {d.source}: {d.pairs} pair(s) with this campaign's trials, fewer "
            f"than {MIN_PAIRS}: too thin to act on, none of the {d.runs} earlier runs seen by "
            "the sampler yet"
        )
    measured = (
        f"warm start from {d.source}: rank agreement {d.agreement:+.2f} over {d.pairs} pairs "
        f"({d.exact_pairs} re-runs; chance alone reaches {d.noise:+.2f} one time in 20), level "
        f"shift {d.shift:+.2f} spreads: "
    )
    if d.mode == "thin" and d.pairs < MIN_OWN and d.agreement > (d.noise or 0.0):
        return measured + (
            f"beyond chance, but over fewer than {MIN_OWN} trials: weight 0.00 (none of the "
            f"{d.runs} earlier runs seen by the sampler while its first trials explore the "
            "whole space)"
        )
    if d.mode == "thin":
        return measured + (
            f"within chance, too thin to act on: weight 0.00 (none of the {d.runs} earlier "
            "runs seen by the sampler until the agreement exceeds chance)"
        )
    unseen = f"; none for {', '.join(d.blind)}, which they show no effect of" if d.blind else ""
    return measured + (
        f"{d.mode}, weight {d.weight:.2f} ({d.shown} of {d.runs} earlier runs seen by the "
        f"sampler, none by its exploring trials{unseen})"
    )
