"""``overfitting``: validation results far behind training results."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lineage.diagnose._base import Check, Finding, RunData, Series, fmt


def accuracy_scale(series: Series) -> float:
    """Accuracies logged in percent are brought to 0-1."""
    finite = series.values[np.isfinite(series.values)]
    return 100.0 if finite.size and float(np.max(finite)) > 1.5 else 1.0


def _tail(series: Series, n: int = 3) -> float:
    return float(np.median(series.values[-n:]))


def _aligned(candidates: list[Series], va: Series) -> tuple[Series, bool]:
    """The training loss on the validation loss's step axis when there is one (an epoch mean
    beside per-epoch validation), else the longest; and whether the axes match (the last
    steps agree within 25 %)."""
    last = max(float(va.steps[-1]), 1.0) if len(va) else 1.0

    def gap(s: Series) -> float:
        return abs(float(s.steps[-1]) - last) / last if len(s) else math.inf

    best = min(candidates, key=lambda s: (gap(s), -len(s)))
    if gap(best) <= 0.25:
        return best, True
    return max(candidates, key=len), False


class Overfitting(Check):
    """Any of three signals, each measured on final levels (medians of the last points):

    - training accuracy above validation accuracy by ``overfit_acc_gap`` or more;
    - the validation loss risen ``overfit_val_rise`` above its best while the training loss
      kept falling by ``overfit_train_still_falling`` after that point;
    - the final validation loss ``overfit_loss_ratio`` times the training loss and above it
      by ``overfit_loss_gap_vs_improvement`` of what the training loss gained.
    """

    id = "overfitting"
    suppressed_by = ("loss_runaway", "divergence")
    causes = (
        "The model memorises the training set: too many parameters or too many epochs for "
        "the amount of data.",
        "Too little regularization (weight decay, dropout) or data augmentation.",
        "The training set is small or not representative of the validation set.",
    )
    next_steps = (
        "Stop earlier: keep the checkpoint of the best validation result (early stopping).",
        "Add regularization: weight decay, dropout, label smoothing.",
        "Add data augmentation or more training data.",
        "Reduce the model size or the number of epochs.",
    )

    def run(self, data: RunData) -> list[Finding]:
        t = self.thresholds
        signals: list[dict[str, Any]] = []
        train_acc = data.primary("accuracy", "train")
        val_acc = data.primary("accuracy", "val")
        if train_acc is not None and val_acc is not None:
            tr, va = train_acc.finite(), val_acc.finite()
            if len(tr) and len(va):
                tr_level = _tail(tr, tr.window_size(t)) / accuracy_scale(tr)
                va_level = _tail(va) / accuracy_scale(va)
                if tr_level - va_level >= t.overfit_acc_gap:
                    signals.append(
                        dict(
                            summary=f"{tr.name} {fmt(tr_level)} is {fmt(tr_level - va_level)} "
                            f"above {va.name} {fmt(va_level)}",
                            metric=va.name,
                            step=va.step_at(len(va) - 1),
                            value=va_level,
                            window=va.span(),
                            train_value=tr_level,
                        )
                    )
        val_loss = data.primary("loss", "val")
        train_losses = data.primaries("loss", "train")
        if train_losses and val_loss is not None:
            va = val_loss.finite()
            tr, aligned = _aligned([s.finite() for s in train_losses], va)
            if len(tr) >= t.window_min_points and len(va):
                signals.extend(self._loss_signals(tr, va, aligned))
        if not signals:
            return []
        first = signals[0]
        summary = "; ".join(s.pop("summary") for s in signals)
        if len(signals) > 1:
            first["other_signals"] = signals[1:]
        return [self.finding("warning", summary, **first)]

    def _loss_signals(self, tr: Series, va: Series, aligned: bool) -> list[dict[str, Any]]:
        t = self.thresholds
        out: list[dict[str, Any]] = []
        tail = min(3, len(va))
        if len(va) >= t.overfit_min_val_points:
            ibest = int(np.argmin(va.values))
            best = float(va.values[ibest])
            final = _tail(va, tail)
            best_step = va.step_at(ibest)
            if aligned:
                before = tr.values[tr.steps <= best_step]
            else:  # different step axes (per step vs per epoch): match by position in the run
                before = tr.values[: round((ibest + 1) / len(va) * len(tr))]
            if ibest < len(va) - tail and before.size and best != 0:
                tr_then = float(np.median(before[-tr.window_size(t) :]))
                tr_final = tr.final_level(t)
                falling = tr_then - tr_final >= t.overfit_train_still_falling * abs(tr_then)
                if final - best >= t.overfit_val_rise * abs(best) and falling:
                    out.append(
                        dict(
                            summary=f"{va.name} rose from its best {fmt(best)} (step "
                            f"{best_step}) to {fmt(final)} while {tr.name} fell from "
                            f"{fmt(tr_then)} to {fmt(tr_final)}",
                            metric=va.name,
                            step=va.step_at(len(va) - 1),
                            value=final,
                            window=[best_step, va.step_at(len(va) - 1)],
                            best=best,
                            train_value=tr_final,
                        )
                    )
        tr_initial = max(float(tr.values[0]), tr.initial_level(t))
        tr_final = tr.final_level(t)
        va_final = _tail(va, tail)
        gained = tr_initial - tr_final
        if (
            gained > 0
            and tr_final > 0
            and va_final >= t.overfit_loss_ratio * tr_final
            and va_final - tr_final >= t.overfit_loss_gap_vs_improvement * gained
        ):
            out.append(
                dict(
                    summary=f"{va.name} {fmt(va_final)} is {fmt(va_final / tr_final)}x "
                    f"{tr.name} {fmt(tr_final)}",
                    metric=va.name,
                    step=va.step_at(len(va) - 1),
                    value=va_final,
                    window=va.span(),
                    train_value=tr_final,
                )
            )
        return out
