"""MindInsight's parameter importance: the absolute Pearson correlation with the target.

Kept as a baseline to measure the forest against, and as a fast first look. It sees only
monotonic, linear effects of numeric parameters: a learning-rate bowl (best in the middle)
scores near zero and categoricals score zero by construction. Missing values are left out
pairwise. Intervals come from Fisher's z transform; ``significant`` is the two-sided test of
zero correlation at ``1 - confidence``.
"""

from __future__ import annotations

import math

import numpy as np

from lineage.importance._base import ImportanceEvaluator
from lineage.importance._types import EncodedParams

__all__ = ["CorrelationImportance"]


class CorrelationImportance(ImportanceEvaluator):
    """``|pearson(param, target)|`` for numeric parameters (on their log scale when log),
    zero for categoricals."""

    def __init__(self, *, confidence: float = 0.95) -> None:
        self.confidence = confidence

    def _fit(self, data: EncodedParams, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        from scipy.stats import norm

        z = float(norm.ppf(0.5 + self.confidence / 2.0))
        scores, intervals, significant = [], [], []
        for spec, group in zip(data.specs, data.groups, strict=True):
            x = data.X[:, group[0]]
            ok = ~np.isnan(x)
            if spec.kind != "numeric" or ok.sum() < 4 or np.ptp(x[ok]) == 0:
                scores.append(0.0)
                intervals.append((0.0, 0.0))
                significant.append(False)
                continue
            r = float(np.corrcoef(x[ok], y[ok])[0, 1])
            r = max(-0.999999, min(0.999999, r))
            half = z / math.sqrt(ok.sum() - 3)
            lo, hi = math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half)
            abs_lo = 0.0 if lo <= 0.0 <= hi else min(abs(lo), abs(hi))
            scores.append(abs(r))
            intervals.append((abs_lo, max(abs(lo), abs(hi))))
            significant.append(not (lo <= 0.0 <= hi))
        return np.array(scores), np.array(intervals), np.array(significant)
