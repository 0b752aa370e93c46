"""Read MindInsight summary directories (what ``SummaryCollector`` writes) into lineage.

MindInsight is not needed: the record files are read here, with the protobuf messages
MindSpore ships. ``find_runs`` lists the training runs under a base directory, ``read_run``
turns one into the params, metrics and tags ``lineage.mindspore.LineageCallback`` records,
and ``import_summaries`` writes them into an MLflow experiment, once each.
"""

from __future__ import annotations

from lineage.mindinsight._convert import TrainingRecord, metric_name, read_run
from lineage.mindinsight._discover import SummaryRun, find_runs
from lineage.mindinsight._import import (
    ImportResult,
    import_summaries,
    record_into,
    record_summary_dir,
)
from lineage.mindinsight._records import RecordError, iter_records

__all__ = [
    "ImportResult",
    "RecordError",
    "SummaryRun",
    "TrainingRecord",
    "find_runs",
    "import_summaries",
    "iter_records",
    "metric_name",
    "read_run",
    "record_into",
    "record_summary_dir",
]
