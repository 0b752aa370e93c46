"""Cross-fitted permutation importance of a boosted random forest.

The default evaluator (:mod:`lineage.importance._auto`) uses it wherever it predicts held-out
runs better than the Gaussian process; ``--method forest`` uses it always.

Why boosted: a forest spends its splits on the strongest parameters; a parameter that explains
1% of the variance next to one that explains 50% gets few splits and looks like no effect.
Each further stage grows a forest on the out-of-bag residuals of the stages before it
(Ghosal and Hooker, "Boosting random forests to reduce bias", 2020), so the weak, smooth
effects the first forest left in its residuals are modelled too. Out-of-bag residuals, not
in-sample ones, keep the later stages from fitting the first stage's overfitting. On the
known-truth cases of ``benchmarks/bench_importance.py`` three stages rank geometric
fall-offs down to 1% right where one forest does not.

Why not the forest's own ``feature_importances_``: impurity decrease is measured on the data
the trees were grown on, so a parameter with many distinct values (a random seed, a
twelve-way categorical) offers many candidate splits and collects importance from fitting
noise (Strobl et al., 2007). Permutation importance on held-out runs has no such bias, and
gives the interval and the test from one resampling (see
:mod:`lineage.importance._permutation`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from lineage._errors import UsageError
from lineage.importance._permutation import CrossFittedPermutationImportance

__all__ = ["RandomForestImportance"]
_LATER_LEAF = 6
"""``min_samples_leaf`` of the residual stages: with smaller leaves they fit out-of-bag noise
through no-effect parameters, and the false-positive rate of ``significant`` at 100 runs rose
from 0.02 to 0.10 (``bench_importance_power.py``)."""


class RandomForestImportance(CrossFittedPermutationImportance):
    """A random forest, cross-fitted; each parameter scored by held-out permutation importance.

    Parameters (keyword-only):
        n_estimators: trees per forest (per boosting stage); with fewer stages (few runs) the
            forests grow more trees, so the total stays ``n_estimators * n_stages``.
        n_stages: forests in the boosted sum at 100 runs or more; one more stage per 50
            runs below that (a plain forest under 50 runs: with few runs, out-of-bag
            residuals are mostly noise, and fitting them costs power).
        n_folds: folds of each cross-fitting round (fewer when there are fewer runs).
        n_rounds: rounds of cross-fitting; every run is held out once per round, and its
            loss increases are averaged over rounds. Past ``max_fit_samples`` the models
            grow on random subsamples instead, and only as many are fitted as it takes to
            score about 4,000 held-out runs (at least two per round).
        n_repeats: values drawn per parameter and held-out run.
        n_bootstrap: accepted for compatibility with earlier versions and ignored (the
            interval is Student's t interval of the per-run mean, no resampling).
        min_samples_leaf: the forest's ``min_samples_leaf``.
        max_features: the forest's ``max_features`` (share of columns tried per split).
        max_fit_samples: a forest grows on at most this many runs, which keeps 10,000 runs
            about as fast as 1,000; ``None`` for no cap.
        confidence: the two-sided level of the intervals; a parameter is significant when its
            interval's lower end is above zero.
        random_state: seed for the folds, the draws and the trees.
        n_jobs: passed to scikit-learn.
    """

    def __init__(
        self,
        *,
        n_estimators: int = 32,
        n_stages: int = 3,
        n_folds: int = 5,
        n_rounds: int = 2,
        n_repeats: int = 3,
        n_bootstrap: int | None = None,
        min_samples_leaf: int = 2,
        max_features: float = 1.0,
        max_fit_samples: int | None = 800,
        confidence: float = 0.95,
        random_state: int | None = 0,
        n_jobs: int | None = None,
    ) -> None:
        self.n_estimators = n_estimators
        self.n_stages = n_stages
        self.n_folds = n_folds
        self.n_rounds = n_rounds
        self.n_repeats = n_repeats
        self.n_bootstrap = n_bootstrap
        self.min_samples_leaf = min_samples_leaf
        self.max_features = max_features
        self.max_fit_samples = max_fit_samples
        self.confidence = confidence
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _validate(self) -> None:
        for name in ("n_estimators", "n_stages", "min_samples_leaf"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise UsageError(
                    f"The {name!r} parameter of RandomForestImportance must be an int >= 1, "
                    f"got {value!r}"
                )
        super()._validate()

    def _model(self, n_train: int, seed: int) -> Any:
        stages = min(self.n_stages, 1 + n_train // 40)
        return BoostedForest(
            n_estimators=self.n_estimators * self.n_stages // stages,
            n_stages=stages,
            min_samples_leaf=min(self.min_samples_leaf, max(1, n_train // 4)),
            max_features=self.max_features,
            random_state=seed,
            n_jobs=self.n_jobs,
        )


class BoostedForest:
    """A sum of random forests, each grown on the out-of-bag residuals of those before it."""

    def __init__(
        self,
        *,
        n_estimators: int,
        n_stages: int,
        min_samples_leaf: int,
        max_features: float,
        random_state: int,
        n_jobs: int | None,
    ) -> None:
        self.n_estimators = n_estimators
        self.n_stages = n_stages
        self.min_samples_leaf = min_samples_leaf
        self.max_features = max_features
        self.random_state = random_state
        self.n_jobs = n_jobs

    def fit(self, X: np.ndarray, y: np.ndarray) -> BoostedForest:
        from sklearn.ensemble import RandomForestRegressor

        residual = np.asarray(y, dtype=float).copy()
        self.stages_: list[Any] = []
        for stage in range(self.n_stages):
            last = stage == self.n_stages - 1
            forest = RandomForestRegressor(
                n_estimators=self.n_estimators,
                min_samples_leaf=self.min_samples_leaf if stage == 0 else _LATER_LEAF,
                max_features=self.max_features,
                oob_score=not last,
                random_state=self.random_state + stage,
                n_jobs=self.n_jobs,
            )
            with warnings.catch_warnings():
                # A run that no tree left out has no out-of-bag value; it keeps its residual.
                warnings.filterwarnings("ignore", message="Some inputs do not have OOB")
                forest.fit(X, residual)
            self.stages_.append(forest)
            if not last:
                residual = residual - np.nan_to_num(forest.oob_prediction_, nan=0.0)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.sum([forest.predict(X) for forest in self.stages_], axis=0)
