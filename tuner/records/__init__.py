"""Records: what a campaign writes to the lineage store (MLflow), and when.

One parent run per campaign (its params, tags and closing summary), one child run per trial
(written from a background thread, so no MLflow call is on a trial's path), the closing of
runs a dead controller left, the check that the store accepts our credentials, and what a
full disk under any of the campaign's stores means (`disk_full`).
"""

from __future__ import annotations

from tuner.records import _tags as tags
from tuner.records._access import CredentialsError, check_tracking_access
from tuner.records._campaign import open_recorder, start_campaign_run
from tuner.records._carry import carry_history
from tuner.records._disk_full import disk_full
from tuner.records._reconcile import reconcile_runs
from tuner.records._recorder import LineageRecorder
from tuner.records._state import IllegalTransition, TrialState
from tuner.records._summary import (
    NOTE_TAG,
    Analysis,
    AnalysisPlan,
    campaign_note,
    campaign_params,
    campaign_tags,
    pareto_line,
    run_importance,
    summary_tags,
)
from tuner.records._trial import (
    interrupted_tags,
    output_tail,
    placed_trials,
    placement_attr,
    trial_end_tags,
    trial_run_name,
)
from tuner.records._usage import device_usage, device_usage_tags

__all__ = [
    "NOTE_TAG",
    "Analysis",
    "AnalysisPlan",
    "CredentialsError",
    "IllegalTransition",
    "LineageRecorder",
    "TrialState",
    "campaign_note",
    "campaign_params",
    "campaign_tags",
    "carry_history",
    "check_tracking_access",
    "device_usage",
    "device_usage_tags",
    "disk_full",
    "interrupted_tags",
    "open_recorder",
    "output_tail",
    "pareto_line",
    "placed_trials",
    "placement_attr",
    "reconcile_runs",
    "run_importance",
    "start_campaign_run",
    "summary_tags",
    "tags",
    "trial_end_tags",
    "trial_run_name",
]
