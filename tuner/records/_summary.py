"""What the campaign's parent MLflow run holds: its params and tags at the start, the summary
at the end, and the importance analysis over the finished trials."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tuner.config import CampaignConfig

__all__ = ["campaign_params", "campaign_tags", "run_importance", "summary_tags"]


def campaign_params(c: CampaignConfig) -> dict[str, Any]:
    """The campaign's parent-run params: budget, sampler, pruner, target, the space."""
    out: dict[str, Any] = {
        "budget.trials": c.budget.trials,
        "budget.max_failures": c.budget.max_failures,
        "trial.retries": c.trial.retries,
        "sampler": c.sampler.name,
        "pruner": c.pruner.name,
        "target": f"{c.target.metric}:{c.target.goal}",
        "resources.parallel": c.resources.parallel,
        "resources.kind": c.resources.kind,
    }
    for name, param in c.parameters.items():
        out[f"space.{name}"] = json.dumps(
            param.model_dump(exclude_none=True, exclude_defaults=True), default=str
        )
    return out


def campaign_tags(c: CampaignConfig) -> dict[str, str]:
    """The parent run's tags naming the study, its storage and the command (masked)."""
    from lineage.masking import mask_argv, mask_uri

    return {
        "tuner.study": c.study_name,
        "tuner.storage": mask_uri(c.optuna_storage_url()),
        "tuner.command": " ".join(mask_argv(list(c.command))),
        "tuner.config_path": str(c.source_path or ""),
    }


def summary_tags(
    counts: Mapping[str, int], best: Mapping[str, Any] | None, stop_reason: str | None
) -> dict[str, str]:
    """The parent run's closing tags: trials by state, the best trial, why it stopped."""
    tags = {f"tuner.count.{k}": str(v) for k, v in counts.items()}
    if best is not None:
        tags["tuner.best.number"] = str(best["number"])
        tags["tuner.best.value"] = repr(best["value"])
    if stop_reason:
        tags["tuner.stop_reason"] = str(stop_reason)
    return tags


def run_importance(config: CampaignConfig, complete: int) -> str:
    """Rank the campaign's hyperparameters (an MLflow analysis run); one line saying what."""
    from lineage.importance import MIN_RUNS

    if complete < MIN_RUNS:
        return (
            f"importance: {complete} completed trial(s); at least {MIN_RUNS} are needed "
            "to rank parameters"
        )
    try:
        from lineage.importance import analyze_experiment

        result = analyze_experiment(
            config.experiment,
            target=config.target.metric,
            goal=config.target.goal,
            tracking_uri=config.tracking_uri(),
            where=f"tags.`tuner.campaign` = '{config.name}'",
            # The tuned hyperparameters only: a trial's own lineage (optimizer.*, seeds,
            # dataset sizes recorded by callbacks) would otherwise compete with them.
            params=list(config.parameters),
            log=True,
        )
    except Exception as exc:
        return f"importance: not computed ({type(exc).__name__}: {exc})"
    names = ", ".join(
        f"{p.name}={p.importance:.2f}{'*' if p.significant else ''}" for p in result.params[:5]
    )
    run = result.analysis_run_id
    return f"importance: {names or 'computed'}" + (f" (analysis run {run})" if run else "")
