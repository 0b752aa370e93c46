"""``loss_runaway``: a loss that became NaN or +/-Inf, or got worse without bound."""

from __future__ import annotations

import numpy as np

from lineage.diagnose import _names
from lineage.diagnose._base import Check, Finding, RunData, Series, fmt
from lineage.diagnose._goal import Goal, oriented


class LossRunaway(Check):
    """Every loss-like metric (components included) is checked; the first bad point wins.
    One finding per run: the training loss's when it ran away, other metrics under ``also``.

    Non-finite values always count. A finite curve counts when its level (the median of the
    window ending at a point: one spike cannot raise a finding) has moved away from the best level
    reached so far, *in the direction the goal calls worse*, by ``runaway_factor`` times the
    curve's own scale: the largest of the magnitudes of its initial and best levels, the
    improvement achieved, and the spread of its first window (floored at ``runaway_floor``).
    A curve that keeps improving is never judged, whatever its sign or magnitude: a loss
    crossing zero or starting at zero and falling below it has its best level at the end. The
    first window itself is never judged: a loss may start high.
    """

    id = "loss_runaway"
    causes = (
        "The learning rate is too large: updates overshoot and the loss grows without bound.",
        "Gradients explode: no gradient clipping, or a deep network without normalization.",
        "A numerically unstable operation: log or division of zero, exp of a large value, "
        "float16 overflow without loss scaling.",
        "Bad data: NaN or Inf in the inputs or labels, or labels outside the number of classes.",
        "An unreasonable weight initialization or loss scale.",
    )
    next_steps = (
        "Check the hyperparameters first: lower the learning rate (try 10x smaller) or add a "
        "warmup.",
        "Clip gradients (e.g. by global norm) and check the loss-scale settings of mixed "
        "precision.",
        "Check the data: look for NaN/Inf in inputs and labels and verify the label range.",
        "Check the model structure: give log, sqrt and divisions an epsilon; add normalization.",
        "Find the first step with a non-finite value and dump the tensors around it "
        "(MindSpore: the dump feature or the debugger).",
    )

    def run(self, data: RunData) -> list[Finding]:
        primary = data.primary("loss", "train")
        ordered = data.matching(_names.is_loss_like)
        if primary is not None:  # report the training loss first, the others as "also"
            ordered.sort(key=lambda s: s.name != primary.name)
        found = [f for f in map(self.check_series, ordered) if f is not None]
        if not found:
            return []
        first, rest = found[0], found[1:]
        if rest:
            first.evidence["also"] = [f.evidence["metric"] for f in rest]
        return [first]

    def check_series(self, series: Series, goal: Goal = "minimize") -> Finding | None:
        """The finding for one metric whose goal is ``goal``, or None."""
        values = series.values
        bad = ~np.isfinite(values)
        if bad.any():
            i = int(np.argmax(bad))
            start = series.step_at(i - 1) if i > 0 else series.step_at(i)
            value = float(values[i])
            return self.finding(
                "error",
                f"{series.name} became {value} at step {series.step_at(i)}",
                metric=series.name,
                step=series.step_at(i),
                value=str(value),
                window=[start, series.step_at(i)],
                last_finite=float(values[i - 1]) if i > 0 else None,
            )
        return self._worse_without_bound(series, goal)

    def _worse_without_bound(self, series: Series, goal: Goal) -> Finding | None:
        t = self.thresholds
        w = series.window_size(t)
        if len(series) <= w:
            return None
        level = oriented(series.trailing(t), goal)  # lower is better from here on
        best = np.minimum.accumulate(level)
        first = oriented(series.values[:w], goal)
        initial = float(level[0])  # the first window's median
        fixed = max(abs(initial), float(first.max() - first.min()), t.runaway_floor)
        scale = np.maximum(np.maximum(np.abs(best), initial - best), fixed)
        rise = level - best
        worse = rise[1:] >= t.runaway_factor * scale[1:]  # the first window is not judged
        if not worse.any():
            return None
        j = 1 + int(np.argmax(worse))
        i = j + w - 1  # the last point of the window whose level ran away
        sign = 1.0 if goal == "minimize" else -1.0
        value, best_j, scale_j = sign * float(level[j]), sign * float(best[j]), float(scale[j])
        factor = float(rise[j]) / scale_j
        moved = "rose" if goal == "minimize" else "fell"
        return self.finding(
            "error",
            f"{series.name} {moved} to {fmt(value)} at step {series.step_at(i)}, "
            f"{fmt(factor)}x its scale {fmt(scale_j)} away from its best level {fmt(best_j)}",
            metric=series.name,
            step=series.step_at(i),
            value=value,
            window=[series.step_at(0), series.step_at(i)],
            goal=goal,
            best=best_j,
            initial_level=sign * initial,
            scale=scale_j,
            factor=factor,
        )
