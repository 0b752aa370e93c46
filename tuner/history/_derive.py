"""A campaign derived from history: ``tuner init --from EXPERIMENT``.

`derive_campaign` reads the finished runs of one experiment (lineage's public store and
query API), ranks their varying hyperparameters with lineage's importance analysis
(`lineage.importance.get_param_importances`) and decides, per parameter:

- **tuned over its recorded range** (or every recorded choice), the declared one where the
  runs came from a campaign, unless one of the two below applies;
- **widened beyond a bound** when most of the 5 best runs sit at one end of the recorded
  range (within `tuner.search.EDGE` of it): the optimum may lie beyond it, so the range grows
  by half its width on that side (`tuner.search.widened`; a decade or more on a log range);
- **fixed** at the best run's value (written into the command, where the recorded command
  line passes it), with its importance in a comment, only when the analysis is confident it
  does not matter: not significant, and the upper end of its interval below `FIX_BELOW`
  (0.05 of the explained variation), both over all the runs and over the best half of them
  (`NEAR_TOP`; what still matters once the dominant parameters are right: a learning rate
  spread over decades can explain 99% of the variation over all runs while the leaf size
  still decides the last few percent near the optimum), on at least `FIX_RUNS` (100) runs.
  With fewer than 16 runs there is no best half to analyse, and nothing is fixed.

Where the runs point to a region, a **focus** on it is derived and written beside the
parameter, commented out (the parameter's line with ``focus:``, above the line without it):
for a parameter the analysis finds significant (the lower end of its 95% interval above
zero), the span of the values the best quarter of the runs (``k`` of them, at least 3) used,
widened on each side by ``0.6 / sqrt(k)`` of the recorded span (on the log scale when the
values were sampled on one: `tuner.history._derive_ranges.log_scale`) and kept within the
recorded range, or the choices they used; for one found negligible on fewer than `FIX_RUNS`
runs, the best run's value (*pinned*). Set, a focus holds four trials in five after the
campaign's first 10 (`tuner.search._focus`) and widens when the campaign's best trials sit
at its edge or beyond. It is offered, not set: the warm start already steers by the same
runs once the campaign's own trials earn them trust, and on ``benchmarks/bench_outcome.py``'s
six tasks a focus on top of it bought nothing overall (as many seeds short of the target) and,
where the earlier optimum had moved, left more seeds short than cold TPE; a bet the evidence
does not back is left to the user who knows the earlier optimum holds. When the focuses of
the significant parameters together would hold fewer than half of the runs, none is offered
(a focused trial's sampler would see too few of them).

The campaign warm-starts from the same runs: those inside the tuned ranges (and choices) are
imported, whatever their values of the fixed parameters, which is sound only because a
parameter is fixed when it does not matter.

When no parameter is significant (or there are fewer runs than the analysis needs) every
varying parameter is tuned over its recorded range: too little evidence to fix anything.

The campaign does not re-run the best earlier configurations first: it writes
``warm_start.enqueue_best`` (the `ENQUEUE_BEST` (3) best, never more than a quarter of the
budget: `enqueue_count`) commented out, for the user who knows the earlier optimum holds.
Re-run as the first trials, they took three of the ten trials a TPE sampler spends surveying
the whole space and made the earlier optimum the campaign's best from the start, which the
sampler then followed: where the optimum had moved, the campaign needed more trials than a
cold one and more seeds never reached cold TPE's result (``benchmarks/bench_outcome.py``,
docs/benchmarks.md, warm start). Without them the warm start's earned trust decides from the
campaign's own trials.

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
from typing import TYPE_CHECKING, Any

from tuner._errors import ConfigError
from tuner.history._derive_command import command_flags, derive_command
from tuner.history._derive_params import (
    FIX_BELOW,
    FIX_RUNS,
    DerivedParameter,
    add_conditions,
    derive_parameter,
)
from tuner.history._derive_rank import Ranking, rank_parameters

if TYPE_CHECKING:
    from lineage.importance import ParamImportance
    from lineage.store import RunRecord

__all__ = [
    "ENQUEUE_BEST",
    "DerivedCampaign",
    "DerivedParameter",
    "derive_campaign",
    "enqueue_count",
]

#: The best earlier configurations a derived campaign offers to re-run first (its
#: ``enqueue_best``, written commented out) ...
ENQUEUE_BEST = 3
#: ... and never more than this share of its budget (the rest is the sampler's to spend).
ENQUEUE_SHARE = 0.25


def enqueue_count(trials: int) -> int:
    """How many best earlier configurations a derived campaign of ``trials`` trials re-runs
    first: `ENQUEUE_BEST`, at most `ENQUEUE_SHARE` of the budget (3 of 20, 2 of 8, none of 3)."""
    return max(0, min(ENQUEUE_BEST, int(ENQUEUE_SHARE * trials)))


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
    #: The importance model asked for (``auto``, ``forest``, ``gp``); the campaign keeps it.
    method: str = "auto"

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
    method: str = "auto",
) -> DerivedCampaign:
    """Derive a campaign from the finished runs of ``experiment`` (see the module's doc).

    Reads only. Raises :class:`~tuner.ConfigError` (exit 2, one line) for an unknown
    experiment, a malformed ``where``, a store that cannot be read, a ``target`` no run
    recorded, or runs in which no hyperparameter varies. ``method`` names the importance
    model (``auto``, ``forest``, ``gp``; see `lineage.importance.evaluator_for`).
    """
    from lineage.importance import training_runs

    if goal not in ("minimize", "maximize"):
        raise ConfigError(f"--goal must be minimize or maximize, got {goal!r}.")
    uri, exp_name, runs, label = _read_runs(experiment, where, tracking_uri)
    kept, _ = training_runs(runs)
    rows = [r for r in kept if _finite(r.metrics.get(target))]
    if not rows:
        metrics = sorted({m for r in kept for m in r.metrics})
        have = ", ".join(metrics[:12]) + (", ..." if len(metrics) > 12 else "")
        raise ConfigError(
            f"--target {target}: no finished run of {label} recorded it "
            f"({len(kept)} finished run(s); their metrics: {have or 'none'})."
        )
    candidates, left_out, source, declared = _candidates(runs, rows)
    types = _param_types(rows)  # the first run that says wins: before sorting by the target
    varying = [n for n in candidates if len({r.params.get(n) for r in rows}) > 1]
    if not varying:
        raise ConfigError(
            f"--from {experiment}: no recorded hyperparameter varies over the {len(rows)} "
            f"finished run(s) of {label} with {target} ({source}); nothing to tune."
        )
    sign = -1.0 if goal == "maximize" else 1.0
    rows.sort(key=lambda r: sign * r.metrics[target])
    best = rows[0]
    rank = rank_parameters(
        rows, varying, target=target, goal=goal, experiment=exp_name, method=method
    )
    if rank.result is not None:
        for name, same in rank.result.aliases.items():
            for other in same:
                left_out[other] = f"same values as {name} in every run"
    names = [n for n in varying if n not in left_out]
    if rank.result is not None:
        ranked = rank.ranked
        names.sort(key=lambda n: -ranked[n].importance if n in ranked else 1.0)
    params, analysis = _parameters(rows, names, rank, declared, types)
    add_conditions(params, rows)
    command, command_source, workdir = derive_command(best, rows, params)
    return DerivedCampaign(
        experiment=exp_name,
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
        ranked=rank.decided,
        analysis=analysis,
        left_out=left_out,
        method=method,
    )


def _read_runs(
    experiment: str, where: str | None, tracking_uri: str | None
) -> tuple[str, str, list[RunRecord], str]:
    """``(store URI, experiment name, its runs matching where, how to name them)``; a store
    or experiment that cannot be read is a `ConfigError`."""
    from lineage import LineageError
    from lineage.masking import mask_uri
    from lineage.query import search_runs
    from lineage.store import open_store
    from lineage.uri import resolve_tracking_uri

    uri = resolve_tracking_uri(tracking_uri)
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
    label = f"experiment {exp.name!r} ({mask_uri(uri)})" + (f" where {where}" if where else "")
    return uri, exp.name, list(runs), label


def _parameters(
    rows: Sequence[RunRecord],
    names: list[str],
    rank: Ranking,
    declared: dict[str, Any],
    types: dict[str, str],
) -> tuple[list[DerivedParameter], str]:
    """Each parameter as the campaign tunes or fixes it, and the analysis line. The refined
    focuses are dropped when they would hold fewer than half of the runs (too few to
    warm-start from)."""
    flags = command_flags(rows)
    ranked, near, decided = rank.ranked, rank.near, rank.decided

    negligible = {
        n for n in names if decided and _negligible(ranked.get(n)) and _negligible(near.get(n))
    }
    # Fixed only when enough runs back the analysis; otherwise tuned, pinned to the best value.
    fixed = negligible if len(rows) >= FIX_RUNS else set()

    def derive(refined: set[str]) -> list[DerivedParameter]:
        return [
            derive_parameter(
                n,
                rows,
                types.get(n),
                tuned=n not in fixed,
                refine=n in refined,
                pin=n in negligible - fixed,
                importance=ranked.get(n),
                near=near.get(n),
                flag=flags.get(n),
                declared=declared.get(n),
            )
            for n in names
        ]

    significant = rank.significant
    params = derive(significant)
    analysis = rank.analysis
    covered = sum(_inside(r, params) for r in rows)
    if significant and covered < len(rows) / 2:
        params = derive(set())
        analysis += (
            f"; the refined focuses would hold {covered} of the {len(rows)} runs, too few to "
            "warm-start from, so nothing is refined"
        )
    return params, analysis


# ----- which params ---------------------------------------------------------------------------


def _candidates(
    runs: Sequence[RunRecord], rows: Sequence[RunRecord]
) -> tuple[list[str], dict[str, str], str, dict[str, dict[str, Any]]]:
    """The hyperparameter names, the varying params left out and why, where the names came
    from (for messages), and the parameters as the source campaign declared them."""
    from lineage import tags

    recorded = list(dict.fromkeys(k for r in rows for k in sorted(r.params)))
    varying = {n for n in recorded if len({r.params.get(n) for r in rows}) > 1}
    campaigns = {r.tags[tags.CAMPAIGN] for r in rows if r.tags.get(tags.CAMPAIGN)}
    space: list[str] = []
    declared: dict[str, dict[str, Any]] = {}
    for run in runs:
        is_campaign = run.tags.get(tags.RUN_TYPE) == tags.RUN_TYPE_CAMPAIGN
        if is_campaign and run.tags.get(tags.CAMPAIGN) in campaigns:
            prefix = tags.CAMPAIGN_SPACE_PREFIX
            for key, text in run.params.items():
                if key.startswith(prefix):
                    space.append(key[len(prefix) :])
                    spec = _declared(text)
                    if spec is not None:
                        declared.setdefault(key[len(prefix) :], spec)
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
    return names, left_out, source, declared


def _declared(text: str) -> dict[str, Any] | None:
    """A campaign run's ``space.<name>`` param as a parameter spec (``None``: unreadable)."""
    try:
        spec = json.loads(text)
    except ValueError:
        return None
    if not isinstance(spec, dict) or spec.get("type") not in ("float", "int", "categorical"):
        return None
    if spec["type"] == "categorical":
        return spec if isinstance(spec.get("choices"), list) else None
    numbers = (spec.get("low"), spec.get("high"))
    ok = all(isinstance(x, int | float) for x in numbers)
    return spec if ok else None


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


def _inside(run: RunRecord, params: Sequence[DerivedParameter]) -> bool:
    """Whether the run's values lie in every refined range or focus (a focused trial's sampler
    would see it); a focus pinned to the best run's value does not count (it gives way as
    soon as the campaign's best trial has another value)."""
    for p in params:
        text = run.params.get(p.name)
        if not p.tuned or p.pinned or text is None:
            continue
        spec = p.spec
        if spec["type"] == "categorical":
            choices = spec.get("focus", spec)["choices"]
            if not any(str(c).lower() == text.strip().lower() for c in choices):
                return False
            continue
        try:
            value = float(text)
        except ValueError:
            return False
        span = spec.get("focus", spec)
        if not span["low"] <= value <= span["high"]:
            return False
    return True


def _negligible(imp: ParamImportance | None) -> bool:
    """Whether the analysis is confident the parameter does not matter: not significant, and
    the upper end of its interval below `FIX_BELOW`."""
    return imp is not None and not imp.significant and imp.ci[1] < FIX_BELOW


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)
