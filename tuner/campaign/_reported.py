"""What a chain of attempts reported, rebuilt for the attempt that continues it.

A continuation (a retry, a resumed orphan, a promoted or exploited trial) takes over its
parent's reports up to the step it resumes from. Those reports are found, in this order:
what this controller kept when the parent's attempt ended, the parent attempt's channel
file on this host, the parent's MLflow run; then, through the parent's own parent, down
to the first attempt of the lineage.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuner import _protocol as protocol
from tuner.executors import attempt_folder
from tuner.search import ATTEMPT_ATTR, LAUNCH_ATTR, RESUMED_STEP_ATTR, parent_trial

if TYPE_CHECKING:
    import optuna

__all__ = ["History", "ReportedHistory"]

#: Metric name -> (steps, values), in the order they were reported.
History = dict[str, tuple[list[int], list[float]]]


class ReportedHistory:
    """The reports of a study's trials, read back for continuations.

    ``trials_dir``: the folder of attempt channels; ``tracking_uri``: the lineage store of
    the trials' runs; ``target``: the target metric, whose first step tells where an attempt
    resumed when its controller died before recording it. Called from the controller's
    thread only."""

    def __init__(
        self,
        study: optuna.Study,
        *,
        trials_dir: Path,
        tracking_uri: str,
        target: str,
        message: Callable[[str], Any],
    ) -> None:
        self._study = study
        self._trials_dir = trials_dir
        self._tracking_uri = tracking_uri
        self._target = target
        self._message = message
        #: What ended attempts reported (a retry started by this controller: its parent's
        #: run may still be in the recorder's queue).
        self._kept: dict[int, History] = {}

    def remember(self, number: int, history: History) -> None:
        """Keep what trial ``number``'s attempt reported, for a retry that resumes it."""
        self._kept[number] = history

    def of(self, number: int, depth: int = 0) -> History:
        """What trial ``number`` reported, completed with what the trials it continues
        reported up to the step it resumed from (its own attempt's channel holds only the
        steps after it)."""
        own = (
            self._kept.pop(number, None)
            or self._channel_history(number)
            or self._recorded_history(number)
        )
        frozen = self._study.get_trials(deepcopy=False)[number]
        parent, resumed = parent_trial(frozen), frozen.user_attrs.get(RESUMED_STEP_ATTR)
        target = own.get(self._target, ([], []))[0]
        if resumed is None and parent is not None and target:
            # Its controller died before recording the step it resumed from: the attempt
            # reported from the step after it.
            resumed = min(target) - 1
        if parent is None or resumed is None or depth > 100:
            return own
        merged: History = {}
        for key, (steps, values) in self.of(parent, depth + 1).items():
            kept = [(s, v) for s, v in zip(steps, values, strict=True) if s <= int(resumed)]
            merged[key] = ([s for s, _ in kept], [v for _, v in kept])
        for key, (steps, values) in own.items():
            have = set(merged.get(key, ([], []))[0])
            old_steps, old_values = merged.setdefault(key, ([], []))
            for s, v in zip(steps, values, strict=True):
                if s > int(resumed) or s not in have:
                    old_steps.append(s)
                    old_values.append(v)
        return merged

    def _channel_history(self, number: int) -> History:
        """What trial ``number``'s attempt reported, read back from its channel file where
        this host has it (a local attempt whose controller died before reading it all)."""
        frozen = self._study.get_trials(deepcopy=False)[number]
        attempt = int(frozen.user_attrs.get(ATTEMPT_ATTR, 1))
        folder = attempt_folder(self._trials_dir, number, attempt)
        try:
            data = (folder / protocol.CHANNEL_FILE).read_bytes()
        except OSError:
            return {}
        history: History = {}
        for report in protocol.ChannelReader().feed(data):
            for key, value in report.metrics.items():
                steps, values = history.setdefault(key, ([], []))
                if report.step in steps:  # reported twice: the last one counts
                    values[steps.index(report.step)] = value
                else:
                    steps.append(report.step)
                    values.append(value)
        return history

    def _recorded_history(self, number: int) -> History:
        """Trial ``number``'s metric history as its MLflow run holds it (a continuation of a
        trial another controller ran); empty when the run cannot be read."""
        frozen = self._study.get_trials(deepcopy=False)[number]
        run_id = (frozen.user_attrs.get(LAUNCH_ATTR) or {}).get("run_id")
        if not run_id:
            return {}
        try:
            from mlflow.tracking import MlflowClient

            client = MlflowClient(tracking_uri=self._tracking_uri)
            history: History = {}
            for key in client.get_run(run_id).data.metrics:
                got = sorted(client.get_metric_history(run_id, key), key=lambda m: m.step)
                history[key] = ([m.step for m in got], [m.value for m in got])
            return history
        except Exception as exc:  # the copy in the study is what matters; say what is missing
            self._message(f"trial {number}: its MLflow run could not be read ({exc})")
            return {}
