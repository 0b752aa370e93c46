"""Which hyperparameters matter: importance with intervals, direction and significance.

``get_param_importances(runs, target=..., goal=...)`` ranks the parameters of any MLflow runs
(``lineage.store`` records or an ``mlflow.search_runs`` frame) with a pluggable
:class:`ImportanceEvaluator`; the default, :class:`AutoImportance`, fits a Gaussian process
(:class:`GaussianProcessImportance`) or a random forest boosted by out-of-bag residuals
(:class:`RandomForestImportance`), whichever predicts held-out runs better, and scores each
parameter by cross-fitted, held-out permutation importance, with a t interval per parameter
and ``significant`` = that interval excludes zero. ``evaluator_for("auto" | "forest" | "gp")``
builds the evaluator a method name stands for; every result names the model that ran and why.
``analyze_experiment`` reads an experiment from a tracking store, ranks it, and with
``log=True`` records the analysis (plots, tables, importances as metrics) as an MLflow run
tagged ``lineage.run_type=analysis``.
"""

from __future__ import annotations

from lineage.importance._advice import (
    NEGLIGIBLE_SHARE,
    Advice,
    advise,
    rank_ranges,
    runs_to_decide,
    verdict,
)
from lineage.importance._analysis import MIN_RUNS, get_param_importances
from lineage.importance._auto import METHODS, AutoImportance, evaluator_for, model_of
from lineage.importance._base import ImportanceEvaluator, NotFittedError
from lineage.importance._correlation import CorrelationImportance
from lineage.importance._experiment import ANALYSIS_RUN_TYPE, analyze_experiment, training_runs
from lineage.importance._figures import render_importance
from lineage.importance._gaussian_process import GaussianProcessImportance
from lineage.importance._random_forest import RandomForestImportance
from lineage.importance._result import ImportanceResult, ParamImportance, format_bound, model_line
from lineage.importance._types import EncodedParams, ParamSpec, encode, infer_spec

__all__ = [
    "ANALYSIS_RUN_TYPE",
    "METHODS",
    "MIN_RUNS",
    "NEGLIGIBLE_SHARE",
    "Advice",
    "AutoImportance",
    "CorrelationImportance",
    "EncodedParams",
    "GaussianProcessImportance",
    "ImportanceEvaluator",
    "ImportanceResult",
    "NotFittedError",
    "ParamImportance",
    "ParamSpec",
    "RandomForestImportance",
    "advise",
    "analyze_experiment",
    "encode",
    "evaluator_for",
    "format_bound",
    "get_param_importances",
    "infer_spec",
    "model_line",
    "model_of",
    "rank_ranges",
    "render_importance",
    "runs_to_decide",
    "training_runs",
    "verdict",
]
