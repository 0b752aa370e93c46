"""``distribution_shift``: the test results fall well short of the validation results."""

from __future__ import annotations

import numpy as np

from lineage.diagnose._base import Check, Finding, RunData, Series, fmt
from lineage.diagnose._overfitting import accuracy_scale


def _last(series: Series) -> tuple[float, int]:
    s = series.finite()
    tail = s.values[-3:]
    return float(np.median(tail)), s.step_at(len(s) - 1)


class DistributionShift(Check):
    """Validation accuracy above test accuracy by ``shift_acc_gap``; without accuracies, the
    test loss ``shift_loss_ratio`` times the validation loss."""

    id = "distribution_shift"
    causes = (
        "The test data comes from a different distribution than the training and validation "
        "data (other source, time period, device, preprocessing).",
        "Preprocessing differs between validation and test (normalization, resizing, "
        "tokenization).",
        "Hyperparameters were tuned on the validation set until it stopped being representative.",
    )
    next_steps = (
        "Check the data: compare statistics (label distribution, input mean/std) of the "
        "validation and test sets.",
        "Check that the test pipeline applies exactly the validation preprocessing.",
        "Re-split the data so that validation reflects the test distribution, or collect "
        "training data closer to it.",
    )

    def run(self, data: RunData) -> list[Finding]:
        t = self.thresholds
        val_acc, test_acc = data.primary("accuracy", "val"), data.primary("accuracy", "test")
        if val_acc is not None and test_acc is not None:
            if not (len(val_acc.finite()) and len(test_acc.finite())):
                return []
            va, _ = _last(val_acc)
            te, step = _last(test_acc)
            va, te = va / accuracy_scale(val_acc), te / accuracy_scale(test_acc)
            if va - te < t.shift_acc_gap:
                return []
            return [
                self.finding(
                    "warning",
                    f"{test_acc.name} {fmt(te)} is {fmt(va - te)} below {val_acc.name} {fmt(va)}",
                    metric=test_acc.name,
                    step=step,
                    value=te,
                    window=test_acc.span(),
                    validation_value=va,
                )
            ]
        val_loss, test_loss = data.primary("loss", "val"), data.primary("loss", "test")
        if val_loss is None or test_loss is None:
            return []
        if not (len(val_loss.finite()) and len(test_loss.finite())):
            return []
        va, _ = _last(val_loss)
        te, step = _last(test_loss)
        if va <= 0 or te < t.shift_loss_ratio * va:
            return []
        return [
            self.finding(
                "warning",
                f"{test_loss.name} {fmt(te)} is {fmt(te / va)}x {val_loss.name} {fmt(va)}",
                metric=test_loss.name,
                step=step,
                value=te,
                window=test_loss.span(),
                validation_value=va,
            )
        ]
