"""How the MLflow run of an ended trial attempt is closed: its state, how its process ended,
why it failed or was pruned, the trial it was retried as, its objective values and the tail
of its output (secrets scrubbed)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from lineage.masking import scrub_text
from tuner.campaign._closing import ended_at
from tuner.campaign._findings import DIAGNOSIS_STOP, error_line, tag_text
from tuner.campaign._launch_plan import HPARAM_PREFIX
from tuner.campaign._state import TrialState
from tuner.records import carry_history, output_tail, trial_end_tags
from tuner.records import tags as T

if TYPE_CHECKING:
    from tuner.campaign._findings import EndCheck
    from tuner.campaign._running import RunningTrial
    from tuner.executors import TrialOutcome
    from tuner.records import LineageRecorder

__all__ = ["RunEnds"]


class RunEnds:
    """Ends attempts' runs in ``recorder``; ``metric_names`` name the objective values,
    ``message`` takes the lines shown to the user, ``check`` (``diagnosis.checks``) diagnoses
    each attempt told to the study."""

    def __init__(
        self,
        recorder: LineageRecorder,
        *,
        metric_names: Sequence[str],
        message: Callable[[str], None],
        check: EndCheck | None = None,
    ) -> None:
        self._recorder = recorder
        self._metric_names = metric_names
        self._message = message
        self._check = check

    def told(
        self,
        rt: RunningTrial,
        outcome: TrialOutcome,
        state: TrialState,
        values: list[float] | None,
        *,
        reason: str | None,
        retried_as: int | None,
    ) -> None:
        """End the run of an attempt told to the study as ``state``."""
        if not rt.run_id:
            return
        tags = trial_end_tags(
            state.value,
            outcome,
            reason=reason,
            metric_names=self._metric_names,
            values=values,
            retried_as=retried_as,
        )
        if state is TrialState.PRUNED:  # a scheduler's mark (paused, exploited) shows there too
            tags.update({key: str(value) for key, value in rt.end_attrs.items()})
        if self._check is not None:
            findings = self._check(rt, state.mlflow_status)
            if findings:
                tags[T.DIAGNOSIS] = tag_text(findings)
                line = error_line(rt.number, findings)
                if line is not None and not (reason or "").startswith(DIAGNOSIS_STOP):
                    self._message(line)  # a trial diagnosis stopped already said why
        self._record(rt, outcome, state.mlflow_status, tags)

    def superseded(
        self,
        rt: RunningTrial,
        outcome: TrialOutcome,
        state: TrialState,
        values: list[float] | None,
        taken: str,
    ) -> None:
        """An attempt another controller re-queued while it ran: its result is not told (the
        copy counts); its run ends FAILED, saying so."""
        self._message(
            f"trial {rt.number}: ended {state.value} after another controller had re-queued "
            f"it ({taken}); its result is not told, the copy counts"
        )
        if not rt.run_id:
            return
        tags = trial_end_tags(
            "FAIL",
            outcome,
            reason=f"superseded while it ran: {taken}",
            metric_names=self._metric_names,
            values=values,
        )
        self._record(rt, outcome, "FAILED", tags)

    def _record(
        self, rt: RunningTrial, outcome: TrialOutcome, status: str, tags: dict[str, str]
    ) -> None:
        assert rt.run_id
        if rt.carry_from:
            run_id, ancestors = rt.run_id, rt.carry_from
            self._recorder.call(
                lambda client: carry_history(client, run_id, ancestors, skip_prefix=HPARAM_PREFIX)
            )
        self._recorder.trial_finished(
            rt.run_id,
            status=status,
            tags=tags,
            output_tail=scrub_text(output_tail(outcome), rt.secrets),
            ended_at=ended_at(rt, outcome),
        )
