"""``slow_convergence``: the training loss barely moved over the whole run."""

from __future__ import annotations

from lineage.diagnose._base import Check, Finding, RunData, fmt


class SlowConvergence(Check):
    """The final level of the training loss is within ``slow_min_improvement`` of where it
    started (the larger of the first point and the initial level, so a loss that fell within
    its first window still counts as having improved)."""

    id = "slow_convergence"
    suppressed_by = ("loss_runaway", "divergence", "zero_train_loss")
    causes = (
        "The learning rate is too small, so each update barely changes the weights.",
        "Weights that should train are frozen, or the optimizer was given the wrong parameters.",
        "The weight initialization is unreasonable (too small: vanishing signals; all zeros: "
        "symmetric neurons).",
        "The model is too small for the task, or the inputs are not normalized.",
        "Labels do not match inputs (shuffled separately, wrong label column).",
    )
    next_steps = (
        "Check the hyperparameters: raise the learning rate (try 10x) or use a schedule with "
        "warmup.",
        "Check that the optimizer receives the trainable parameters and nothing is frozen by "
        "mistake.",
        "Check the data: normalize the inputs and verify that labels match samples.",
        "Check the model structure and initialization; try training on a handful of samples "
        "until the loss reaches about zero.",
    )

    def run(self, data: RunData) -> list[Finding]:
        t = self.thresholds
        series = data.primary("loss", "train")
        if series is None:
            return []
        s = series.finite()
        if len(s) < t.min_points_trend:
            return []
        initial = max(float(s.values[0]), s.initial_level(t))
        final = s.final_level(t)
        if initial == 0:
            return []
        improvement = (initial - final) / abs(initial)
        if improvement >= t.slow_min_improvement:
            return []
        return [
            self.finding(
                "warning",
                f"{s.name} went from {fmt(initial)} to {fmt(final)} over steps "
                f"{s.step_at(0)}-{s.step_at(len(s) - 1)}: {improvement:.1%} improvement",
                metric=s.name,
                step=s.step_at(len(s) - 1),
                value=final,
                window=s.span(),
                initial_level=initial,
                relative_improvement=improvement,
            )
        ]
