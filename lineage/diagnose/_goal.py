"""Which way a metric improves, and the curve turned so that lower is always better.

The checks that can stop a running trial judge a curve against the best level it reached *in
its goal's direction*, never against the magnitude of its values: a negative log-likelihood, an
ELBO or a contrastive loss improves below zero, and a reward logged as ``loss`` improves upward.

A goal comes from the caller (the tuner knows each objective's) or, failing that, from the
metric's name: a plain loss (``loss``, ``val_loss``, ``nll``, ``mse``...) is minimized, a plain
accuracy (``acc``, ``val_accuracy``...) maximized. Any other metric (a loss *component* such
as ``kl_loss``, which may rise while the total falls; a score; a throughput) has no known goal:
it is never stopped on.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from lineage._errors import UsageError
from lineage.diagnose import _names

Goal = Literal["minimize", "maximize"]
GOALS: tuple[Goal, ...] = ("minimize", "maximize")
"""The goals a metric can have; a metric with neither is only reported, never stopped on."""


def goal_of(metric: str, goal: str | None = None) -> Goal | None:
    """The goal of ``metric``: ``goal`` when given (checked), else the name's, else None.

    Args:
        metric: the metric's name (``val_loss``, ``train/acc``...).
        goal: ``minimize`` or ``maximize`` when the caller knows it.

    Returns:
        ``minimize``, ``maximize``, or None when neither was given nor follows from the name.

    Raises:
        UsageError: ``goal`` is given and is neither.
    """
    if goal is not None:
        if goal not in GOALS:
            raise UsageError(f"goal must be one of {', '.join(GOALS)}, got {goal!r}")
        return goal
    kind = _names.primary_kind(metric)
    if kind == "loss":
        return "minimize"
    if kind == "accuracy":
        return "maximize"
    rest = _names.core_tokens(metric)
    if len(rest) == 1 and _names.is_loss_like(rest[0]):  # nll, mse, val_ppl...
        return "minimize"
    return None


def oriented(values: np.ndarray, goal: Goal) -> np.ndarray:
    """``values`` turned so that lower is better (negated when the goal is to maximize)."""
    return values if goal == "minimize" else -values
