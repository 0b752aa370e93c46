"""What the campaign's parent MLflow run holds: its params and tags at the start, the summary
at the end, and the importance analysis over the finished trials."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lineage.uri import trials_view_link, ui_link
from tuner.records import _tags as T

if TYPE_CHECKING:
    from tuner.config import CampaignConfig, Objective

__all__ = [
    "NOTE_TAG",
    "Analysis",
    "AnalysisPlan",
    "campaign_note",
    "campaign_params",
    "campaign_tags",
    "pareto_line",
    "run_importance",
    "summary_tags",
]


def campaign_params(c: CampaignConfig) -> dict[str, Any]:
    """The campaign's parent-run params: budget, sampler, pruner, target, the space."""
    out: dict[str, Any] = {
        "budget.max_failures": c.budget.max_failures,
        "trial.retries": c.trial.retries,
        "sampler": c.sampler.name,
        "pruner": c.pruner.name,
        "target": f"{c.target.metric}:{c.target.goal}",
        "resources.parallel": c.resources.parallel,
        "resources.kind": c.resources.kind,
    }
    for key in ("trials", "steps", "device_hours"):
        if getattr(c.budget, key) is not None:
            out[f"budget.{key}"] = getattr(c.budget, key)
    if c.objectives:
        out["objectives"] = ",".join(f"{o.metric}:{o.goal}" for o in c.all_objectives)
    for name, param in c.parameters.items():
        out[f"space.{name}"] = json.dumps(
            param.model_dump(exclude_none=True, exclude_defaults=True), default=str
        )
    return out


def campaign_tags(c: CampaignConfig) -> dict[str, str]:
    """The parent run's tags naming the study, its storage and the command (masked)."""
    from lineage.masking import mask_argv, mask_uri

    return {
        T.STUDY: c.study_name,
        T.STORAGE: mask_uri(c.optuna_storage_url()),
        T.TRIAL_COMMAND: " ".join(mask_argv(list(c.command))),
        T.CONFIG_PATH: str(c.source_path or ""),
    }


def summary_tags(
    counts: Mapping[str, int],
    best: Mapping[str, Any] | None,
    stop_reason: str | None,
    metric_names: Sequence[str] = (),
) -> dict[str, str]:
    """The parent run's closing tags: trials by state, the best trial (one objective) or the
    Pareto front (several: ``tuner.pareto.size``, ``tuner.pareto.numbers``, and
    ``tuner.pareto.front``, a JSON list of ``{"number", "values": {metric: value}}``), and
    why it stopped. ``best`` is what `tuner.campaign` reports (see ``best_of``)."""
    tags = {f"{T.COUNT_PREFIX}{k}": str(v) for k, v in counts.items()}
    if best is not None and "trials" in best:
        front = list(best["trials"])
        tags[T.PARETO_SIZE] = str(len(front))
        tags[T.PARETO_NUMBERS] = ",".join(str(t["number"]) for t in front)
        names = list(metric_names)
        tags[T.PARETO_FRONT] = _clip(
            json.dumps(
                [{"number": t["number"], "values": _named(names, t["values"])} for t in front],
                default=str,
            )
        )
    elif best is not None:
        tags[T.BEST_NUMBER] = str(best["number"])
        tags[T.BEST_VALUE] = repr(best["value"])
    if stop_reason:
        tags[T.STOP_REASON] = str(stop_reason)
    return tags


def pareto_line(best: Mapping[str, Any], metric_names: Sequence[str], *, limit: int = 5) -> str:
    """``Pareto front of 3 trials: #4 (loss=0.01, cost=0.2), ...`` for the closing summary."""
    front = list(best["trials"])
    shown = []
    for t in front[:limit]:
        values = ", ".join(
            f"{k}={v:.6g}" for k, v in _named(list(metric_names), t["values"]).items()
        )
        shown.append(f"#{t['number']} ({values})")
    more = f", +{len(front) - limit} more (tuner status CONFIG)" if len(front) > limit else ""
    return f"Pareto front of {len(front)} trial(s): " + ", ".join(shown) + more


def _named(names: list[str], values: Sequence[float]) -> dict[str, float]:
    if len(names) != len(values):
        names = [f"objective{i}" for i in range(len(values))]
    return dict(zip(names, values, strict=True))


def _clip(text: str, limit: int = 5000) -> str:
    # MLflow tag values hold at most 5,000 characters (8,000 on newer stores).
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class Analysis:
    """One importance analysis the campaign ran: its objective, run id and one-line result."""

    metric: str
    goal: str
    line: str
    run_id: str | None = None


@dataclass(frozen=True)
class AnalysisPlan:
    """What the importance analysis at a campaign's end reads of its config."""

    #: The campaign's ``name``: its trial runs carry it as a tag.
    campaign: str
    #: The MLflow experiment and lineage store of the trial runs.
    experiment: str
    tracking_uri: str
    #: The objectives (``target`` first): one analysis each.
    objectives: Sequence[Objective]
    #: The tuned parameters' names (``parameters:``): the only ones ranked.
    parameters: Sequence[str]
    #: The model that ranks them (``analysis.method``).
    method: str
    #: Whether a PBT scheduler changed the parameters during training.
    pbt: bool

    @classmethod
    def of(cls, config: CampaignConfig) -> AnalysisPlan:
        """The analysis of ``config``'s campaign. It takes the whole config because this is
        where what the analysis reads is cut out of it; nothing past it does."""
        scheduler = config.scheduler
        return cls(
            campaign=config.name,
            experiment=config.experiment,
            tracking_uri=config.tracking_uri(),
            objectives=config.all_objectives,
            parameters=list(config.parameters),
            method=config.analysis.method,
            pbt=scheduler is not None and scheduler.name == "pbt",
        )


def run_importance(plan: AnalysisPlan, complete: int) -> list[Analysis]:
    """Rank the campaign's hyperparameters, once per objective (an MLflow analysis run
    each, named ``importance-<metric>``); one `Analysis` per objective saying what.
    ``complete``: the campaign's completed trials (too few: nothing is ranked)."""
    from lineage.importance import MIN_RUNS

    out: list[Analysis] = []
    several = len(plan.objectives) > 1
    for objective in plan.objectives:
        metric, goal = objective.metric, objective.goal
        head = f"importance ({metric}, {goal})" if several else "importance"
        if complete < MIN_RUNS:
            line = (
                f"{head}: {complete} completed trial(s); at least {MIN_RUNS} are needed "
                "to rank parameters"
            )
            out.append(Analysis(metric, goal, line))
            continue
        try:
            from lineage.importance import analyze_experiment, evaluator_for

            result = analyze_experiment(
                plan.experiment,
                target=metric,
                goal=goal,
                tracking_uri=plan.tracking_uri,
                where=f"tags.`tuner.campaign` = '{plan.campaign}'",
                # The tuned hyperparameters only: a trial's own lineage (optimizer.*, seeds,
                # dataset sizes recorded by callbacks) would otherwise compete with them.
                params=list(plan.parameters),
                evaluator=evaluator_for(plan.method),
                log=True,
            )
        except Exception as exc:  # printed in the analysis's place
            out.append(
                Analysis(metric, goal, f"{head}: not computed ({type(exc).__name__}: {exc})")
            )
            continue
        line = f"{head}: {ranking_text(result)}"
        if plan.pbt:
            line += (
                "; PBT: each run counts with the values its last segment trained with "
                "(the earlier ones are its hparam/<name> series)"
            )
        out.append(Analysis(metric, goal, line, result.analysis_run_id))
    return out


def ranking_text(result: Any) -> str:
    """What an importance analysis found, in a few words: the shares of the leading
    parameters (``*`` significant) where its model predicts held-out runs better than their
    mean and some parameter is significant; else that no parameter could be ranked, and
    why, without the shares (a model worse than the mean gives one parameter all of a
    meaningless share)."""
    r2 = result.r2.get(result.model)
    run = result.analysis_run_id
    scored = f"held-out R² {r2:.2f}" if r2 is not None else ""
    where = ", ".join(x for x in (result.model, scored, f"analysis run {run}" if run else "") if x)
    never = list(getattr(result, "never_active", []) or [])
    tail = f"; never active: {', '.join(never)}" if never else ""
    if r2 is not None and r2 <= 0:
        return (
            f"no parameter could be ranked: the {result.model} predicts held-out runs no "
            f"better than their mean{tail} ({where})"
        )
    if result.params and not any(p.significant for p in result.params):
        return f"no parameter could be ranked: none is significant{tail} ({where})"
    names = ", ".join(
        f"{p.name}={p.importance:.2f}{'*' if p.significant else ''}" for p in result.params[:5]
    )
    return f"{names or 'computed'}{tail} ({where})"


#: MLflow shows this tag as the run's description (Markdown).
NOTE_TAG = "mlflow.note.content"


def campaign_note(
    config: CampaignConfig,
    *,
    experiment_id: str | None,
    counts: Mapping[str, int],
    best: Mapping[str, Any] | None,
    stop_reason: str | None,
    analyses: Sequence[Analysis] = (),
) -> str:
    """The parent run's description (Markdown): what the campaign tuned, how it ended, and
    one link per importance analysis run with what that run holds."""
    objectives = ", ".join(f"`{o.metric}` ({o.goal})" for o in config.all_objectives)
    lines = [
        f"**Tuning campaign `{config.name}`**: {len(config.parameters)} parameter(s) "
        f"({', '.join(f'`{n}`' for n in config.parameters)}) tuned for {objectives} with the "
        f"{config.sampler.name} sampler; budget {config.budget.limits_text()}.",
        "",
        "Trials: " + ", ".join(f"{k} {v}" for k, v in counts.items()) + ".",
    ]
    if best is not None and "trials" in best:
        lines += ["", pareto_line(best, config.metric_names) + "."]
    elif best is not None:
        lines += [
            "",
            f"Best trial: #{best['number']}, `{config.target.metric}` = {best['value']:.6g}.",
        ]
    if stop_reason:
        lines += ["", f"Stopped: {stop_reason}"]
    if experiment_id:
        lines += [
            "",
            f"[The trials]({trials_view_link('', experiment_id)}), best first, with the "
            "target and the tuned parameters as columns (select them there and press "
            "**Compare** for MLflow's parallel coordinates, scatter and contour plots).",
        ]
    linked = [a for a in analyses if a.run_id]
    if linked:
        lines += ["", "**Hyperparameter importance**"]
        for a in linked:
            link = (
                ui_link(experiment_id=experiment_id, run_id=a.run_id) if experiment_id else a.run_id
            )
            lines.append(
                f"- [importance of each parameter for `{a.metric}` ({a.goal})]({link}): the "
                "ranking with 95% intervals (metrics `importance.<param>`), a bar chart and one "
                "scatter plot per parameter (artifacts, PNG and interactive HTML), the target's "
                "distribution and the top runs"
            )
    else:
        unlinked = [a.line for a in analyses]
        if unlinked:
            lines += ["", *(f"- {line}" for line in unlinked)]
    lines += ["", f"Config: `{config.source_path or ''}`; trial runs are this run's children."]
    return "\n".join(lines)
