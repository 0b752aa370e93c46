"""``divergence``: the training loss climbed back well above the best level it reached."""

from __future__ import annotations

import numpy as np

from lineage.diagnose._base import Check, Finding, RunData, Series, fmt


class Divergence(Check):
    """Compares the final level of the training loss with the best smoothed level.

    The rise (final - best) must reach ``divergence_giveback`` of the improvement achieved
    (initial - best) and ``divergence_rel_best`` of the best level's magnitude, and the best
    must lie before the final window: a restart of the learning-rate schedule or a warmup
    bump gives back far less than half of what was learned.
    """

    id = "divergence"
    suppressed_by = ("loss_runaway",)
    causes = (
        "The learning rate is too large, or the schedule raises it too far (a warmup peak, a "
        "restart, a cyclic schedule).",
        "Momentum or Adam betas too high for this learning rate.",
        "Gradients explode late in training; mixed precision overflows without a proper "
        "loss scale.",
        "Bad samples later in the data (corrupt images, wrong labels, shuffling not applied).",
    )
    next_steps = (
        "Lower the learning rate or its peak; check the learning-rate schedule around the "
        "step where the loss turned.",
        "Clip gradients and check the loss-scale settings.",
        "Check the data seen around the turning step for corrupt inputs or labels.",
        "Keep the checkpoint from the best step and resume from it with a smaller learning rate.",
    )

    def run(self, data: RunData) -> list[Finding]:
        series = data.primary("loss", "train")
        if series is None:
            return []
        finding = self.check_series(series)
        return [finding] if finding is not None else []

    def check_series(self, series: Series) -> Finding | None:
        t = self.thresholds
        s = series.finite()
        if len(s) < t.min_points_trend:
            return None
        w = s.window_size(t)
        smooth = s.smoothed(t)
        ibest = int(np.argmin(smooth))
        if ibest >= len(s) - w:
            return None
        best = float(smooth[ibest])
        initial = s.initial_level(t)
        final = s.final_level(t)
        rise = final - best
        need = max(
            t.divergence_giveback * max(initial - best, 0.0),
            t.divergence_rel_best * abs(best),
        )
        if rise <= 0 or rise < need:
            return None
        return self.finding(
            "error",
            f"{s.name} rose from its best {fmt(best)} (step {s.step_at(ibest)}) to "
            f"{fmt(final)} at the end (initial level {fmt(initial)})",
            metric=s.name,
            step=s.step_at(len(s) - 1),
            value=final,
            window=[s.step_at(ibest), s.step_at(len(s) - 1)],
            best=best,
            best_step=s.step_at(ibest),
            initial_level=initial,
        )
