"""Trials a dead controller or worker left RUNNING: end their processes, fail them with the
reason, and queue a copy with the same parameters (the copy counts, they do not)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tuner import _procs
from tuner._heartbeat import STALE_ATTR

if TYPE_CHECKING:
    import optuna

__all__ = ["ATTEMPT_ATTR", "FAIL_ATTR", "LAUNCH_ATTR", "recover_stale", "supersede"]

LAUNCH_ATTR = "tuner.launch"
ATTEMPT_ATTR = "tuner.attempt"
FAIL_ATTR = "fail_reason"


def recover_stale(
    study: optuna.Study,
    stale: Sequence[optuna.trial.FrozenTrial],
    host: str,
    grace: float,
    message: Callable[[str], Any],
) -> None:
    """Trials found RUNNING with no live owner: never started ones go back to WAITING;
    started ones have their orphan process group on this ``host`` ended (``grace`` seconds
    after SIGTERM), are failed with the reason, and re-queued."""
    import optuna

    for frozen in stale:
        launch = frozen.user_attrs.get(LAUNCH_ATTR) or {}
        if not launch:
            # Asked for (params chosen) but its process was never started.
            study._storage.set_trial_state_values(frozen._trial_id, optuna.trial.TrialState.WAITING)
            continue
        ended = 0
        if launch.get("host") == host and launch.get("pid"):
            ended = _procs.end_group(launch, grace=grace)
        reason = (
            "interrupted: its controller died (found RUNNING by the next controller"
            + (f", {ended} orphan process(es) ended" if ended else "")
            + "); re-run with the same parameters"
        )
        supersede(study, frozen.number, frozen._trial_id, reason, frozen.params, frozen)
        message(f"trial {frozen.number}: {reason}")


def supersede(
    study: optuna.Study,
    number: int,
    trial_id: int,
    reason: str,
    params: Mapping[str, Any],
    frozen: optuna.trial.FrozenTrial,
) -> None:
    """Mark an interrupted trial FAIL (superseded) and queue a copy with its params."""
    import optuna

    storage = study._storage
    storage.set_trial_user_attr(trial_id, FAIL_ATTR, reason)
    storage.set_trial_system_attr(trial_id, STALE_ATTR, reason)
    storage.set_trial_state_values(trial_id, optuna.trial.TrialState.FAIL)
    attempt = int(frozen.user_attrs.get(ATTEMPT_ATTR, 1))
    study.enqueue_trial(
        dict(params),
        user_attrs={ATTEMPT_ATTR: attempt, "tuner.rerun_of": number},
        skip_if_exists=False,
    )
