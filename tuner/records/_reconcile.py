"""Closing what a dead controller left in the lineage store."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import NamedTuple

from tuner.records import _tags as T
from tuner.records._tags import RUN_TYPE
from tuner.records._trial import trial_run_name

__all__ = ["RUN_TYPE", "EndedRun", "reconcile_runs"]


class EndedRun(NamedTuple):
    """How a trial run whose trial the study holds as finished is ended."""

    status: str  # FINISHED, KILLED (pruned) or FAILED
    tags: Mapping[str, str]
    end_ms: int | None


def reconcile_runs(
    tracking_uri: str,
    experiment: str,
    campaign: str,
    reason: str,
    used: Mapping[str, int] | None = None,
    ended: Mapping[str, EndedRun] | None = None,
) -> dict[str, int]:
    """After a controller died: delete reserved runs of ``campaign`` and end its trial runs
    left RUNNING as KILLED with ``reason``. ``used`` maps run ids that trials were launched
    with to their trial numbers: such a run is a trial run even if the dead controller had
    not tagged it yet. ``ended`` gives the runs whose trials the study holds as finished
    (told before the run's own end could be written, say on a full disk): those are ended
    as their trial did, not killed. Returns counts ``{"deleted": n, "killed": n, "ended": n}``."""
    from mlflow.entities import RunTag
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    counts = {"deleted": 0, "killed": 0, "ended": 0}
    if exp is None:
        return counts
    runs = client.search_runs(
        [exp.experiment_id],
        filter_string=f"tags.`{T.CAMPAIGN}` = '{campaign}' and attributes.status = 'RUNNING'",
        max_results=5000,
    )
    now = time.time()
    for run in runs:
        kind = run.data.tags.get(RUN_TYPE)
        number = (used or {}).get(run.info.run_id)
        if number is not None and kind == T.RUN_TYPE_RESERVED:
            client.set_tag(run.info.run_id, RUN_TYPE, T.RUN_TYPE_TRIAL)
            client.set_tag(run.info.run_id, T.TRIAL_NUMBER, str(number))
            client.set_tag(run.info.run_id, T.MLFLOW_RUN_NAME, trial_run_name(campaign, number))
            kind = T.RUN_TYPE_TRIAL
        if kind == T.RUN_TYPE_RESERVED:
            client.set_terminated(run.info.run_id, "KILLED")
            client.delete_run(run.info.run_id)
            counts["deleted"] += 1
        elif kind == T.RUN_TYPE_TRIAL and run.info.run_id in (ended or {}):
            end = (ended or {})[run.info.run_id]
            client.log_batch(run.info.run_id, tags=[RunTag(k, v) for k, v in end.tags.items()])
            client.set_terminated(
                run.info.run_id, end.status, end_time=end.end_ms or int(now * 1000)
            )
            counts["ended"] += 1
        elif kind == T.RUN_TYPE_TRIAL:
            client.log_batch(
                run.info.run_id,
                tags=[
                    RunTag(T.STATE, "FAIL"),
                    RunTag(T.FAIL_REASON, reason),
                ],
            )
            client.set_terminated(run.info.run_id, "KILLED", end_time=int(now * 1000))
            counts["killed"] += 1
    return counts
