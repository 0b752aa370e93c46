"""``divergence``: the training loss climbed back well above the best level it reached."""

from __future__ import annotations

import numpy as np

from lineage.diagnose._base import Check, Finding, RunData, Series, fmt
from lineage.diagnose._goal import Goal, oriented


class Divergence(Check):
    """Compares the final level of the training loss with the best smoothed level.

    Levels are read in the goal's direction (``check_series`` takes it; the training loss is
    minimized). The move away from the best (final - best, in the worse direction) must
    reach ``divergence_giveback`` of the improvement achieved (initial - best) and
    ``divergence_rel_best`` of the best level's magnitude; the larger of these two must itself
    stand ``divergence_noise`` times above the curve's noise (a robust deviation read from its
    second differences); and the best must lie before the final window. A restart of
    the learning-rate schedule or a warmup bump gives back far less than half of what was
    learned, and a noisy curve hovering near zero has learned nothing its noise could not
    give back.
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

    def check_series(self, series: Series, goal: Goal = "minimize") -> Finding | None:
        """The finding for one metric whose goal is ``goal``, or None."""
        t = self.thresholds
        s = series.finite()
        if len(s) < t.min_points_trend:
            return None
        w = s.window_size(t)
        smoothed = s.smoothed(t)
        smooth = oriented(smoothed, goal)  # lower is better from here on
        ibest = int(np.argmin(smooth))
        if ibest >= len(s) - w:
            return None
        values = oriented(s.values, goal)
        best = float(smooth[ibest])
        initial = float(np.median(values[:w]))
        final = float(np.median(values[-w:]))
        # second differences: a steady trend does not count as noise
        noise = 1.4826 * float(np.median(np.abs(np.diff(s.values, 2)))) / np.sqrt(6.0)
        rise = final - best
        need = max(
            t.divergence_giveback * max(initial - best, 0.0), t.divergence_rel_best * abs(best)
        )
        if rise <= 0 or rise < need or need < t.divergence_noise * noise:
            return None
        sign = 1.0 if goal == "minimize" else -1.0
        moved = "rose" if goal == "minimize" else "fell"
        return self.finding(
            "error",
            f"{s.name} {moved} from its best {fmt(sign * best)} (step {s.step_at(ibest)}) to "
            f"{fmt(sign * final)} at the end (initial level {fmt(sign * initial)})",
            metric=s.name,
            step=s.step_at(len(s) - 1),
            value=sign * final,
            window=[s.step_at(ibest), s.step_at(len(s) - 1)],
            goal=goal,
            best=sign * best,
            best_step=s.step_at(ibest),
            initial_level=sign * initial,
        )
