"""What a set of earlier runs predicts at the campaign's own trials, for ``compare: auto``.

Trust in earlier runs is earned from the campaign's own trials: their values are compared
with what the earlier runs say of the same configurations. A trial that re-runs an earlier
configuration compares with that run's recorded value; any other trial with the prediction of
a Gaussian process fitted to the source's runs (scikit-learn's ``GaussianProcessRegressor``,
a Matern kernel with one length scale per coordinate, and a noise term). A prediction, unlike
the value of the nearest earlier run, follows the earlier landscape between the runs, so a
trial far from every earlier run (the random first trials, an exploring trial) still says
whether the two tasks agree there.

A configuration is encoded over the study's distributions: a number scaled to [0, 1] (on the
log scale for a log range), a categorical one-hot, scaled so that two choices are 1 apart; a
parameter a trial lacks (a conditional one) sits at the middle of its range, or on no choice.
The model of a source depends on its runs only, so it is fitted once and kept. A Gaussian
process costs the cube of its runs: a source of more than `MAX_FIT` runs is modelled from
that many of them, picked evenly over their order by value (its best and its worst among
them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from optuna.trial import FrozenTrial

__all__ = ["MAX_FIT", "SEEN", "PriorModel"]

#: The most runs of one source the model is fitted to.
MAX_FIT = 300
#: The best runs a parameter's effect is measured around (`PriorModel.effects`).
TOP = 5
#: Values of a numeric parameter its effect is measured at.
SWEEP = 9
#: The effect (in spreads of the source's values) under which a source is taken to have
#: found a parameter not to matter.
SEEN = 0.1


def _spread(values: list[float]) -> float:
    """The interquartile range of ``values`` (their range when it is zero; 1 when that is)."""
    ordered = sorted(values)
    n = len(ordered)
    if not n:
        return 1.0
    q1, q3 = ordered[n // 4], ordered[(3 * n) // 4 if n > 1 else 0]
    spread = q3 - q1
    return spread if spread > 0 else (max(ordered) - min(ordered)) or 1.0


def _space(trials: Sequence[FrozenTrial]) -> dict[str, BaseDistribution]:
    space: dict[str, BaseDistribution] = {}
    for t in trials:
        for name, dist in t.distributions.items():
            space.setdefault(name, dist)
    return dict(sorted(space.items()))


def _encode(trial: FrozenTrial, space: dict[str, BaseDistribution]) -> list[float]:
    return _encode_params(trial.params, space)


def _encode_params(params: Mapping[str, Any], space: dict[str, BaseDistribution]) -> list[float]:
    from optuna.distributions import CategoricalDistribution

    row: list[float] = []
    for name, dist in space.items():
        value = params.get(name)
        if isinstance(dist, CategoricalDistribution):
            row += [math.sqrt(0.5) * (value == c and value is not None) for c in dist.choices]
            continue
        low, high = float(dist.low), float(dist.high)  # type: ignore[attr-defined]
        if value is None or high <= low:
            row.append(0.5)
            continue
        v = float(value)
        if dist.log and low > 0 and v > 0:  # type: ignore[attr-defined]
            low, high, v = math.log(low), math.log(high), math.log(v)
        row.append((v - low) / (high - low))
    return row


class PriorModel:
    """A Gaussian process over one source's runs (``members``, their first objective signed
    by ``sign`` so lower is better); `predict` gives its values at other trials."""

    def __init__(self, members: Sequence[FrozenTrial], sign: float) -> None:
        self.space = _space(members)
        self._fitted: Any = None
        if len(members) > MAX_FIT:
            ordered = sorted(members, key=lambda t: sign * t.values[0])
            step = (len(ordered) - 1) / (MAX_FIT - 1)
            members = [ordered[round(i * step)] for i in range(MAX_FIT)]
        #: The runs the model was fitted to.
        self.fitted_runs = len(members)
        y = [sign * t.values[0] for t in members]
        self._best = [t.params for t in sorted(members, key=lambda t: sign * t.values[0])[:TOP]]
        self._scale = _spread(y)
        self._effects: dict[str, float] | None = None
        self._mean = sum(y) / len(y) if y else 0.0
        if len(y) < 2 or max(y) == min(y):
            return
        import numpy as np
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

        X = np.array([_encode(t, self.space) for t in members])
        kernel = ConstantKernel(1.0, (1e-2, 1e2)) * Matern(
            length_scale=np.full(X.shape[1], 0.3), length_scale_bounds=(1e-2, 1e2), nu=2.5
        ) + WhiteKernel(1e-2, (1e-6, 1.0))
        try:
            import warnings

            with warnings.catch_warnings():  # a length scale at its bound is no error here
                warnings.simplefilter("ignore")
                model = GaussianProcessRegressor(kernel, normalize_y=True, random_state=0)
                self._fitted = model.fit(X, np.array(y))
        except (ValueError, np.linalg.LinAlgError):
            self._fitted = None

    def predict(self, trials: Sequence[FrozenTrial]) -> list[float]:
        """The source's (signed) value at each of ``trials``' configurations."""
        if self._fitted is None or not trials:
            return [self._mean] * len(trials)
        import numpy as np

        X = np.array([_encode(t, self.space) for t in trials])
        return [float(v) for v in self._fitted.predict(X)]

    def effects(self) -> dict[str, float]:
        """Per parameter, how much the source's value moves with that parameter alone, in
        units of the spread of its values (their interquartile range): the model's predictions
        with the parameter swept over its range (every choice, or `SWEEP` evenly spaced
        values on its scale) and the rest held at one of the `TOP` best runs, the largest
        minus the smallest, averaged over those runs. A parameter the source's value does not
        depend on (an effect under `SEEN`) tells nothing of where it is best."""
        if self._effects is None:
            self._effects = {name: self._effect(name) for name in self.space}
        return self._effects

    def _effect(self, name: str) -> float:
        if self._fitted is None or not self._best:
            return 0.0
        import numpy as np
        from optuna.distributions import CategoricalDistribution

        dist = self.space[name]
        if isinstance(dist, CategoricalDistribution):
            values: list[Any] = list(dist.choices)
        else:
            low, high = float(dist.low), float(dist.high)  # type: ignore[attr-defined]
            if dist.log and low > 0:  # type: ignore[attr-defined]
                values = [math.exp(v) for v in np.linspace(math.log(low), math.log(high), SWEEP)]
            else:
                values = list(np.linspace(low, high, SWEEP))
        spans = []
        for best in self._best:
            X = np.array([_encode_params({**best, name: v}, self.space) for v in values])
            predicted = self._fitted.predict(X)
            spans.append(float(predicted.max() - predicted.min()))
        return sum(spans) / len(spans) / self._scale
