"""``loss_runaway``: a loss that became NaN, +/-Inf, or orders of magnitude above its start."""

from __future__ import annotations

import numpy as np

from lineage.diagnose import _names
from lineage.diagnose._base import Check, Finding, RunData, Series, fmt


class LossRunaway(Check):
    """Every loss-like metric (components included) is checked; the first bad point wins.
    One finding per run: the training loss's when it ran away, other metrics under ``also``.

    Non-finite values always count. A finite value counts when its magnitude reaches
    ``runaway_factor`` times the initial level (median of the first window, floored at
    ``runaway_floor``); the first window itself is never judged, a loss may start high.
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

    def check_series(self, series: Series) -> Finding | None:
        t = self.thresholds
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
        w = series.window_size(t)
        if len(series) <= w:
            return None
        reference = max(abs(series.initial_level(t)), t.runaway_floor)
        huge = np.abs(values[w:]) >= t.runaway_factor * reference
        if not huge.any():
            return None
        i = w + int(np.argmax(huge))
        value = float(values[i])
        return self.finding(
            "error",
            f"{series.name} reached {fmt(value)} at step {series.step_at(i)}, "
            f"{fmt(abs(value) / reference)}x its initial level {fmt(reference)}",
            metric=series.name,
            step=series.step_at(i),
            value=value,
            window=[series.step_at(0), series.step_at(i)],
            initial_level=reference,
            factor=abs(value) / reference,
        )
