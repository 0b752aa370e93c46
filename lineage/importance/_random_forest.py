"""Held-out permutation importance of a random forest, with bootstrap intervals.

Why not the forest's own ``feature_importances_``: impurity decrease is measured on the data the
trees were grown on, so a parameter with many distinct values (a random seed, a twelve-way
categorical) offers many candidate splits and collects importance from fitting noise
(Strobl et al., 2007). Permutation importance measured on runs the model did not see has no
such bias: for a parameter independent of the target, shuffling its values leaves the joint
distribution of the held-out data unchanged, so its expected importance is exactly zero,
however many values it has. That also gives the null for the ``significant`` flag without
any shadow features.

Each of ``n_bootstrap`` replicates draws the runs with replacement, grows a forest on them,
and scores every parameter on the runs left out (about 37% of them): the increase in mean
squared error when that parameter's columns (all one-hot columns of a categorical together)
are shuffled, averaged over ``n_repeats`` shuffles. The score is the mean over replicates,
the interval the normal bootstrap interval, and a parameter is significant when at least
``confidence`` (95%) of the replicates score it above zero (a one-sided bootstrap test).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lineage._errors import UsageError
from lineage.importance._base import ImportanceEvaluator
from lineage.importance._types import EncodedParams

__all__ = ["RandomForestImportance"]


class RandomForestImportance(ImportanceEvaluator):
    """Bootstrap replicates of a random forest, scored by held-out permutation importance.

    Parameters (keyword-only):
        n_estimators: trees per replicate forest.
        n_bootstrap: bootstrap replicates; the intervals come from their spread.
        n_repeats: shuffles per parameter and replicate.
        min_samples_leaf: the forest's ``min_samples_leaf``; larger leaves make the forest rely
            less on chance splits of parameters without effect.
        max_fit_samples: each replicate grows its trees on at most this many runs (the rest is
            held out), which keeps 10,000 runs as fast as 2,000; ``None`` for no cap.
        confidence: the two-sided level of the intervals.
        random_state: seed for the resampling, the shuffles and the trees.
        n_jobs: passed to scikit-learn.
    """

    def __init__(
        self,
        *,
        n_estimators: int = 16,
        n_bootstrap: int = 24,
        n_repeats: int = 3,
        min_samples_leaf: int = 2,
        max_fit_samples: int | None = 800,
        confidence: float = 0.95,
        random_state: int | None = 0,
        n_jobs: int | None = None,
    ) -> None:
        self.n_estimators = n_estimators
        self.n_bootstrap = n_bootstrap
        self.n_repeats = n_repeats
        self.min_samples_leaf = min_samples_leaf
        self.max_fit_samples = max_fit_samples
        self.confidence = confidence
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _validate(self) -> None:
        for name in ("n_estimators", "n_bootstrap", "n_repeats", "min_samples_leaf"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise UsageError(
                    f"The {name!r} parameter of RandomForestImportance must be an int >= 1, "
                    f"got {value!r}"
                )
        if not 0.0 < self.confidence < 1.0:
            raise UsageError(
                "The 'confidence' parameter of RandomForestImportance must be in (0, 1), "
                f"got {self.confidence!r}"
            )

    def _fit(self, data: EncodedParams, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        from sklearn.ensemble import RandomForestRegressor

        self._validate()
        X, n = data.X, data.X.shape[0]
        rng = np.random.default_rng(self.random_state)
        fit_size = n if self.max_fit_samples is None else min(n, self.max_fit_samples)
        replicates = self.n_bootstrap
        if fit_size < n:
            # Each replicate already sees fewer runs than there are; past the cap, fewer but
            # nearly disjoint replicates carry the same information.
            replicates = max(8, min(replicates, round(replicates * 2 * fit_size / n)))
        # Beyond a few thousand shuffled rows per parameter, more repeats only cost time.
        repeats = max(1, min(self.n_repeats, 3000 // max(1, min(n - 1, fit_size))))
        missing = data.missing or [np.zeros(n, dtype=bool) for _ in data.groups]
        children = _children(data) if data.missing else [[] for _ in data.groups]
        scores: list[np.ndarray] = []
        for _ in range(replicates):
            fit_idx = rng.integers(0, n, size=fit_size)
            held = np.ones(n, dtype=bool)
            held[fit_idx] = False
            held_idx = np.flatnonzero(held)
            if len(held_idx) < 2:
                continue
            if len(held_idx) > fit_size:
                held_idx = rng.choice(held_idx, size=fit_size, replace=False)
            forest = RandomForestRegressor(
                n_estimators=self.n_estimators,
                min_samples_leaf=self.min_samples_leaf,
                max_features=1.0,
                bootstrap=False,  # the replicate is already a bootstrap sample
                random_state=int(rng.integers(2**31 - 1)),
                n_jobs=self.n_jobs,
            )
            forest.fit(X[fit_idx], y[fit_idx])
            scores.append(
                _permutation_scores(
                    forest,
                    X[held_idx],
                    y[held_idx],
                    data,
                    [lacks[held_idx] for lacks in missing],
                    children,
                    repeats,
                    rng,
                )
            )
        if len(scores) < 2:
            raise UsageError(f"too few runs to hold any out for scoring, got {n}")
        table = np.vstack(scores)  # (replicates, params)
        mean = table.mean(axis=0)
        # The standard (normal) bootstrap interval: stable with a couple of dozen replicates,
        # where percentiles of so few would be little more than the extremes.
        half = _normal_quantile(0.5 + self.confidence / 2.0) * table.std(axis=0, ddof=1)
        low, high = mean - half, mean + half
        intervals = np.column_stack([np.maximum(low, 0.0), np.maximum(high, 0.0)])
        # Significance is the one-sided bootstrap test of "importance > 0": a parameter with no
        # effect scores around zero, positive in about half the replicates; one that matters
        # scores positive in nearly all. Unlike "the normal interval's lower bound is above
        # zero", it does not assume a symmetric spread, which with a dozen runs (held-out sets
        # of four or five) is wide and skewed even for a parameter that plainly drives the
        # target.
        positive = (table > 0.0).mean(axis=0)
        return mean, intervals, (positive >= self.confidence) & (mean > 0.0)


def _normal_quantile(p: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(p))


def _children(data: EncodedParams) -> list[list[int]]:
    """For each parameter, the conditional parameters whose presence it decides.

    ``c`` is a child of ``j`` when, over all runs, whether ``c`` is set is a function of
    ``j``'s value (momentum exists exactly when optimizer is momentum). Only parameters with
    few distinct values qualify as parents: with one value per run, anything is a function.
    """
    n = data.X.shape[0]
    out: list[list[int]] = [[] for _ in data.groups]
    conditional = [c for c, lacks in enumerate(data.missing) if 0 < int(lacks.sum()) < n]
    if not conditional:
        return out
    for j, group in enumerate(data.groups):
        block = np.nan_to_num(data.X[:, group], nan=np.inf)
        _, level = np.unique(block, axis=0, return_inverse=True)
        level = level.ravel()
        n_levels = int(level.max()) + 1
        if n_levels < 2 or n_levels > min(32, n // 2):
            continue
        for c in conditional:
            if c == j:
                continue
            lacks = data.missing[c].astype(float)
            share = np.bincount(level, weights=lacks, minlength=n_levels)
            count = np.bincount(level, minlength=n_levels)
            frac = share[count > 0] / count[count > 0]
            if np.all((frac == 0.0) | (frac == 1.0)):
                out[j].append(c)
    return out


def _permutation_scores(
    forest: Any,
    X: np.ndarray,
    y: np.ndarray,
    data: EncodedParams,
    missing: list[np.ndarray],
    children: list[list[int]],
    repeats: int,
    rng: np.random.Generator,
) -> np.ndarray:
    m = X.shape[0]
    groups = data.groups
    blocks = [X]
    for j, group in enumerate(groups):
        lacks = missing[j]
        # A conditional parameter is shuffled only among the runs that have it: whether it
        # applies at all is its parent's effect, and shuffling the gaps too would hand the
        # parent's importance to the child.
        rows = np.flatnonzero(~lacks) if (~lacks).sum() >= 2 else np.arange(m)
        for _ in range(repeats):
            perm = rng.permutation(rows)
            shuffled = X.copy()
            shuffled[np.ix_(rows, group)] = X[np.ix_(perm, group)]
            for c in children[j]:
                # Shuffling a parent must also move where its children apply, or the model
                # reads the parent back from the children's gaps. A child keeps its value
                # where it still applies, is unset where it no longer does, and takes a
                # value drawn from the runs that have it where it newly applies.
                lacks_c = missing[c]
                now_lacks = lacks_c.copy()
                now_lacks[rows] = lacks_c[perm]
                gone = now_lacks & ~lacks_c
                new = ~now_lacks & lacks_c
                have, lack = np.flatnonzero(~lacks_c), np.flatnonzero(lacks_c)
                if gone.any() and len(lack):
                    shuffled[np.ix_(np.flatnonzero(gone), groups[c])] = X[lack[0], groups[c]]
                if new.any() and len(have):
                    donors = rng.choice(have, size=int(new.sum()))
                    shuffled[np.ix_(np.flatnonzero(new), groups[c])] = X[np.ix_(donors, groups[c])]
            blocks.append(shuffled)
    # One predict call over every shuffled copy: the trees are walked once.
    pred = forest.predict(np.vstack(blocks))
    err = ((pred - np.tile(y, len(blocks))) ** 2).reshape(len(blocks), m).mean(axis=1)
    return err[1:].reshape(len(groups), repeats).mean(axis=1) - err[0]
