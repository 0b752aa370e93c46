"""Cross-fitted permutation importance of a Gaussian-process surrogate.

Why a Gaussian process: hyperparameter responses are mostly smooth, and a forest approximates a
smooth effect by steps, spending its splits on the strongest parameters. An effect that
explains 1% of the variance next to one that explains 50% is then partly lost in the steps of
the others, and its rank against an effect of 2% or a parameter with no effect is a coin toss.
A Gaussian process with an additive kernel (main effects, pairwise interactions and an
anisotropic product term for the rest, one length scale per input column; see
:mod:`lineage.importance._additive_gp`) models the weak smooth effects as well as the strong
ones, and sends the length scales of a no-effect parameter to their upper bound, where the
model is flat in it.

The score, the interval and the test are those of
:class:`~lineage.importance._permutation.CrossFittedPermutationImportance`: each surrogate,
kernel hyper-parameters included, is fitted without the runs it scores, so a no-effect
parameter still has expectation exactly zero and the t interval keeps its meaning.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from lineage._errors import UsageError
from lineage.importance._additive_gp import KERNELS, NUS, AdditiveGaussianProcess
from lineage.importance._permutation import CrossFittedPermutationImportance
from lineage.importance._types import EncodedParams

__all__ = ["GaussianProcessImportance", "with_gaps_filled"]


def with_gaps_filled(data: EncodedParams) -> EncodedParams:
    """``data`` with each numeric gap (NaN) set to the mean of that column's present values.

    A kernel needs a number in every column; the forest routes NaN on its own. Why the mean:
    whether a conditional parameter applies at all is its parent's effect (``optimizer``
    decides whether ``momentum`` exists), and the parent's column already tells the model
    which runs lack it, so the child's filler should say nothing; the mean sits inside the
    range, where it does not stretch the length scales as a value outside it would. The
    ``missing`` masks are kept, so the permutation still draws a conditional parameter's
    values only among the runs that have it and moves its gaps with its parent.
    """
    gaps = np.isnan(data.X)
    if not gaps.any():
        return data
    X = data.X.copy()
    for c in np.flatnonzero(gaps.any(axis=0)):
        present = X[~gaps[:, c], c]
        X[gaps[:, c], c] = float(present.mean()) if len(present) else 0.0
    return replace(data, X=X)


class GaussianProcessImportance(CrossFittedPermutationImportance):
    """A Gaussian-process surrogate (additive Matern kernel + white noise), cross-fitted; each
    parameter scored by held-out permutation importance.

    A numeric parameter unset in some runs (a conditional one: ``momentum`` only with
    ``sgd``) is given its present values' mean there (see :func:`with_gaps_filled`); a
    categorical's gaps are already a level of their own.

    Every fit searches its kernel's hyper-parameters from the same starting point, never from
    where another fold's fit ended: that fit saw the runs this one holds out, and with noisy
    targets the hyper-parameters it hands on (a no-effect parameter's length scale tuned to
    that noise) made ``significant`` flag no-effect parameters in 20% of cases at 100 runs
    (nominal 2.5%; 3.3% with cold starts, ``bench_importance_power.py``).

    Parameters (keyword-only):
        n_folds, n_rounds, confidence, random_state: as for
            :class:`~lineage.importance.RandomForestImportance`.
        n_repeats: values drawn per parameter and held-out run (a prediction of the
            surrogate is cheap, so more than the forest's).
        kernel: ``"additive"`` (orders 1 and 2 plus the product term) or ``"product"`` (the
            anisotropic product kernel alone: the earlier default, fitted the same
            way as the additive one).
        nu: smoothness of the Matern kernels (0.5, 1.5, 2.5 or ``inf`` for RBF).
        n_restarts: random starts of each fit's hyper-parameter search besides the fixed one.
        max_fit_samples: a surrogate is fitted on at most this many runs (its cost grows with
            the cube of the runs); past it, as for the forest, models grow on subsamples.
    """

    def __init__(
        self,
        *,
        n_folds: int = 5,
        n_rounds: int = 2,
        n_repeats: int = 8,
        kernel: str = "additive",
        nu: float = 2.5,
        n_restarts: int = 0,
        max_fit_samples: int | None = 300,
        confidence: float = 0.95,
        random_state: int | None = 0,
    ) -> None:
        self.n_folds = n_folds
        self.n_rounds = n_rounds
        self.n_repeats = n_repeats
        self.kernel = kernel
        self.nu = nu
        self.n_restarts = n_restarts
        self.max_fit_samples = max_fit_samples
        self.confidence = confidence
        self.random_state = random_state

    def _validate(self) -> None:
        if self.kernel not in KERNELS:
            raise UsageError(
                "The 'kernel' parameter of GaussianProcessImportance must be 'additive' or "
                f"'product', got {self.kernel!r}"
            )
        if self.nu not in NUS:
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
        self._groups = data.groups
        return super().per_run_contributions(with_gaps_filled(data), y)

    def _model(self, n_train: int, seed: int) -> Any:
        return AdditiveGaussianProcess(
            self._groups,
            orders=2 if self.kernel == "additive" else 0,
            nu=self.nu,
            n_restarts=self.n_restarts,
            random_state=seed,
        )
