"""What a campaign reached, as it stands: the study's counted trials by state (every
controller's), the `CampaignResult` that `tuner.campaign.Controller.run` returns, and the
importance analysis of a campaign that finished."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from tuner.campaign._closing import link_analyses
from tuner.campaign._history import note_space_changes, tally
from tuner.campaign._running import CampaignResult
from tuner.records import AnalysisPlan, run_importance

if TYPE_CHECKING:
    import optuna

    from tuner.campaign._closing import CampaignEnd

__all__ = ["analyse", "campaign_result", "study_counts"]


def study_counts(study: optuna.Study | None, own: Mapping[str, int]) -> dict[str, int]:
    """The study's counted trials by final state (COMPLETE, PRUNED, FAIL), every
    controller's; ``own`` (this controller's counts) before the study is loaded, or when it
    cannot be read."""
    if study is None:
        return dict(own)
    try:
        return tally(study)[0]
    except Exception:  # the storage itself may be what failed: this controller's view
        return dict(own)


def campaign_result(end: CampaignEnd, budget: int | None) -> CampaignResult:
    """What the campaign of ``end`` reached, against ``budget`` counted trials (None: no
    trial limit)."""
    counts = study_counts(end.study, end.counts)
    recorder = end.recorder
    return CampaignResult(
        counts=counts,
        finished=sum(counts.values()),
        budget=budget,
        best=end.best,
        stop_reason=end.stop_reason,
        parent_run_id=recorder.parent_run_id if recorder else None,
        experiment_id=recorder.experiment_id if recorder else None,
        lineage_errors=recorder.errors if recorder else {},
    )


def analyse(end: CampaignEnd) -> str:
    """Rank the campaign's hyperparameters (an MLflow analysis run per objective, linked from
    the campaign's run); one line per objective saying what was found."""
    analyses = run_importance(AnalysisPlan.of(end.config), end.counts["COMPLETE"])
    link_analyses(end, analyses)
    note_space_changes(end)
    return "\n".join(a.line for a in analyses)
