"""Opening a campaign's records: the recorder, the parent run, and what a dead controller left."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tuner.records._access import check_tracking_access
from tuner.records._recorder import LineageRecorder
from tuner.records._summary import campaign_params, campaign_tags
from tuner.search._attrs import LAUNCH_ATTR, PARENT_RUN_ATTR

if TYPE_CHECKING:
    import optuna

    from tuner.config import CampaignConfig

__all__ = ["open_recorder", "start_campaign_run"]

_INTERRUPTED = "interrupted: the controller died while the trial ran; re-run as another trial"


def open_recorder(config: CampaignConfig) -> LineageRecorder:
    """The campaign's recorder, once the store accepted our credentials (a server that refuses
    them is one line, exit 2, before any trial)."""
    check_tracking_access(config.tracking_uri())
    return LineageRecorder(
        config.tracking_uri(),
        config.experiment,
        config.name,
        pool_size=config.resources.parallel + 1,
    )


def start_campaign_run(
    recorder: LineageRecorder,
    config: CampaignConfig,
    study: optuna.Study,
    orphans: Sequence[optuna.trial.FrozenTrial],
    *,
    reconcile: bool,
) -> None:
    """Start ``recorder`` on the study's parent run (made on first use and remembered in the
    study). With ``reconcile``, first close the runs a dead controller left RUNNING; the runs
    the ``orphans`` were launched with are trial runs even if they were not tagged yet."""
    parent = study.user_attrs.get(PARENT_RUN_ATTR)
    recorder.start(
        parent_run_id=parent,
        params=campaign_params(config),
        tags=campaign_tags(config),
        reconcile=_INTERRUPTED if reconcile else None,
        used_runs={
            str(t.user_attrs[LAUNCH_ATTR]["run_id"]): t.number
            for t in orphans
            if (t.user_attrs.get(LAUNCH_ATTR) or {}).get("run_id")
        },
    )
    if recorder.parent_run_id and recorder.parent_run_id != parent:
        study.set_user_attr(PARENT_RUN_ATTR, recorder.parent_run_id)
