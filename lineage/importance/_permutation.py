"""Cross-fitted permutation importance with one coherent interval and test.

The statistic. Every run is held out of the model once per round of ``n_folds``-fold
cross-fitting. For a held-out run ``i`` and a parameter ``j``, ``D[i, j]`` is how much worse
the model predicts run ``i`` when ``j``'s value is replaced by the value of another held-out
run (averaged over ``n_repeats`` draws and over the rounds): the per-run loss increase of
Breiman's permutation importance, measured on data the model did not see. A parameter's
importance is the mean of ``D[:, j]`` over the runs; for independent parameters it estimates
twice the model's total-effect variance of ``j`` (the Sobol' total index times the target's
variance), so it counts interactions as well as main effects.

Why held out: for a parameter with no effect, swapping its value between held-out runs leaves
their joint distribution with the target unchanged, so ``E[D[i, j] | fitted model] = 0``
exactly, however many distinct values the parameter has and however much the model overfits
to it. Impurity importances and in-sample permutation have no such zero.

The interval and the test are the same object. The importance is a mean over runs, so its
interval is Student's t interval of that mean (``m - 1`` degrees of freedom for ``m`` scored
runs), and a parameter is *significant* exactly when that interval's lower end is above zero.
The intervals of one analysis hold together at ``confidence``: each is at
``1 - (1 - confidence) / k`` for ``k`` ranked parameters (Bonferroni), so the chance that *any*
no-effect parameter of the analysis is flagged is at most ``(1 - confidence) / 2`` (2.5%), not
2.5% per parameter. A user reads the flags of a ranking together ("tune these"); with six
parameters at 2.5% each, one no-effect parameter in seven analyses would have been called
significant by chance. No second procedure can disagree with the interval shown, and
normalizing by the sum of importances (a positive constant) keeps that true. Why t and not a
bootstrap percentile interval: with 12-30 runs the percentile interval of a mean is too narrow
(it was 2-5 times over its nominal false-positive rate on the no-effect parameters of
``benchmarks/bench_importance_power.py``).

Where the t interval holds. Given the fitted models, a no-effect parameter's per-run
contributions have mean exactly zero (see above), but they are not independent: the runs of one
fold are scored by one model, and each fold's runs trained the models that score the other
folds, so a chance association between a no-effect parameter and the target in the runs
reaches every fold (no unbiased estimator of a cross-validated mean's variance exists for this
reason; Bengio and Grandvalet, 2004). How much that matters depends on how closely the model
fits such chance patterns. On the power benchmark's no-effect parameters the Gaussian process
fitted on 60-100 runs was over the test's level (its t statistic's variance about a quarter
above the t distribution's; averaging more rounds made it worse, since that shrinks the
per-run spread and not the shared part), while at 200 runs it held its level, and the forest,
whose leaves cannot follow single runs, held it at every size measured. So the default
evaluator fits the Gaussian process only from 200 runs
(:class:`~lineage.importance.AutoImportance`). A variance from the spread of the fold means
instead (clusters of runs) held the level at 60 runs but cost the 200-run test much of its
power, so it is not used.
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np

from lineage._errors import UsageError
from lineage.importance._base import ImportanceEvaluator
from lineage.importance._types import EncodedParams

__all__ = ["CrossFittedPermutationImportance", "simultaneous_level"]

_MAX_SCORED_PER_FIT = 1000  # held-out runs scored per model: beyond this only costs time
_MAX_SCORED_TOTAL = 4000
"""Held-out scores wanted over all models once the fits are capped: with 4,000 scored runs the
t interval of a mean is already narrower than the gaps between ranks, and each further model
costs a full fit (10,000 runs x 20 params went from 12 to 6 s of CPU with 4 fits instead of
10)."""


_NEGLIGIBLE = 1e-5
"""Per-run loss changes smaller than this share of the target's variance count as zero (a
parameter that moves the loss by 0.001% of the variance is not an effect anyone can use;
the weakest effects ranked in ``bench_importance.py``, 0.6% of the variance, move it by about
a thousand times more)."""


class CrossFittedPermutationImportance(ImportanceEvaluator):
    """Held-out permutation importance of any regressor, cross-fitted, with Student's t
    interval over runs and significance = the interval excludes zero.

    Subclasses say which model to grow (:meth:`_model`) and store its hyper-parameters; the
    common ones are ``n_folds``, ``n_rounds``, ``n_repeats``, ``max_fit_samples``, ``confidence`` and ``random_state`` (see
    :class:`~lineage.importance.RandomForestImportance`).
    """

    n_folds: int
    n_rounds: int
    n_repeats: int
    max_fit_samples: int | None
    confidence: float
    random_state: int | None
    cv_r2_: float

    @abc.abstractmethod
    def _model(self, n_train: int, seed: int) -> Any:
        """An unfitted scikit-learn regressor for ``n_train`` runs (NaN-tolerant input)."""

    def _validate(self) -> None:
        for name in ("n_folds", "n_rounds", "n_repeats"):
            value = getattr(self, name)
            low = 2 if name == "n_folds" else 1
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise UsageError(
                    f"The {name!r} parameter of {type(self).__name__} must be an int >= {low}, "
                    f"got {value!r}"
                )
        if not 0.0 < self.confidence < 1.0:
            raise UsageError(
                f"The 'confidence' parameter of {type(self).__name__} must be in (0, 1), "
                f"got {self.confidence!r}"
            )

    def _fit(self, data: EncodedParams, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self._validate()
        contributions = self.per_run_contributions(data, y)
        return _interval_and_test(contributions, self.confidence)

    def _rng(self, stream: int) -> np.random.Generator:
        return np.random.default_rng([stream, self.random_state or 0])

    def per_run_contributions(self, data: EncodedParams, y: np.ndarray) -> np.ndarray:
        """``D``: ``(runs scored, params)`` held-out loss increases (see the module docs).

        Also sets ``cv_r2_``: the models' R² on the runs they held out (the share of the
        target's variance their held-out predictions explain).
        """
        X, n = data.X, data.X.shape[0]
        rng = self._rng(0)
        missing = data.missing or [np.zeros(n, dtype=bool) for _ in data.groups]
        children = _children(data) if data.missing else [[] for _ in data.groups]
        total = np.zeros((n, len(data.groups)))
        count = np.zeros(n)
        error = np.zeros(n)
        for train, held in self._splits(n, rng):
            model = self._model(len(train), int(rng.integers(2**31 - 1)))
            model.fit(X[train], y[train])
            increase, base = _loss_increase(
                model, X, y, held, data.groups, missing, children, self.n_repeats, rng
            )
            total[held] += increase
            error[held] += base
            count[held] += 1
        scored = count > 0
        if scored.sum() < 2:
            raise UsageError(f"too few runs to hold any out for scoring, got {n}")
        held_y = y[scored]
        spread = float(np.sum((held_y - held_y.mean()) ** 2))
        mse = float(np.sum(error[scored] / count[scored]))
        self.cv_r2_ = 1.0 - mse / spread if spread > 0 else 0.0
        contributions = total[scored] / count[scored, None]
        # A loss change below _NEGLIGIBLE of the target's variance is no effect but numerical
        # noise: a Gaussian process that interpolates a noise-free target moves its
        # predictions by ~1e-8 of the variance when a no-effect value is swapped, and a t
        # test over hundreds of such values calls that "significant".
        contributions[np.abs(contributions) < _NEGLIGIBLE * float(np.var(y))] = 0.0
        return contributions

    def _splits(self, n: int, rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
        cap = self.max_fit_samples
        folds = min(self.n_folds, n)
        out: list[tuple[np.ndarray, np.ndarray]] = []
        if cap is not None and n * (folds - 1) / folds > cap:
            # Many runs: each model grows on `cap` random runs and scores others, so 10,000
            # runs cost about what 1,000 do. Enough models to score _MAX_SCORED_TOTAL runs,
            # and at least two per round, so that no single fit decides the ranking.
            per_fit = min(n - cap, _MAX_SCORED_PER_FIT)
            wanted = -(-min(n, _MAX_SCORED_TOTAL) // per_fit)
            fits = min(self.n_rounds * folds, max(2 * self.n_rounds, wanted))
            for _ in range(fits):
                order = rng.permutation(n)
                held = np.sort(order[cap : cap + per_fit])
                out.append((order[:cap], held))
            return out
        for _ in range(self.n_rounds):
            order = rng.permutation(n)
            for held in np.array_split(order, folds):
                train = np.setdiff1d(order, held, assume_unique=True)
                out.append((train, np.sort(held)))
        return out


def _interval_and_test(
    D: np.ndarray, confidence: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # scipy.special, not scipy.stats: the same quantile, and scipy.stats alone took 0.7 s to
    # import, a fifth of a CLI call.
    from scipy.special import stdtrit

    m, n_params = D.shape
    mean = D.mean(axis=0)
    se = D.std(axis=0, ddof=1) / np.sqrt(m)
    level = simultaneous_level(confidence, n_params)
    half = float(stdtrit(m - 1, 0.5 + level / 2.0)) * se
    low, high = mean - half, mean + half
    significant = low > 0.0
    intervals = np.column_stack([np.maximum(low, 0.0), np.maximum(high, 0.0)])
    return mean, intervals, significant


def simultaneous_level(confidence: float, n_params: int) -> float:
    """The level of each of ``n_params`` intervals that hold together at ``confidence``
    (Bonferroni: ``1 - (1 - confidence) / n_params``)."""
    return 1.0 - (1.0 - confidence) / max(n_params, 1)


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


def _donors(rows: np.ndarray, pool: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """For each run in ``rows``, another run of ``pool`` to take a value from."""
    if len(pool) < 2:
        return rows.copy()
    pick = rng.integers(0, len(pool) - 1, size=len(rows))
    donors = pool[pick]
    # Never a run's own value: skip over it (uniform over the others).
    own = np.searchsorted(pool, rows)
    own_in = (own < len(pool)) & (pool[np.minimum(own, len(pool) - 1)] == rows)
    shift = own_in & (pick >= own)
    donors[shift] = pool[pick[shift] + 1]
    return donors


def _loss_increase(
    model: Any,
    X: np.ndarray,
    y: np.ndarray,
    held: np.ndarray,
    groups: list[np.ndarray],
    missing: list[np.ndarray],
    children: list[list[int]],
    repeats: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """``(len(held), params)``: squared-error increase of each held-out run per parameter,
    and ``(len(held),)``: each held-out run's squared error unaltered."""
    base = X[held]
    blocks = [base]
    for j, group in enumerate(groups):
        has = np.flatnonzero(~missing[j])
        # A conditional parameter takes values only among the runs that have it: whether it
        # applies at all is its parent's effect, and moving the gaps too would hand the
        # parent's importance to the child.
        where = np.flatnonzero(~missing[j][held]) if len(has) >= 2 else np.arange(len(held))
        pool = has if len(has) >= 2 else np.arange(X.shape[0])
        # Values come from the other held-out runs: a training run's value sits where the
        # model was fitted to it (a split placed beside it), which makes a no-effect
        # parameter look useful; held-out runs are exchangeable with the run scored.
        inner = np.intersect1d(pool, held, assume_unique=True)
        if len(inner) >= 2:
            pool = inner

        for _ in range(repeats):
            swapped = base.copy()
            donors = _donors(held[where], pool, rng)
            swapped[np.ix_(where, group)] = X[np.ix_(donors, group)]
            for c in children[j]:
                # Moving a parent must also move where its children apply, or the model
                # reads the parent back from the children's gaps. A child keeps its value
                # where it still applies, is unset where it no longer does, and takes a
                # value from a run that has it where it newly applies.
                lacks_c = missing[c][held]
                now_lacks = lacks_c.copy()
                now_lacks[where] = missing[c][donors]
                gone = np.flatnonzero(now_lacks & ~lacks_c)
                new = np.flatnonzero(~now_lacks & lacks_c)
                have_c, lack_c = np.flatnonzero(~missing[c]), np.flatnonzero(missing[c])
                if len(gone) and len(lack_c):
                    swapped[np.ix_(gone, groups[c])] = X[lack_c[0], groups[c]]
                if len(new) and len(have_c):
                    picks = rng.choice(have_c, size=len(new))
                    swapped[np.ix_(new, groups[c])] = X[np.ix_(picks, groups[c])]
            blocks.append(swapped)
    # One predict call over every altered copy: the trees are walked once.
    pred = model.predict(np.vstack(blocks)).reshape(len(blocks), len(held))
    err = (pred - y[held]) ** 2
    increase = (err[1:] - err[0]).reshape(len(groups), repeats, len(held)).mean(axis=1).T
    return increase, err[0]
