"""``gradient_exploding``: the recorded gradient norm became non-finite or grew by orders of
magnitude. Reads the same ``grad_norm`` metric as ``gradient_vanishing``."""

from __future__ import annotations

import numpy as np

from lineage.diagnose import _names
from lineage.diagnose._base import Check, Finding, RunData, fmt


class GradientExploding(Check):
    """A NaN/Inf gradient norm; a final level ``grad_explode_rel`` times the initial level;
    or one value ``grad_explode_spike`` times the initial level."""

    id = "gradient_exploding"
    causes = (
        "The learning rate is too large, so weights and then gradients grow step after step.",
        "No gradient clipping in a deep or recurrent network.",
        "An unreasonable weight initialization (too large), or float16 overflow without "
        "loss scaling.",
    )
    next_steps = (
        "Clip gradients by global norm (e.g. 1.0) and lower the learning rate.",
        "Check the initialization and add normalization layers.",
        "With mixed precision, use a dynamic loss scale.",
    )

    def run(self, data: RunData) -> list[Finding]:
        t = self.thresholds
        for series in data.matching(_names.is_grad_norm):
            bad = ~np.isfinite(series.values)
            if bad.any():
                i = int(np.argmax(bad))
                return [
                    self.finding(
                        "error",
                        f"{series.name} became {series.values[i]} at step {series.step_at(i)}",
                        metric=series.name,
                        step=series.step_at(i),
                        value=str(float(series.values[i])),
                        window=[series.step_at(max(i - 1, 0)), series.step_at(i)],
                    )
                ]
            s = series
            w = s.window_size(t)
            if len(s) <= w:
                continue
            initial = abs(s.initial_level(t))
            if initial <= 0:
                continue
            final = s.final_level(t)
            spikes = np.abs(s.values[w:]) >= t.grad_explode_spike * initial
            if final >= t.grad_explode_rel * initial or spikes.any():
                i = len(s) - 1 if not spikes.any() else w + int(np.argmax(spikes))
                value = final if not spikes.any() else float(s.values[i])
                return [
                    self.finding(
                        "error",
                        f"{s.name} grew from {fmt(initial)} to {fmt(value)} (step {s.step_at(i)})",
                        metric=s.name,
                        step=s.step_at(i),
                        value=value,
                        window=[s.step_at(0), s.step_at(i)],
                        initial_level=initial,
                    )
                ]
        return []
