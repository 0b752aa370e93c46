"""What a running trial reports: metrics in, Optuna's pruning and the online diagnosis out.

The controller calls :meth:`MetricIntake.collect` for every running trial on each turn of
its loop. New points of the target metric are reported to the trial (Optuna's pruner then
decides), every finite point is recorded in the trial's MLflow run, and the online
diagnosis (loss runaway, NaN/Inf) may stop a doomed trial early. With a ``scheduler:``, the
scheduler judges the new target values instead of Optuna's pruner (see `tuner.schedulers`).
Each of them returns a decision; the strongest of one turn's (`tuner.schedulers.strongest`)
takes effect through `Decisions`, the one place that changes an attempt's course.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from tuner._report import Report
from tuner.campaign._findings import DIAGNOSIS_STOP
from tuner.campaign._running import RunningTrial
from tuner.executors import TrialOutcome
from tuner.schedulers import KEEP, Decision, Stop, strongest

if TYPE_CHECKING:
    from tuner.campaign._decide import Decisions
    from tuner.records import LineageRecorder
    from tuner.schedulers import Scheduler

__all__ = ["MetricIntake", "load_online_check"]


class MetricIntake:
    """Takes the news of running trials for one campaign (see the module's text).

    ``prune_on``: the metric whose points are reported to the Optuna trial (the ``target`` of
    a single-objective campaign; None for several objectives, which Optuna does not prune).
    ``pruner``: the pruner's name (``pruner.name``), for the reason of a pruned trial.
    ``take_step``: asked before a new step of the target is reported, with ``budget.steps``
    (False: the budget is spent, the trial was stopped, the step is not counted)."""

    def __init__(
        self,
        recorder: LineageRecorder,
        online_check: Callable[..., Any] | None,
        *,
        decisions: Decisions,
        prune_on: str | None,
        pruner: str,
        scheduler: Scheduler | None = None,
        take_step: Callable[[RunningTrial], bool] | None = None,
    ) -> None:
        self._decisions = decisions
        self._take_step = take_step
        self._prune_on = prune_on
        self._pruner = pruner
        self._recorder = recorder
        self._online_check = online_check
        self._scheduler = scheduler

    def collect(self, rt: RunningTrial) -> TrialOutcome | None:
        """Take a trial's news (reports, pruning, diagnosis); its outcome once it ended."""
        reports: list[Report] = []
        for collector in rt.collectors:
            reports.extend(collector.collect(rt.handle))
        outcome = rt.handle.poll()
        if outcome is not None:
            # Lines written just before exit arrive with the outcome.
            for collector in rt.collectors:
                reports.extend(collector.collect(rt.handle))
        if reports:
            self._absorb(rt, reports)
        if outcome is None:
            self._decisions.tick(rt)
        return outcome

    def _absorb(self, rt: RunningTrial, reports: list[Report]) -> None:
        import optuna  # loaded by the controller already

        points: list[tuple[str, float, int, float]] = []
        target = self._prune_on
        new_target = False
        fresh_non_finite = False
        before = max(rt.reported_steps, default=-1)
        # The highest step whose target value came in this turn, finite or not: once the
        # decisions on it let the trial go on, it is told so (a NaN is judged too, by the
        # diagnosis, and must not hold a trial that waits at that step).
        judged: int | None = None
        for report in reports:
            ts = report.timestamp or time.time()
            for key, value in report.metrics.items():
                if _copied(rt, key, report.step):
                    continue
                rt.latest[key] = value
                if key == target:
                    judged = report.step if judged is None else max(judged, report.step)
                steps, values = rt.history.setdefault(key, ([], []))
                steps.append(report.step)
                values.append(value)
                if not math.isfinite(value):
                    fresh_non_finite = True
                elif not report.recorded:  # else the script's own run holds the point
                    points.append((key, value, report.step, ts))
                if (
                    key == target
                    and math.isfinite(value)
                    and report.step not in rt.reported_steps
                    and rt.decided is None
                    and not rt.superseded
                ):
                    if self._take_step is not None and not self._take_step(rt):
                        break  # budget.steps is spent: the trial was stopped
                    try:
                        rt.trial.report(value, report.step)
                    except optuna.exceptions.UpdateFinishedTrialError:
                        # Re-queued by another controller meanwhile: its copy runs there.
                        rt.superseded = True
                        rt.handle.terminate()
                        break
                    rt.reported_steps.add(report.step)
                    new_target = True
        if rt.run_id and points:
            self._recorder.trial_metrics(rt.run_id, points)
        if rt.decided is not None or rt.superseded:
            return
        by_scheduler: Decision = KEEP
        by_pruner: Decision = KEEP
        if new_target and self._scheduler is not None:
            by_scheduler = self._scheduler.reported(rt, before, max(rt.reported_steps))
        elif new_target and rt.trial.should_prune():
            assert target is not None  # only the `prune_on` metric is reported
            by_pruner = Stop(
                f"pruned by the {self._pruner} pruner at step {max(rt.reported_steps)} "
                f"({target}={_short(rt.latest.get(target))})"
            )
        by_diagnosis = self._diagnose(rt, fresh_non_finite)
        self._decisions.apply(
            rt,
            strongest(by_scheduler, by_pruner, by_diagnosis),
            judged=judged,
        )

    def _diagnose(self, rt: RunningTrial, fresh_non_finite: bool) -> Decision:
        now = time.monotonic()
        if self._online_check is None or not (fresh_non_finite or now - rt.last_check >= 1.0):
            return KEEP
        rt.last_check = now
        for key, (steps, values) in rt.history.items():
            finding = self._online_check(key, steps, values)
            if finding is not None:
                return Stop(f"{DIAGNOSIS_STOP}: {_finding_text(finding)}")
        return KEEP


def load_online_check(goals: Mapping[str, str] | None = None) -> Callable[..., Any]:
    """`lineage.diagnose.online_check`, told the goal of each objective's metric (``goals``:
    metric -> ``minimize``/``maximize``; other metrics go by their names), or the NaN/Inf
    check alone when it is missing."""
    try:
        from lineage.diagnose import online_check
    except ImportError:
        return _fallback_online_check
    known = dict(goals or {})

    def check(metric: str, steps: Any, values: Any) -> Any:
        return online_check(metric, steps, values, goal=known.get(metric))

    return check


class _FallbackFinding:
    def __init__(self, summary: str) -> None:
        self.summary = summary


def _fallback_online_check(metric: str, steps: Any, values: Any) -> Any:
    # Used only when lineage.diagnose is missing: the one check that needs no thresholds.
    for step, value in zip(steps, values, strict=False):
        if not math.isfinite(value):
            return _FallbackFinding(f"{metric} became {value} at step {step}")
    return None


def _finding_text(finding: Any) -> str:
    check = getattr(finding, "check", None)
    summary = getattr(finding, "summary", str(finding))
    return f"{check}: {summary}" if check else str(summary)


def _copied(rt: RunningTrial, key: str, step: int) -> bool:
    """Whether ``key`` at ``step`` is a report the continuation ``rt`` holds from its parent
    (at or before the checkpoint it resumed from): the copy stands."""
    if rt.resumed_step is None or step > rt.resumed_step:
        return False
    return step in rt.history.get(key, ((), ()))[0]


def _short(value: object) -> str:
    # 0.17777777777777778 as 0.1778: a prune line reads like the rest of the output.
    return f"{value:.4g}" if isinstance(value, float) else str(value)
