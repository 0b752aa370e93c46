"""Opening a campaign's records: the recorder, the parent run, and what a dead controller left."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lineage.uri import trials_view
from tuner.records import _tags as T
from tuner.records._access import check_tracking_access
from tuner.records._reconcile import EndedRun
from tuner.records._recorder import LineageRecorder
from tuner.records._summary import campaign_params, campaign_tags
from tuner.records._trial import finished_trial_tags
from tuner.search import IMPORTED_ATTR, LAUNCH_ATTR, PARENT_RUN_ATTR

if TYPE_CHECKING:
    import optuna

    from tuner.config import CampaignConfig

__all__ = ["open_recorder", "start_campaign_run"]

_INTERRUPTED = "interrupted: the controller died while the trial ran; re-run as another trial"


def open_recorder(
    tracking_uri: str, *, experiment: str, campaign: str, parallel: int
) -> LineageRecorder:
    """The recorder of campaign ``campaign`` in ``experiment`` of the store at
    ``tracking_uri``, once the store accepted our credentials (a server that refuses them is
    one line, exit 2, before any trial). ``parallel``: trials running at once
    (``resources.parallel``), each of which may write while the controller does."""
    check_tracking_access(tracking_uri)
    return LineageRecorder(tracking_uri, experiment, campaign, pool_size=parallel + 1)


def start_campaign_run(
    recorder: LineageRecorder,
    config: CampaignConfig,
    study: optuna.Study,
    orphans: Sequence[optuna.trial.FrozenTrial],
    *,
    reconcile: bool,
) -> None:
    """Start ``recorder`` on the study's parent run (made on first use and remembered in the
    study). It takes the whole ``config``: the parent run records all of it (params, tags).
    With ``reconcile``, first close the runs a dead controller left RUNNING; the runs
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
        ended_runs=_ended_runs(study, config.metric_names) if reconcile else None,
    )
    if recorder.parent_run_id and recorder.parent_run_id != parent:
        study.set_user_attr(PARENT_RUN_ATTR, recorder.parent_run_id)
    recorder.call(
        lambda client: _tag_experiment(
            client, recorder.experiment_id, recorder.parent_run_id, config
        )
    )


def _tag_experiment(
    client: Any, experiment_id: str | None, parent_run_id: str | None, config: CampaignConfig
) -> None:
    """The experiment's target and tuned parameters, for the readers that select only some
    of its runs (``lineage runs --where``, ``show``, ``report``), and the MLflow UI view of
    the campaign's trials that the printed links open."""
    if experiment_id is None:
        return
    objectives = [(o.metric, o.goal) for o in config.all_objectives]
    target = ",".join(f"{m}:{g}" for m, g in objectives)
    client.set_experiment_tag(experiment_id, T.EXPERIMENT_TARGET, target)
    client.set_experiment_tag(experiment_id, T.EXPERIMENT_TUNED, ",".join(config.parameters))
    key, view = trials_view(
        campaign=config.name,
        targets=objectives,
        tuned=list(config.parameters),
        parent_run_id=parent_run_id,
    )
    client.set_experiment_tag(experiment_id, key, view)


def _ended_runs(study: optuna.Study, metric_names: Sequence[str]) -> dict[str, EndedRun]:
    """The runs of trials the study holds as complete or pruned, by run id: how to end each if the
    controller that told the study stopped before it could end the run too."""
    from tuner.records._state import TrialState

    ended: dict[str, EndedRun] = {}
    for trial in study.get_trials(deepcopy=False):
        run_id = (trial.user_attrs.get(LAUNCH_ATTR) or {}).get("run_id")
        # A failed trial's run left open is ended as interrupted, as before.
        if not run_id or IMPORTED_ATTR in trial.system_attrs:
            continue
        if trial.state.name not in ("COMPLETE", "PRUNED"):
            continue
        state = TrialState(trial.state.name)
        end = trial.datetime_complete
        ended[str(run_id)] = EndedRun(
            state.mlflow_status,
            finished_trial_tags(trial, metric_names),
            int(end.timestamp() * 1000) if end is not None else None,
        )
    return ended
