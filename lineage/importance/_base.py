"""The contract every importance evaluator fills in.

An evaluator turns an encoded design matrix (:class:`~lineage.importance._types.EncodedParams`)
and a target vector into one non-negative score per *parameter* (not per column), an interval
around it, and whether the effect is distinguishable from none. Scores need not sum to one:
:func:`lineage.importance.get_param_importances` normalizes, so evaluators only compute.
"""

from __future__ import annotations

import abc
from typing import Any, Self

import numpy as np

from lineage._errors import LineageError, UsageError
from lineage.importance._types import EncodedParams

__all__ = ["ImportanceEvaluator", "NotFittedError"]


class NotFittedError(LineageError, AttributeError):
    """A learned attribute was read before :meth:`ImportanceEvaluator.fit` was called."""


class ImportanceEvaluator(abc.ABC):
    """Scores parameters by how much of the target's variation each one accounts for.

    Subclasses follow scikit-learn's estimator contract: ``__init__`` takes keyword-only
    hyper-parameters and only stores them; :meth:`fit` validates its input, computes, sets the
    learned attributes below and returns ``self``. Reading a learned attribute before ``fit``
    raises :class:`NotFittedError`.

    Learned attributes, one entry per parameter in ``data.specs`` order:

    - ``scores_``: non-negative importance on the evaluator's own scale;
    - ``intervals_``: ``(n_params, 2)`` lower and upper bounds on the same scale;
    - ``significant_``: booleans, True when the effect is distinguishable from none at the
      evaluator's confidence level.

    ``fit`` raises :class:`~lineage.UsageError` for input it cannot analyse (mismatched
    lengths, non-finite target, no parameters). One instance must not be fitted from two
    threads at once; a fitted instance is read-only and may be shared.
    """

    scores_: np.ndarray
    intervals_: np.ndarray
    significant_: np.ndarray

    def fit(self, data: EncodedParams, y: Any) -> Self:
        target = np.asarray(y, dtype=float)
        if target.ndim != 1 or len(target) != data.X.shape[0]:
            raise UsageError(
                f"the target must be one value per run: got shape {target.shape} for "
                f"{data.X.shape[0]} runs"
            )
        if not np.all(np.isfinite(target)):
            raise UsageError(
                f"the target must be finite, got {int((~np.isfinite(target)).sum())} "
                "non-finite values"
            )
        if not data.specs:
            raise UsageError("there must be at least one parameter to rank, got none")
        scores, intervals, significant = self._fit(data, target)
        self.scores_ = np.maximum(np.asarray(scores, dtype=float), 0.0)
        self.intervals_ = np.asarray(intervals, dtype=float).reshape(len(data.specs), 2)
        self.significant_ = np.asarray(significant, dtype=bool)
        return self

    @abc.abstractmethod
    def _fit(self, data: EncodedParams, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(scores, intervals, significant)`` for validated, finite input."""

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup failed: a learned attribute read before fit().
        if name.endswith("_") and not name.startswith("_"):
            raise NotFittedError(
                f"{type(self).__name__}.{name} is set by fit(); call fit(data, y) first"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def get_params(self) -> dict[str, Any]:
        """The constructor arguments, as scikit-learn's ``get_params(deep=False)`` returns them."""
        import inspect

        names = [
            p.name
            for p in inspect.signature(type(self).__init__).parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY
        ]
        return {n: getattr(self, n) for n in names}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
