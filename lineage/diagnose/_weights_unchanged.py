"""``weights_unchanged``: the recorded weights did not move during training.

Reads the metrics ``weight_delta`` (norm of the change of the trainable weights since the
previous record; also ``weight_update_norm``, ``update_norm``, ``param_delta``) and
``weight_norm`` (global L2 norm of the trainable weights; also ``param_norm``).
"""

from __future__ import annotations

import numpy as np

from lineage.diagnose import _names
from lineage.diagnose._base import Check, Finding, RunData, fmt


class WeightsUnchanged(Check):
    """Every ``weight_delta`` after the first record is at most ``weights_unchanged_rel``
    times the weight norm (1 when no norm was recorded); without deltas, a ``weight_norm``
    recorded at 3 or more steps varies by at most that share of its level."""

    id = "weights_unchanged"
    causes = (
        "The optimizer does not update these weights: it was built on the wrong parameter "
        "list, or every weight is frozen (requires_grad=False).",
        "The learning rate is zero or so small that updates vanish in float32 rounding.",
        "Gradients are zero: the loss does not depend on the weights (a detached tensor, a "
        "stop-gradient, a constant output), or every overflow step was skipped by loss "
        "scaling.",
    )
    next_steps = (
        "Check that the optimizer receives net.trainable_params() and that the train step "
        "applies its updates.",
        "Check the learning rate and its schedule at the first steps.",
        "Record the gradient norm (metric grad_norm) to see whether gradients reach the "
        "weights; check for overflow-skipped steps with mixed precision.",
    )

    def run(self, data: RunData) -> list[Finding]:
        t = self.thresholds
        norms = [s.finite() for s in data.matching(_names.is_weight_norm)]
        norms = [s for s in norms if len(s)]
        scale = float(np.median(np.abs(norms[0].values))) if norms else 1.0
        scale = max(scale, 1e-12)
        for series in data.matching(_names.is_weight_delta):
            s = series.finite()
            if len(s) < 2:
                continue
            moves = np.abs(s.values[1:] if len(s) >= 3 else s.values)
            largest = float(np.max(moves))
            if largest <= t.weights_unchanged_rel * scale:
                return [
                    self.finding(
                        "error",
                        f"{s.name} stayed at most {fmt(largest)} over steps "
                        f"{s.step_at(0)}-{s.step_at(len(s) - 1)} (weight norm {fmt(scale)})",
                        metric=s.name,
                        step=s.step_at(len(s) - 1),
                        value=largest,
                        window=s.span(),
                        weight_norm=scale if norms else None,
                    )
                ]
            return []
        for s in norms:
            if len(np.unique(s.steps)) < 3:
                continue
            spread = float(np.max(s.values) - np.min(s.values))
            level = max(float(np.median(np.abs(s.values))), 1e-12)
            if spread <= t.weights_unchanged_rel * level:
                return [
                    self.finding(
                        "error",
                        f"{s.name} stayed at {fmt(level)} (spread {fmt(spread)}) over steps "
                        f"{s.step_at(0)}-{s.step_at(len(s) - 1)}",
                        metric=s.name,
                        step=s.step_at(len(s) - 1),
                        value=float(s.values[-1]),
                        window=s.span(),
                        spread=spread,
                    )
                ]
        return []
