"""``undertrained``: the target curve was still improving when training stopped."""

from __future__ import annotations

from typing import Any

from lineage.diagnose._base import Check, Finding, RunData, fmt
from lineage.diagnose._progress import Progress, curve_progress, stopped_early


class Undertrained(Check):
    """The validation accuracy and loss (or, with fewer than ``undertrained_min_val_points``
    validation points, the training loss) still improving at the last epoch: the recent rate
    of improvement at least ``undertrained_rate_ratio`` of the run's average rate and
    ``undertrained_min_z`` standard errors from zero (see :mod:`lineage.diagnose._progress`).

    Every validation curve judged must still improve (a flat validation accuracy beside a
    falling validation loss is not worth more epochs). Runs that did not finish (running,
    failed, killed, pruned by the tuner) are not judged: they were stopped on purpose.
    """

    id = "undertrained"
    suppressed_by = ("loss_runaway", "divergence", "slow_convergence", "oscillation")
    causes = (
        "Training stopped before the model converged: too few epochs (or steps) for this "
        "model, data set and learning rate.",
        "The learning rate is low, or decays too early, so convergence needs more updates.",
    )
    next_steps = (
        "Train longer: raise epochs (try 2-3x) and keep the checkpoint with the best "
        "validation result (early stopping), so a longer run cannot end worse.",
        "Stretch an epoch-based learning-rate schedule (cosine, step decay) with the new "
        "epoch count, or its decay will end too soon again.",
        "If longer runs cost too much, raise the learning rate (with warmup) to converge in "
        "fewer epochs.",
    )

    def run(self, data: RunData) -> list[Finding]:
        t = self.thresholds
        if stopped_early(data):
            return []
        judged = curve_progress(data, t)
        if not judged or not all(p.still_improving(t) for p in judged):
            return []
        first = judged[0]
        extra: dict[str, Any] = {}
        if len(judged) > 1:
            extra["also"] = [{"metric": p.series.name, **self._figures(p)} for p in judged[1:]]
        return [
            self.finding(
                "warning",
                self._summary(first),
                metric=first.series.name,
                step=first.series.step_at(len(first.series) - 1),
                value=first.final,
                window=list(first.tail),
                **self._figures(first),
                **extra,
            )
        ]

    @staticmethod
    def _figures(p: Progress) -> dict[str, Any]:
        return {
            "initial_level": p.initial,
            "final_level": p.final,
            "tail_gain": p.tail_gain,
            "recent_rate": p.recent_rate,
            "average_rate": p.average_rate,
            "rate_ratio": p.ratio,
            "z": p.z,
        }

    @staticmethod
    def _summary(p: Progress) -> str:
        s = p.series
        direction = "rose" if p.kind == "accuracy" else "fell"
        return (
            f"{s.name} was still improving when training stopped: it {direction} by "
            f"{fmt(p.tail_gain)} over its last steps {p.tail[0]}-{p.tail[1]}, at "
            f"{p.ratio:.0%} of its average rate over the run (from {fmt(p.initial)} to "
            f"{fmt(p.final)})"
        )
