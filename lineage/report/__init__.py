"""The report of a set of runs or a study: how the search went, in pictures.

``render_report(study, directory)`` draws a study with Optuna's own visualization module
(PNG through ``optuna.visualization.matplotlib``, one interactive HTML page through plotly).
``study_from_runs(runs, targets=...)`` builds an in-memory study from MLflow runs, so any
experiment (hand-run, plain ``mlflow``, a campaign's) gets the same report;
``report_experiment`` does both from a tracking store and with ``log=True`` records the
files as an analysis run.
"""

from __future__ import annotations

from lineage.report._experiment import ARTIFACT_DIR, log_report, report_experiment, report_note
from lineage.report._render import PAGE, WARM_START_KEYS, Report, is_warm_started, render_report
from lineage.report._study import STATE_TAG, distribution_for, study_from_runs

__all__ = [
    "ARTIFACT_DIR",
    "PAGE",
    "STATE_TAG",
    "WARM_START_KEYS",
    "Report",
    "distribution_for",
    "is_warm_started",
    "log_report",
    "render_report",
    "report_experiment",
    "report_note",
    "study_from_runs",
]
