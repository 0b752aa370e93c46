"""``gradient_vanishing``: the recorded gradient norm collapsed to about zero.

Reads the metric ``grad_norm`` (global L2 norm of the gradients of the trainable weights,
before clipping; also ``gradient_norm``, ``global_grad_norm``).
"""

from __future__ import annotations

from lineage.diagnose import _names
from lineage.diagnose._base import Check, Finding, RunData, fmt


class GradientVanishing(Check):
    """The final gradient-norm level is at most ``grad_vanish_abs``; or at most
    ``grad_vanish_rel`` of its initial level while the training loss kept more than
    ``grad_vanish_loss_kept`` of its initial level (a converged model also has small
    gradients, but a low loss)."""

    id = "gradient_vanishing"
    suppressed_by = ("loss_runaway", "zero_train_loss")
    causes = (
        "Saturating activations (sigmoid, tanh) or a deep network without residual "
        "connections or normalization.",
        "A weight initialization that is too small.",
        "A learning rate that is too small for the scale of the gradients, or a float16 "
        "underflow without loss scaling.",
    )
    next_steps = (
        "Check the model structure: use ReLU-like activations, residual connections, "
        "BatchNorm/LayerNorm.",
        "Use a scaled initialization (He/Kaiming for ReLU, Xavier/Glorot for tanh).",
        "With mixed precision, use a loss scale; check the learning rate.",
    )

    def run(self, data: RunData) -> list[Finding]:
        t = self.thresholds
        for series in data.matching(_names.is_grad_norm):
            s = series.finite()
            if len(s) < t.window_min_points:
                continue
            final, initial = s.final_level(t), s.initial_level(t)
            vanished = final <= t.grad_vanish_abs
            if not vanished and initial > 0 and final <= t.grad_vanish_rel * initial:
                loss = data.primary("loss", "train")
                lf = loss.finite() if loss is not None else None
                if lf is not None and len(lf) >= t.window_min_points:
                    start = max(float(lf.values[0]), lf.initial_level(t))
                    kept = lf.final_level(t) / start if start > 0 else 0.0
                    vanished = kept > t.grad_vanish_loss_kept
            if vanished:
                return [
                    self.finding(
                        "warning",
                        f"{s.name} fell from {fmt(initial)} to {fmt(final)}",
                        metric=s.name,
                        step=s.step_at(len(s) - 1),
                        value=final,
                        window=s.span(),
                        initial_level=initial,
                    )
                ]
        return []
