"""The default evaluator: the Gaussian process or the forest, whichever predicts better.

Both are scored the same way (cross-fitted held-out permutation importance, Student's t
interval, significant = the interval's lower end above zero; see
:mod:`lineage.importance._permutation`), so the choice changes the model, never the meaning of
a score, an interval or ``significant``. The choice is by R² on runs the model did not see:
the Gaussian process's cross-fitted R² against a forest's out-of-bag R², the forest grown only
where the Gaussian process's is below 0.98 (above it no forest came near; see
``_FOREST_CANNOT_BEAT``).

Why not always the Gaussian process: its cost grows with the cube of the runs (the forest
keeps 10,000 runs x 20 parameters to seconds), conditional parameters leave gaps, which the
forest routes on its own where the Gaussian process needs them filled (``--method gp`` fills
them with the present values' mean), and a response with steps or kinks is a forest's shape,
not a smooth one's.
"""

from __future__ import annotations

import warnings

import numpy as np

from lineage._errors import UsageError
from lineage.importance._base import ImportanceEvaluator
from lineage.importance._gaussian_process import GaussianProcessImportance
from lineage.importance._permutation import _interval_and_test
from lineage.importance._random_forest import RandomForestImportance
from lineage.importance._types import EncodedParams

__all__ = ["METHODS", "AutoImportance", "evaluator_for", "model_of"]

METHODS = ("auto", "forest", "gp")
"""The names ``--method`` and a campaign's ``analysis.method`` take."""

_FOREST_CANNOT_BEAT = 0.98
"""A Gaussian process whose held-out R² is at least this keeps the choice without a forest
being grown to compare. The forest's out-of-bag R² was 0.53-0.96 on the 19 smooth cases of
``bench_importance.py`` (200 runs, 2 seeds each; 0.96 on ``linear``, where the Gaussian
process's was 1.0000): a forest approximates smooth effects by steps. Growing it cost 2-3 s
of a 9 s CLI call, most of it importing scikit-learn."""


class AutoImportance(ImportanceEvaluator):
    """:class:`GaussianProcessImportance` where it predicts held-out runs at least as well as a
    random forest, :class:`RandomForestImportance` otherwise.

    Parameters (keyword-only):
        min_gp_runs: below this many runs, the forest without comparison. The Gaussian
            process fitted on fewer runs follows chance associations closely enough that its
            cross-fitted scores of a no-effect parameter are dependent across folds, and the
            t test's false-positive rate rose above its nominal 2.5%: 3-5% at 60-100 runs,
            where the forest's stayed at or below 2% (``bench_importance_power.py``; see
            :mod:`lineage.importance._permutation`). At 200 runs the Gaussian process's test
            held its level.
        max_gp_runs: above this many runs, the forest without comparison (the additive
            Gaussian process took 4 s of CPU at 500 runs x 10 parameters and 8.5 s at 1,000,
            its fits capped at 300 runs; the forest 2-3 s).
        runs_per_column: the Gaussian process is tried only with at least this many runs per
            input column (length scales per column; a 30-level categorical is 30 columns):
            with 160 runs for 32 columns a no-effect integer came out significant, and 200
            runs for 28 columns took 24 s of CPU (the forest: 2 s; product kernel).
        confidence: the two-sided level of the intervals (both models).
        random_state: seed for the folds, the draws and the models.

    Learned attributes, besides those of every evaluator: ``model_`` (``"gaussian process"``
    or ``"random forest"``), ``cv_r2_`` (the chosen model's R² on held-out runs), ``r2_``
    (each candidate's held-out R², by name; the forest's only where one was grown) and
    ``reason_`` (one line: why that model).
    """

    def __init__(
        self,
        *,
        min_gp_runs: int = 200,
        max_gp_runs: int = 500,
        runs_per_column: int = 8,
        confidence: float = 0.95,
        random_state: int | None = 0,
    ) -> None:
        self.min_gp_runs = min_gp_runs
        self.max_gp_runs = max_gp_runs
        self.runs_per_column = runs_per_column
        self.confidence = confidence
        self.random_state = random_state

    def _fit(self, data: EncodedParams, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not 0.0 < self.confidence < 1.0:
            raise UsageError(
                f"The 'confidence' parameter of AutoImportance must be in (0, 1), "
                f"got {self.confidence!r}"
            )
        n = data.X.shape[0]
        complete = not any(bool(lacks.any()) for lacks in data.missing)
        self.r2_: dict[str, float] = {}
        needed = max(self.min_gp_runs, self.runs_per_column * data.X.shape[1])
        if not complete:
            self.reason_ = (
                "a parameter is unset in some runs: the forest routes the gaps on its own "
                "(--method gp fills them)"
            )
        elif n < needed:
            self.reason_ = (
                f"{n} runs: the Gaussian process is tried from {needed} "
                f"({self.runs_per_column} per input column, at least {self.min_gp_runs})"
            )
        elif n > self.max_gp_runs:
            self.reason_ = f"{n} runs: the Gaussian process is tried up to {self.max_gp_runs}"
        if complete and needed <= n <= self.max_gp_runs:
            gp = GaussianProcessImportance(
                confidence=self.confidence, random_state=self.random_state
            )
            contributions = gp.per_run_contributions(data, y)
            self.r2_["gaussian process"] = gp.cv_r2_
            if gp.cv_r2_ < _FOREST_CANNOT_BEAT:
                self.r2_["random forest"] = _forest_oob_r2(data.X, y, self.random_state or 0)
            forest_r2 = self.r2_.get("random forest")
            if forest_r2 is None:
                self.reason_ = (
                    f"the Gaussian process's held-out R² is {gp.cv_r2_:.3f}, at least "
                    f"{_FOREST_CANNOT_BEAT}, where no forest comes near; no forest grown"
                )
            else:
                better = "Gaussian process" if gp.cv_r2_ >= forest_r2 else "forest"
                self.reason_ = (
                    f"the {better} predicts held-out runs better (R² {gp.cv_r2_:.3f} against "
                    f"{forest_r2:.3f} for the forest)"
                )
            if gp.cv_r2_ >= self.r2_.get("random forest", -np.inf):
                self.model_ = "gaussian process"
                self.cv_r2_ = gp.cv_r2_
                return _interval_and_test(contributions, self.confidence)
        forest = RandomForestImportance(confidence=self.confidence, random_state=self.random_state)
        contributions = forest.per_run_contributions(data, y)
        self.model_ = "random forest"
        self.cv_r2_ = forest.cv_r2_
        self.r2_.setdefault("random forest", forest.cv_r2_)
        return _interval_and_test(contributions, self.confidence)


def _forest_oob_r2(X: np.ndarray, y: np.ndarray, seed: int) -> float:
    from sklearn.ensemble import RandomForestRegressor

    forest = RandomForestRegressor(
        n_estimators=64, min_samples_leaf=2, oob_score=True, random_state=seed
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Some inputs do not have OOB")
        forest.fit(X, y)
    return float(forest.oob_score_)


def evaluator_for(method: str, *, random_state: int | None = 0) -> ImportanceEvaluator:
    """The evaluator a method name stands for: ``auto`` (:class:`AutoImportance`),
    ``forest`` (:class:`RandomForestImportance`) or ``gp`` (:class:`GaussianProcessImportance`).

    Args:
        method: ``auto``, ``forest`` or ``gp`` (what ``lineage importance --method`` takes).
        random_state: seed of the models' randomness (None: a fresh one each time).

    Returns:
        An unfitted evaluator.

    Raises:
        UsageError: another method name (exit 2).
    """
    if method == "auto":
        return AutoImportance(random_state=random_state)
    if method == "forest":
        return RandomForestImportance(random_state=random_state)
    if method == "gp":
        return GaussianProcessImportance(random_state=random_state)
    raise UsageError(f"method must be one of {', '.join(METHODS)}, got {method!r}")


def model_of(evaluator: ImportanceEvaluator) -> tuple[str, str, dict[str, float]]:
    """A fitted evaluator's model in words, why it ran, and each candidate's held-out R².

    Args:
        evaluator: an evaluator after :func:`get_param_importances` fitted it.

    Returns:
        ``(model, why, r2)``: the model's name in words, why it was used, and the held-out R² of
        each candidate model.
    """
    r2 = getattr(evaluator, "r2_", None)
    cv_r2 = getattr(evaluator, "cv_r2_", None)
    if isinstance(evaluator, AutoImportance):
        return evaluator.model_, f"auto: {evaluator.reason_}", dict(r2 or {})
    if isinstance(evaluator, RandomForestImportance):
        name = "random forest"
    elif isinstance(evaluator, GaussianProcessImportance):
        name = "gaussian process"
    else:
        name = type(evaluator).__name__
    scores = {name: float(cv_r2)} if cv_r2 is not None else {}
    return name, "asked for", scores
