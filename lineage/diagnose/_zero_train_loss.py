"""``zero_train_loss``: the training loss reached (or sat at) zero."""

from __future__ import annotations

import numpy as np

from lineage.diagnose._base import Check, Finding, RunData, fmt


class ZeroTrainLoss(Check):
    """The final level of the training loss is at most ``zero_loss_eps`` in magnitude."""

    id = "zero_train_loss"
    suppressed_by = ("loss_runaway",)
    causes = (
        "The labels leak into the inputs (a label column left among the features, a target "
        "computed from the input).",
        "The loss is computed on the wrong tensors or is masked out entirely (for example "
        "the label compared with itself, or an empty mask).",
        "All samples carry the same label, or the training set is so small the model memorised it.",
    )
    next_steps = (
        "Check the data: print a few batches with their labels; verify that inputs do not "
        "contain the label.",
        "Check the loss function: its inputs should be the network's outputs and the labels.",
        "Check the size and label distribution of the training set; compare with the "
        "validation loss (overfitting).",
    )

    def run(self, data: RunData) -> list[Finding]:
        t = self.thresholds
        series = data.primary("loss", "train")
        if series is None:
            return []
        s = series.finite()
        if len(s) < t.window_min_points:
            return []
        final = s.final_level(t)
        if abs(final) > t.zero_loss_eps:
            return []
        reached = int(np.argmax(np.abs(s.values) <= t.zero_loss_eps))
        initial = s.initial_level(t)
        how = "sat at" if abs(initial) <= t.zero_loss_eps else "fell to"
        return [
            self.finding(
                "warning",
                f"{s.name} {how} {fmt(final)} (zero) from step {s.step_at(reached)}",
                metric=s.name,
                step=s.step_at(reached),
                value=final,
                window=[s.step_at(reached), s.step_at(len(s) - 1)],
                initial_level=initial,
            )
        ]
