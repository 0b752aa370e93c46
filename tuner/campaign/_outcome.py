"""How an ended trial attempt is judged and told, and the best trial so far (also for
`tuner status`).

`Bookkeeping.settle` is what the controller does with each attempt that ended: `judge` it,
`tell` the study (a failure is retried as a copy while the failure budget allows), end its
MLflow run (`tuner.campaign._run_end.RunEnds`), and say how it counts."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from lineage import faults
from lineage.masking import scrub_text
from tuner import _protocol as protocol
from tuner.campaign._state import TrialState
from tuner.records import placement_attr
from tuner.records import tags as T
from tuner.search import (
    ATTEMPT_ATTR,
    FAIL_ATTR,
    FAILED_ATTEMPT,
    IMPORTED_ATTR,
    PRUNE_ATTR,
    RETRY_OF_USER_ATTR,
    STALE_ATTR,
    chain_attrs,
    internals,
    parent_trial,
)

if TYPE_CHECKING:
    import optuna

    from tuner.campaign._failures import FailureBudget
    from tuner.campaign._launch import Launcher
    from tuner.campaign._run_end import RunEnds
    from tuner.campaign._running import RunningTrial
    from tuner.coordination import Coordination
    from tuner.executors import TrialOutcome
    from tuner.schedulers import Scheduler

__all__ = ["Bookkeeping", "best_of", "failed_in_a_row", "judge", "superseded", "tell"]


class Bookkeeping:
    """Settles the attempts that ended on ``study``: ``metric_names`` are the objectives,
    ``timeout`` is ``trial.timeout``; failed attempts count in ``failures``. ``count``
    receives the state each attempt counts as against the budget, ``stop`` the reason the
    campaign stops once an attempt spent the failure budget. Called from the controller's
    thread only."""

    def __init__(
        self,
        study: optuna.Study,
        *,
        metric_names: Sequence[str],
        timeout: float | None,
        failures: FailureBudget,
        coordination: Coordination,
        launcher: Launcher,
        scheduler: Scheduler | None,
        run_ends: RunEnds,
        message: Callable[[str], Any],
        count: Callable[[TrialState], None],
        stop: Callable[[str], None],
    ) -> None:
        self._study = study
        self._metric_names = metric_names
        self._timeout = timeout
        self._failures = failures
        self._coordination = coordination
        self._launcher = launcher
        self._scheduler = scheduler
        self._run_ends = run_ends
        self._message = message
        self._count = count
        self._stop = stop

    def settle(self, rt: RunningTrial, outcome: TrialOutcome) -> None:
        """Judge an ended attempt, tell the study, count it, and end its MLflow run. It does
        not count when another controller re-queued it meanwhile (the copy counts), when it
        is retried, or when a scheduler made another trial count for it."""
        state, values, reason = judge(
            rt, outcome, metric_names=self._metric_names, timeout=self._timeout
        )
        if reason:
            reason = scrub_text(reason, rt.secrets)
        faults.point("ended-not-told")
        taken = superseded(self._study, rt)
        if taken is not None:
            self._coordination.trial_ended(internals.trial_id(rt.trial))
            self._run_ends.superseded(rt, outcome, state, values, taken)
            return
        rt.state = rt.state.to(state)
        internals.storage_of(self._study).set_trial_user_attr(
            internals.trial_id(rt.trial),
            T.PLACEMENT_ATTR,
            placement_attr(rt.device, getattr(rt.handle, "started_at", None), outcome),
        )
        # A failed attempt counts against budget.max_failures; a retry keeps its reports.
        retry = state is TrialState.FAIL and self._failures.count(
            rt, outcome, reason, tries=failed_in_a_row(self._study, rt.trial) + 1
        )
        if retry:
            self._launcher.remember(rt.number, rt.history)
        # Out of memory beside other trials is the packing's fault: not on record as a
        # failed attempt, so a resumed controller neither counts it nor takes a retry for it.
        failed = not outcome.packed_oom
        if retry:
            # Under the study's lock: between the attempt turning stale (no longer counted)
            # and its copy being enqueued, another worker would see room for one more trial.
            with self._coordination.study_lock():
                retry_number = tell(
                    self._study, rt, state, values, reason, retry=True, failed=failed
                )
        else:
            retry_number = tell(self._study, rt, state, values, reason, retry=False)
        self._coordination.trial_ended(internals.trial_id(rt.trial))
        if retry_number is None:
            self._launcher.chain_ended(rt)
        if state is TrialState.FAIL:
            self._message(
                f"trial {rt.number} failed (attempt {rt.attempt}): {reason}"
                + (f"; retried as trial {retry_number}" if retry_number is not None else "")
            )
            if self._failures.spent():
                self._stop(self._failures.stop_reason())
        if (state is not TrialState.FAIL or retry_number is None) and rt.counted:
            self._count(state)
        if self._scheduler is not None:
            self._scheduler.changed()
        self._run_ends.told(rt, outcome, state, values, reason=reason, retried_as=retry_number)


def failed_in_a_row(study: optuna.Study, trial: optuna.Trial) -> int:
    """How many failed attempts ``trial`` retries in a row: its parent, if it failed, and
    that one's parent, and so on. An interrupted attempt re-run after its controller died is
    passed over (it did not fail); a trial a scheduler paused or replaced ends the row."""
    trials = study.get_trials(deepcopy=False)
    count, parent = 0, parent_trial(trial)
    while parent is not None:
        t = trials[parent]
        if t.system_attrs.get(FAILED_ATTEMPT):
            count += 1
        elif t.state.name != "FAIL" or STALE_ATTR not in t.system_attrs:
            break
        parent = parent_trial(t)
    return count


def superseded(study: optuna.Study, rt: RunningTrial) -> str | None:
    """Why the study already holds ``rt``'s trial as ended by someone else, else ``None``.

    Another controller re-queues a trial whose heartbeats stopped for the grace period (this
    controller was cut off from the database, or too slow to beat); its copy counts, and this
    attempt's result must not be told (Optuna refuses to tell a finished trial)."""
    frozen = internals.storage_of(study).get_trial(internals.trial_id(rt.trial))
    if not frozen.state.is_finished() or STALE_ATTR not in frozen.system_attrs:
        return None
    return str(frozen.system_attrs[STALE_ATTR])


def judge(
    rt: RunningTrial,
    outcome: TrialOutcome,
    *,
    metric_names: Sequence[str],
    timeout: float | None,
) -> tuple[TrialState, list[float] | None, str | None]:
    """The final state of an attempt, its objective values (one per name of
    ``metric_names``, the campaign's objectives), and the reason (fail/prune). ``timeout``:
    ``trial.timeout``, for the reason of an attempt the executor timed out."""
    if rt.prune_reason is not None:
        return TrialState.PRUNED, None, rt.prune_reason
    if outcome.launch_error:
        return TrialState.FAIL, None, outcome.launch_error
    if outcome.timed_out:
        return (
            TrialState.FAIL,
            None,
            f"timeout: ran longer than trial.timeout={timeout or 0:g}s",
        )
    if outcome.stopped:
        return TrialState.FAIL, None, "stopped by the controller"
    if outcome.signal is not None:
        # The executor may say why (e.g. ray: the node or worker running it was lost).
        last = _last_line(outcome.stderr_tail)
        return (
            TrialState.FAIL,
            None,
            f"killed by signal {outcome.signal_name}" + (f": {last}" if last else ""),
        )
    if outcome.exit_code != 0:
        last = _last_line(outcome.stderr_tail) or _last_line(outcome.stdout_tail)
        packed = " (out of device memory beside other trials: retried alone)"
        return (
            TrialState.FAIL,
            None,
            f"exit code {outcome.exit_code}"
            + (packed if outcome.packed_oom else "")
            + (f": {last}" if last else ""),
        )
    missing = [m for m in metric_names if m not in rt.latest]
    if missing:
        for collector in rt.collectors:
            for key, value in collector.final(rt.handle, outcome).items():
                rt.latest.setdefault(key, value)
            if all(m in rt.latest for m in metric_names):
                break
    values: list[float] = []
    for metric in metric_names:
        if metric not in rt.latest:
            return (
                TrialState.FAIL,
                None,
                f"target metric {metric!r} was never reported (tuner.trial.report, "
                f"mlflow.log_metric into {protocol.RUN_ID}, or a metrics: pattern)",
            )
        value = rt.latest[metric]
        if not math.isfinite(value):
            return TrialState.FAIL, None, f"target metric {metric!r} is {value}"
        values.append(value)
    return TrialState.COMPLETE, values, None


def tell(
    study: optuna.Study,
    rt: RunningTrial,
    state: TrialState,
    values: list[float] | None,
    reason: str | None,
    *,
    retry: bool,
    failed: bool = True,
) -> int | None:
    """Tell Optuna how the attempt ended, with the reason as a trial attribute. A failure
    with ``retry`` is superseded by a copy with the same parameters; returns its number. A
    failure is marked as a failed attempt (`FAILED_ATTEMPT`: it counts against
    ``budget.max_failures`` and uses up a retry) unless ``failed`` is false."""
    import optuna

    storage, trial_id = internals.storage_of(study), internals.trial_id(rt.trial)
    if state is TrialState.COMPLETE:
        assert values is not None
        study.tell(rt.trial, values if len(study.directions) > 1 else values[0])
        return None
    if state is TrialState.PRUNED:
        storage.set_trial_user_attr(trial_id, PRUNE_ATTR, reason)
        for key, value in rt.end_attrs.items():
            storage.set_trial_user_attr(trial_id, key, value)
        study.tell(rt.trial, state=optuna.trial.TrialState.PRUNED)
        return None
    retry_number = None
    if retry:
        # The retry is queued before the attempt is marked, as `supersede` does: a process
        # that dies between the two leaves the attempt RUNNING beside its retry, and the next
        # controller finds the retry (``tuner.retry_of``) and only marks the attempt; marked
        # first, the attempt would stop counting with no retry queued and its work be lost.
        study.enqueue_trial(
            rt.params,
            user_attrs={
                ATTEMPT_ATTR: rt.attempt + 1,
                RETRY_OF_USER_ATTR: rt.number,
                **chain_attrs(rt.trial.user_attrs, rt.number),
            },
            skip_if_exists=False,
        )
        retry_number = internals.n_trials(study) - 1
        faults.point("retry-queued-not-marked")
    storage.set_trial_user_attr(trial_id, FAIL_ATTR, reason)
    if failed:
        storage.set_trial_system_attr(trial_id, FAILED_ATTEMPT, True)
    if retry:
        storage.set_trial_system_attr(trial_id, STALE_ATTR, f"failed attempt {rt.attempt}, retried")
    study.tell(rt.trial, state=optuna.trial.TrialState.FAIL)
    return retry_number


def best_of(study: optuna.Study) -> dict[str, Any] | None:
    """``{"number", "value", "params"}`` of the best trial (single objective), or for a
    multi-objective study the Pareto front as ``{"trials": [...]}``; None before any.
    The campaign's own trials only: earlier runs imported by ``warm_start:`` are not its
    results."""
    import optuna

    from tuner.search import best_numbers

    done = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    own = {t.number: t for t in done if IMPORTED_ATTR not in t.system_attrs}
    maximize = [d.name == "MAXIMIZE" for d in study.directions]
    front = [own[n] for n in best_numbers(((n, t.values) for n, t in own.items()), maximize)]
    if not front:
        return None
    if len(study.directions) > 1:
        return {
            "trials": [{"number": t.number, "values": t.values, "params": t.params} for t in front]
        }
    (trial,) = front
    return {"number": trial.number, "value": trial.value, "params": trial.params}


def _last_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()[:300]
    return ""
