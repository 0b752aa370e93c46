"""Whether a run's target curve was still improving when training stopped.

Shared by ``undertrained`` (the symptom) and ``too_few_epochs`` (which keeps quiet when the
curve shows the run converged anyway). The curve judged is the validation curve when it has
enough points (the accuracy and the loss: both must still improve), else the training loss.

The measure compares two rates of improvement, per step:

- the *average* rate over the run: (initial level - final level) / steps between the two
  windows (levels are window medians, as elsewhere in this package);
- the *recent* rate: the robust slope over the last ``undertrained_tail_fraction`` of the
  points (the median of the slopes between points half the tail apart, so one spike cannot
  make it), with its standard error from the tail's residuals around that line.

A curve that approaches its plateau exponentially has a recent/average ratio that falls with
the time constants elapsed; a ratio of at least ``undertrained_rate_ratio`` means a
noticeable share of the improvement still lay ahead. Accuracies are judged as errors
(``1 - accuracy``, or ``100 - accuracy`` in percent), so relative figures mean the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lineage import tags
from lineage.diagnose import _names
from lineage.diagnose._base import RunData, Series
from lineage.diagnose._overfitting import accuracy_scale
from lineage.diagnose._thresholds import Thresholds

#: MLflow run statuses and tuner states of runs that did not reach their last epoch.
_UNFINISHED_STATUSES = frozenset({"RUNNING", "SCHEDULED", "FAILED", "KILLED"})
_STOPPED_STATES = frozenset({"PRUNED", "FAIL", "RUNNING", "WAITING"})


@dataclass(frozen=True, slots=True)
class Progress:
    """The progress figures of one curve; rates are improvements (error or loss falling)."""

    series: Series
    kind: _names.Kind
    initial: float  # level, in the curve's own units
    final: float
    average_rate: float  # improvement per step over the run (> 0: improving)
    recent_rate: float  # improvement per step over the tail
    tail: tuple[int, int]  # first and last step of the tail
    tail_gain: float  # improvement over the tail (recent_rate x its span), curve units
    z: float  # recent_rate / its standard error

    @property
    def ratio(self) -> float:
        return self.recent_rate / self.average_rate if self.average_rate > 0 else 0.0

    def flattened(self, t: Thresholds) -> bool:
        """The curve shows it converged: its recent rate fell well below the average."""
        return self.average_rate > 0 and self.ratio < t.undertrained_rate_ratio

    def still_improving(self, t: Thresholds) -> bool:
        return (
            self.average_rate > 0
            and self.recent_rate > 0
            and self.ratio >= t.undertrained_rate_ratio
            and self.z >= t.undertrained_min_z
        )


def stopped_early(data: RunData) -> bool:
    """The run did not end by finishing its epochs (still running, failed, pruned)."""
    if data.status is not None and data.status.upper() in _UNFINISHED_STATUSES:
        return True
    return data.tags.get(tags.TRIAL_STATE, "").upper() in _STOPPED_STATES


def target_curves(data: RunData, t: Thresholds) -> list[Series]:
    """The curves whose progress decides: validation ones with enough points, else the
    training loss (the primary with the most points)."""
    val = [
        s
        for s in (data.primary("accuracy", "val"), data.primary("loss", "val"))
        if s is not None and len(s.finite()) >= t.undertrained_min_val_points
    ]
    if val:
        return val
    train = data.primary("loss", "train")
    if train is not None and len(train.finite()) >= t.min_points_trend:
        return [train]
    return []


def measure(series: Series, kind: _names.Kind, t: Thresholds) -> Progress | None:
    """The progress of one loss or accuracy curve; ``None`` when it is too short to judge
    or did not improve at all (that is ``slow_convergence``'s or ``divergence``'s case)."""
    s = series.finite()
    n = len(s)
    k = max(t.undertrained_min_tail_points, math.ceil(t.undertrained_tail_fraction * n))
    if n < max(k + 1, t.window_min_points + 1):
        return None
    scale = accuracy_scale(s) if kind == "accuracy" else 0.0
    # lower is better from here on: a loss as is, an accuracy as its error
    v = s.values if kind == "loss" else scale - s.values
    x = s.steps.astype(np.float64)
    w = s.window_size(t)
    initial = max(float(v[0]), float(np.median(v[:w])))
    final = float(np.median(v[-w:]))
    span = float(np.median(x[-w:]) - np.median(x[:w]))
    if span <= 0 or initial - final < t.slow_min_improvement * abs(initial):
        return None
    average = (initial - final) / span

    tx, tv = x[-k:], v[-k:]
    h = k // 2
    dx = tx[h:] - tx[:-h]
    if np.any(dx <= 0):
        return None
    slope = float(np.median((tv[h:] - tv[:-h]) / dx))
    intercept = float(np.median(tv - slope * tx))
    resid = tv - (intercept + slope * tx)
    sigma = 1.4826 * float(np.median(np.abs(resid)))
    sxx = float(np.sum((tx - tx.mean()) ** 2))
    se = sigma / math.sqrt(sxx) if sxx > 0 else math.inf
    recent = -slope
    z = recent / se if se > 0 else (math.inf if recent > 0 else 0.0)
    return Progress(
        series=s,
        kind=kind,
        initial=initial if kind == "loss" else scale - initial,
        final=final if kind == "loss" else scale - final,
        average_rate=average,
        recent_rate=recent,
        tail=(int(tx[0]), int(tx[-1])),
        tail_gain=recent * float(tx[-1] - tx[0]),
        z=z,
    )


def curve_progress(data: RunData, t: Thresholds) -> list[Progress]:
    """The progress of every target curve that can be judged."""
    out = []
    for s in target_curves(data, t):
        kind: _names.Kind = _names.primary_kind(s.name) or "loss"
        p = measure(s, kind, t)
        if p is not None:
            out.append(p)
    return out
