"""Trials a dead controller or worker left RUNNING: end their processes, fail them with the
reason, and queue a copy with the same parameters (the copy counts, they do not).

Two ways to find them. `recover_stale`: a controller starting on a campaign takes every
RUNNING trial without a live heartbeat (its previous controller died). `requeue_stale`: any
worker, every heartbeat interval (and ``tuner resume``), takes the RUNNING trials whose
heartbeat is older than the grace period, marks them ``tuner:stale`` and FAIL, and adds the
WAITING copy, all under the study lock. ``study.ask`` pops WAITING trials atomically (a
compare-and-set on the trial state), so exactly one controller runs each copy.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lineage import faults
from tuner import _protocol as protocol
from tuner.executors import attempt_folder, end_attempt, end_group
from tuner.records import tags as T
from tuner.search import (
    ATTEMPT_ATTR,
    EXPLOIT_ATTR,
    FAIL_ATTR,
    FAILED_ATTEMPT,
    LAUNCH_ATTR,
    RERUN_OF_ATTR,
    RETRY_HISTORY_ATTR,
    RETRY_OF_ATTR,
    RETRY_OF_USER_ATTR,
    STALE_ATTR,
    SYSTEM_PREFIX,
    chain_attrs,
    internals,
)

if TYPE_CHECKING:
    import optuna

    from tuner.coordination._lock import StudyLock
    from tuner.records import LineageRecorder

__all__ = ["recover_stale", "requeue_and_close", "requeue_stale", "supersede"]


def recover_stale(
    study: optuna.Study,
    stale: Sequence[optuna.trial.FrozenTrial],
    host: str,
    grace: float,
    message: Callable[[str], Any],
    trials_dir: Path | None = None,
    lock: StudyLock | None = None,
) -> None:
    """Trials found RUNNING with no live owner: never started ones go back to WAITING;
    started ones have their orphan process group on this ``host`` ended (``grace`` seconds
    after SIGTERM), are failed with the reason, and re-queued.

    A trial without a launch record whose attempt channel exists in ``trials_dir`` (the
    local executor makes it as it starts the process) was being started when its controller
    died: its processes are found by that channel and ended, and it is re-queued as a started
    one, so the copy continues from its checkpoints instead of starting over beside it."""
    import optuna

    for frozen in stale:
        launch = frozen.user_attrs.get(LAUNCH_ATTR) or {}
        ended = 0
        if not launch:
            channel = _started_channel(trials_dir, frozen)
            if channel is None:
                # Asked for (params chosen) but its process was never started.
                internals.storage_of(study).set_trial_state_values(
                    internals.trial_id(frozen), optuna.trial.TrialState.WAITING
                )
                continue
            ended = end_attempt(channel, grace=grace)
        elif launch.get("host") == host and launch.get("pid"):
            ended = end_group(launch, grace=grace)
        reason = (
            "interrupted: its controller died (found RUNNING by the next controller"
            + (f", {ended} orphan process(es) ended" if ended else "")
            + "); re-run with the same parameters"
        )
        trial_id = internals.trial_id(frozen)
        supersede(study, frozen.number, trial_id, reason, frozen.params, frozen, lock)
        message(f"trial {frozen.number}: {reason}")


def _started_channel(trials_dir: Path | None, frozen: optuna.trial.FrozenTrial) -> str | None:
    """The report channel of ``frozen``'s attempt when the executor made it, else None."""
    if trials_dir is None:
        return None
    attempt = int(frozen.user_attrs.get(ATTEMPT_ATTR, 1))
    channel = attempt_folder(trials_dir, frozen.number, attempt) / protocol.CHANNEL_FILE
    return str(channel) if channel.exists() else None


def supersede(
    study: optuna.Study,
    number: int,
    trial_id: int,
    reason: str,
    params: Mapping[str, Any],
    frozen: optuna.trial.FrozenTrial,
    lock: StudyLock | None = None,
) -> None:
    """Queue a copy of an interrupted trial with its params, then mark it FAIL (superseded),
    under the study ``lock`` when one is given.

    In this order a process that dies between the two leaves the trial RUNNING beside its
    copy, and the next one to supersede it finds the copy (``tuner.rerun_of``) and only marks
    it; marked first, the trial would be superseded with no copy and its work lost. A trial
    a PBT exploit replaced (its continuation is queued, ``tuner.exploit``) gets no copy either:
    its member goes on once."""
    import optuna

    with lock.hold() if lock is not None else contextlib.nullcontext():
        storage = internals.storage_of(study)
        going_on = [t for t in study.get_trials(deepcopy=False) if _continues(t, number)]
        if any(t.user_attrs.get(RETRY_OF_USER_ATTR) == number for t in going_on):
            # Its attempt failed and its retry was queued before its controller died: it is
            # marked as the failed attempt it was, so it counts against budget.max_failures.
            storage.set_trial_system_attr(trial_id, FAILED_ATTEMPT, True)
        if not going_on:
            attempt = int(frozen.user_attrs.get(ATTEMPT_ATTR, 1))
            study.enqueue_trial(
                dict(params),
                user_attrs={
                    ATTEMPT_ATTR: attempt + 1,
                    RERUN_OF_ATTR: number,
                    **chain_attrs(frozen.user_attrs, number),
                },
                skip_if_exists=False,
            )
        faults.point("supersede-copied-not-marked")
        storage.set_trial_user_attr(trial_id, FAIL_ATTR, reason)
        storage.set_trial_system_attr(trial_id, STALE_ATTR, reason)
        storage.set_trial_state_values(trial_id, optuna.trial.TrialState.FAIL)


def _continues(trial: optuna.trial.FrozenTrial, number: int) -> bool:
    """Whether ``trial`` already goes on for trial ``number``: its re-run, its retry, or the
    PBT continuation that replaces it."""
    exploit = trial.user_attrs.get(EXPLOIT_ATTR)
    replaces = exploit.get("replaces") if isinstance(exploit, dict) else None
    return number in (
        trial.user_attrs.get(RERUN_OF_ATTR),
        trial.user_attrs.get(RETRY_OF_USER_ATTR),
        replaces,
    )


def requeue_stale(
    study: optuna.Study, storage: optuna.storages.RDBStorage, lock: StudyLock
) -> list[tuple[int, int]]:
    """Fail every RUNNING trial of ``study`` whose heartbeat is older than the grace period and
    add a WAITING copy with the same parameters. Returns ``[(stale_number, new_number)]``.

    ``study`` must use ``storage`` (made by `tuner.coordination._heartbeat.heartbeat_storage`). Safe to call from any number of
    processes at once: each stale trial is re-queued exactly once. Nothing is re-queued
    within a grace period after this process saw the database unreachable.
    """
    import optuna

    grace = storage.grace_period or 2 * (storage.get_heartbeat_interval() or 1)
    done: list[tuple[int, int]] = []
    outage = getattr(storage, "outage", None)
    if outage is not None and outage.quiet_for() < grace:
        # Nobody could record a heartbeat while the database was unreachable: give every
        # live worker a grace period to beat again before calling its trials stale.
        return done
    with lock.hold():
        for trial_id in internals.stale_trial_ids(storage, internals.study_id(study)):
            old = storage.get_trial(trial_id)
            reason = (
                f"no heartbeat for more than {grace}s: the worker running it died or lost the "
                f"database; re-queued with the same parameters"
            )
            try:
                storage.set_trial_system_attr(trial_id, STALE_ATTR, reason)
                if not storage.set_trial_state_values(trial_id, optuna.trial.TrialState.FAIL):
                    continue
            except optuna.exceptions.UpdateFinishedTrialError:
                continue  # its worker finished it after all
            going_on = [t for t in study.get_trials(deepcopy=False) if _continues(t, old.number)]
            if going_on:
                # Its continuation was queued before its worker died (a retry, a re-run, an
                # exploit): that copy runs it on, a second would run it twice.
                if any(t.user_attrs.get(RETRY_OF_USER_ATTR) == old.number for t in going_on):
                    storage.set_trial_system_attr(trial_id, FAILED_ATTEMPT, True)
                continue
            history = [*old.system_attrs.get(RETRY_HISTORY_ATTR, []), old.number]
            system_attrs = {
                k: v for k, v in old.system_attrs.items() if not k.startswith(SYSTEM_PREFIX)
            }
            system_attrs.update({RETRY_OF_ATTR: old.number, RETRY_HISTORY_ATTR: history})
            study.add_trial(
                optuna.trial.create_trial(
                    state=optuna.trial.TrialState.WAITING,
                    params=old.params,
                    distributions=old.distributions,
                    user_attrs={**old.user_attrs, **chain_attrs(old.user_attrs, old.number)},
                    system_attrs=system_attrs,
                )
            )
            new = max(t.number for t in study.get_trials(deepcopy=False))
            done.append((old.number, new))
    return done


def requeue_and_close(
    study: optuna.Study,
    rdb: optuna.storages.RDBStorage,
    lock: StudyLock,
    recorder: LineageRecorder | None,
    tracking_uri: str | None = None,
) -> list[tuple[int, int]]:
    """`requeue_stale`, then end the MLflow runs of the stale trials (FAILED, with why)
    through ``recorder``, else straight through an MLflow client on ``tracking_uri``."""
    moved = requeue_stale(study, rdb, lock)
    if not moved or (recorder is None and tracking_uri is None):
        return moved
    by_number = {t.number: t for t in study.get_trials(deepcopy=False)}
    for old, new in moved:
        frozen = by_number.get(old)
        launch = (frozen.user_attrs.get(LAUNCH_ATTR) if frozen else None) or {}
        run_id = launch.get("run_id")
        if not run_id:
            continue
        reason = str(frozen.system_attrs.get(STALE_ATTR, "stale")) if frozen else "stale"
        tags = {
            T.STATE: "FAIL",
            T.FAIL_REASON: f"{reason} (as trial {new})",
            T.RETRIED_AS: str(new),
        }
        if recorder is not None:
            recorder.trial_finished(run_id, status="FAILED", tags=tags, output_tail="")
            continue
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=tracking_uri)
        for key, value in tags.items():
            client.set_tag(run_id, key, value)
        client.set_terminated(run_id, "FAILED")
    return moved
