"""``oscillation``: the training loss swings widely without making progress."""

from __future__ import annotations

import numpy as np

from lineage.diagnose._base import Check, Finding, RunData, fmt


class Oscillation(Check):
    """Judged on the second half of the training loss. The spread (inter-quartile range) must
    be large against both the improvement achieved so far and the level itself, the curve must
    flip direction often, and the fourth quarter must not sit clearly below the third (a
    noisy loss that is still going down is healthy)."""

    id = "oscillation"
    suppressed_by = ("loss_runaway", "divergence")
    causes = (
        "The learning rate is too large: updates jump across the minimum instead of "
        "descending into it.",
        "The batch size is too small for this learning rate, so gradients are very noisy.",
        "Momentum too high, or the data is not shuffled (batches ordered by class).",
    )
    next_steps = (
        "Check the hyperparameters: lower the learning rate or add a decaying schedule.",
        "Increase the batch size, or lower the learning rate in proportion.",
        "Check that the training data is shuffled.",
    )

    def run(self, data: RunData) -> list[Finding]:
        t = self.thresholds
        series = data.primary("loss", "train")
        if series is None:
            return []
        s = series.finite()
        n = len(s)
        if n < t.min_points_oscillation:
            return []
        half = s.values[n // 2 :]
        level = float(np.median(half))
        q25, q75 = np.percentile(half, [25, 75])
        iqr = float(q75 - q25)
        initial = max(float(s.values[0]), s.initial_level(t))
        improvement = max(initial - level, 0.0)
        if iqr < t.oscillation_iqr_vs_improvement * improvement:
            return []
        if iqr < t.oscillation_iqr_vs_level * abs(level) or iqr == 0:
            return []
        diffs = np.diff(half)
        diffs = diffs[diffs != 0]
        if diffs.size < 2:
            return []
        flips = float(np.mean(np.sign(diffs[1:]) != np.sign(diffs[:-1])))
        if flips < t.oscillation_min_sign_changes:
            return []
        quarter = len(half) // 2
        third, fourth = np.median(half[:quarter]), np.median(half[quarter:])
        if third - fourth > iqr / 2:
            return []
        start = n // 2
        return [
            self.finding(
                "warning",
                f"{s.name} swings over {fmt(float(q25))}-{fmt(float(q75))} (median "
                f"{fmt(level)}) in the second half, against an improvement of "
                f"{fmt(improvement)} from {fmt(initial)}",
                metric=s.name,
                step=s.step_at(n - 1),
                value=level,
                window=[s.step_at(start), s.step_at(n - 1)],
                iqr=iqr,
                improvement=improvement,
                direction_changes=flips,
            )
        ]
