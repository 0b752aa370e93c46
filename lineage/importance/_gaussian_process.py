"""Cross-fitted permutation importance of a Gaussian-process surrogate.

Why a Gaussian process: hyperparameter responses are mostly smooth, and a forest approximates a
smooth effect by steps, spending its splits on the strongest parameters. An effect that
explains 1% of the variance next to one that explains 50% is then partly lost in the steps of
the others, and its rank against an effect of 2% or a parameter with no effect is a coin toss.
A Gaussian process with one length scale per input column (automatic relevance determination:
a Matern 5/2 kernel plus a white-noise term, inputs scaled to [0, 1], categoricals one-hot)
models the weak smooth effects as well as the strong ones, and sends the length scale of a
no-effect parameter to its upper bound, where the model is flat in it.

The score, the interval and the test are those of
:class:`~lineage.importance._permutation.CrossFittedPermutationImportance`: each surrogate,
kernel hyper-parameters included, is fitted without the runs it scores, so a no-effect
parameter still has expectation exactly zero and the t interval keeps its meaning.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from lineage._errors import UsageError
from lineage.importance._permutation import CrossFittedPermutationImportance
from lineage.importance._types import EncodedParams

__all__ = ["GaussianProcessImportance"]

_LENGTH_SCALE_MAX = 1e3
"""Upper bound of a length scale, on inputs scaled to [0, 1]: at it, the model is flat in that
column (a no-effect parameter's answer)."""


class GaussianProcessImportance(CrossFittedPermutationImportance):
    """A Gaussian-process surrogate (anisotropic Matern + white noise), cross-fitted; each
    parameter scored by held-out permutation importance.

    Needs every parameter set in every run (a conditional parameter's gaps have no place in a
    kernel): :class:`~lineage.importance.AutoImportance` hands such runs to the forest.

    Parameters (keyword-only):
        n_folds, n_rounds, confidence, random_state: as for
            :class:`~lineage.importance.RandomForestImportance`.
        n_repeats: values drawn per parameter and held-out run (a prediction of the
            surrogate is cheap, so more than the forest's).
        nu: smoothness of the Matern kernel (0.5, 1.5, 2.5 or ``inf`` for RBF).
        n_restarts: extra random starts of the kernel's hyper-parameter search per fit.
        max_fit_samples: a surrogate is fitted on at most this many runs (its cost grows with
            the cube of the runs); past it, as for the forest, models grow on subsamples.
    """

    def __init__(
        self,
        *,
        n_folds: int = 5,
        n_rounds: int = 2,
        n_repeats: int = 8,
        nu: float = 2.5,
        n_restarts: int = 0,
        max_fit_samples: int | None = 300,
        confidence: float = 0.95,
        random_state: int | None = 0,
    ) -> None:
        self.n_folds = n_folds
        self.n_rounds = n_rounds
        self.n_repeats = n_repeats
        self.nu = nu
        self.n_restarts = n_restarts
        self.max_fit_samples = max_fit_samples
        self.confidence = confidence
        self.random_state = random_state

    def _validate(self) -> None:
        if self.nu not in (0.5, 1.5, 2.5, float("inf")):
            raise UsageError(
                "The 'nu' parameter of GaussianProcessImportance must be 0.5, 1.5, 2.5 or inf, "
                f"got {self.nu!r}"
            )
        if not isinstance(self.n_restarts, int) or self.n_restarts < 0:
            raise UsageError(
                "The 'n_restarts' parameter of GaussianProcessImportance must be an int >= 0, "
                f"got {self.n_restarts!r}"
            )
        super()._validate()

    def per_run_contributions(self, data: EncodedParams, y: np.ndarray) -> np.ndarray:
        if any(bool(lacks.any()) for lacks in data.missing):
            gaps = [
                s.name for s, lacks in zip(data.specs, data.missing, strict=True) if lacks.any()
            ]
            raise UsageError(
                "GaussianProcessImportance needs every parameter in every run; not set in "
                f"some: {', '.join(gaps)} (use AutoImportance or RandomForestImportance)"
            )
        self._warm: list[Any] = []
        return super().per_run_contributions(data, y)

    def _model(self, n_train: int, seed: int) -> Any:
        return GaussianProcessSurrogate(
            nu=self.nu, n_restarts=self.n_restarts, random_state=seed, warm=self._warm
        )


class GaussianProcessSurrogate:
    """scikit-learn's GaussianProcessRegressor on inputs scaled to [0, 1] by the training runs.

    ``warm`` is shared by the folds of one analysis: each fold's hyper-parameter search starts
    where the previous fold's ended (the folds share most of their runs, so it converges in
    about half the steps). Only the starting point is shared; each fold's kernel is fitted on
    its own training runs.
    """

    def __init__(self, *, nu: float, n_restarts: int, random_state: int, warm: list[Any]) -> None:
        self.nu = nu
        self.n_restarts = n_restarts
        self.random_state = random_state
        self.warm = warm

    def fit(self, X: np.ndarray, y: np.ndarray) -> GaussianProcessSurrogate:
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel
        from threadpoolctl import threadpool_limits

        self.low_ = X.min(axis=0)
        span = X.max(axis=0) - self.low_
        self.span_ = np.where(span > 0, span, 1.0)
        kernel = self.warm[-1] if self.warm else (
            ConstantKernel(1.0, (1e-2, 1e2))
            * Matern(length_scale=np.full(X.shape[1], 0.5), length_scale_bounds=(1e-2, _LENGTH_SCALE_MAX),
                     nu=self.nu)
            + WhiteKernel(1e-2, (1e-6, 1.0))
        )  # fmt: skip
        self.gp_ = GaussianProcessRegressor(
            kernel=kernel,
            normalize_y=True,
            # Restarts only where the search starts cold; later folds start from its end.
            n_restarts_optimizer=0 if self.warm else self.n_restarts,
            random_state=self.random_state,
        )
        with warnings.catch_warnings(), threadpool_limits(1):
            # A length scale at its bound is the answer for a no-effect parameter, not a fault.
            warnings.filterwarnings("ignore", category=ConvergenceWarning)
            # Matrices of a few hundred rows: several BLAS threads only contend (7 times
            # the CPU time on 2 busy cores, measured).
            self.gp_.fit(self._scale(X), y)
        self.warm.append(self.gp_.kernel_)
        return self

    def _scale(self, X: np.ndarray) -> np.ndarray:
        return (X - self.low_) / self.span_

    def predict(self, X: np.ndarray) -> np.ndarray:
        with _one_thread():
            return np.asarray(self.gp_.predict(self._scale(X)))


def _one_thread() -> Any:
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1)
