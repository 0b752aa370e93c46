"""``too_few_epochs``: too few optimizer updates in the whole training for the data set."""

from __future__ import annotations

import math
from typing import Any

from lineage.diagnose._base import Check, Finding, RunData
from lineage.diagnose._progress import curve_progress, stopped_early
from lineage.diagnose._training_length import TrainingLength, read


class TooFewEpochs(Check):
    """Epochs x steps per epoch (or a recorded step budget such as ``max_steps``) below
    ``min_total_steps``. Steps per epoch are the recorded ``steps_per_epoch`` or the
    training-set size over the batch size, so a small data set needs more epochs than a
    large one. Epochs <= 0 are an error.

    Quiet when the run's target curves show that it converged anyway (judged as in
    ``undertrained``: the recent rate under ``undertrained_rate_ratio`` of the average):
    some tasks need few updates.
    """

    id = "too_few_epochs"
    # a loss that ran away or never moved has another cause than the number of epochs
    suppressed_by = ("loss_runaway", "divergence", "slow_convergence", "oscillation")
    causes = (
        "The training makes too few optimizer updates to converge: a small data set gives "
        "few steps per epoch, so it needs more epochs than a large one.",
    )
    next_steps = (
        "Raise epochs until the validation curve flattens, and keep the best checkpoint "
        "(early stopping) so extra epochs cannot hurt.",
        "Or lower the batch size: more updates per epoch from the same data.",
    )

    def run(self, data: RunData) -> list[Finding]:
        t = self.thresholds
        length = read(data)
        if length.epochs is not None and length.epochs.value <= 0:
            e = length.epochs
            return [
                self.finding(
                    "error",
                    f"{e.name} = {e.value:g} must be > 0: the model never trains",
                    param=e.name,
                    value=e.value,
                    allowed=[0, None],
                )
            ]
        budget = self._budget(length)
        if budget is None:
            return []
        total, name, value, detail = budget
        if total >= t.min_total_steps:
            return []
        if not stopped_early(data):
            judged = curve_progress(data, t)
            if judged and all(p.flattened(t) for p in judged):
                return []  # the curve flattened within the few steps there were
        steps = length.steps()
        extra: dict[str, Any] = {"total_steps": total}
        advice = list(self.next_steps)
        if steps is not None and steps[0] > 0 and name == getattr(length.epochs, "name", None):
            need = math.ceil(t.min_total_steps / steps[0])
            extra.update(steps_per_epoch=steps[0], suggested_epochs=need)
            advice[0] = (
                f"Raise {name} to at least {need} ({need * steps[0]} updates), and further "
                "until the validation curve flattens; keep the best checkpoint (early "
                "stopping) so extra epochs cannot hurt."
            )
        for attr in ("train_size", "batch_size"):
            p = getattr(length, attr)
            if p is not None:
                extra[attr] = p.value
        return [
            self.finding(
                "warning",
                f"{name} = {value:g} gives {total} optimizer updates in all{detail}, fewer "
                f"than {t.min_total_steps}",
                param=name,
                value=value,
                next_steps=advice,
                **extra,
            )
        ]

    @staticmethod
    def _budget(length: TrainingLength) -> tuple[int, str, float, str] | None:
        """(total steps, parameter that sets them, its value, how they were counted)."""
        if length.total_steps is not None:
            p = length.total_steps
            return math.ceil(p.value), p.name, p.value, ""
        steps = length.steps()
        if length.epochs is None or steps is None:
            return None
        per_epoch = steps[0]
        if per_epoch == 0:
            return None  # no step at all: near_full_batch's error says why
        samples, batch = length.samples(), length.batch()
        how = f": {samples} samples / batch {batch}" if samples and batch else ""
        e = length.epochs
        return (
            math.ceil(e.value * per_epoch),
            e.name,
            e.value,
            f" ({per_epoch} per epoch{how})",
        )
