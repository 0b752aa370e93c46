"""What a training records, whatever the framework: the core under the recorders of
:mod:`lineage.mindspore`, :mod:`lineage.pytorch`, :mod:`lineage.lightning` and
:mod:`lineage.transformers`.

- `RecorderOptions`: the options every recorder shares (run, experiment, ``log_every``,
  ``data_sample``, ``fingerprint_data``, ``all_ranks``, ``weight_stats``, ``grad_norm``,
  ``trial``), checked once at the public entry and passed along as one frozen value;
  `RecorderOptions.records_on` is the rank gating (rank 0, or every rank with ``all_ranks``);
- `acquire_run`, `exit_status`: which run a recorder writes into and how it ends it;
- `ParamLog`: parameters logged a key at a time, a clash with a value the script logged
  kept and noted in the tag ``lineage.conflicts``;
- `WeightStats`, `weight_stats_wanted`, `global_norm`: ``weight_norm`` and ``weight_delta``;
- `metric_key`, `SAME_RANGE_OPS`, `noting_errors`, `error_line`: the data sample's metric
  names and the error-tag policy (a failed picture or sample is a tag, never a failed
  training);
- `ArtifactFolder`: the temporary folder artifacts are written through;
- `checkpoint_root`: where this process saves a trial's checkpoints (rank 0 only).

The tag names are :mod:`lineage.tags`' (one per concept; `lineage.tags.read_tag` also reads
the names older runs were recorded under). Nothing here imports a framework.
"""

from __future__ import annotations

from lineage.training._data import SAME_RANGE_OPS, error_line, metric_key, noting_errors
from lineage.training._files import ArtifactFolder
from lineage.training._options import (
    DEFAULT_SAMPLE,
    MAX_SAMPLE,
    RecorderOptions,
    Trial,
    check_params,
    sample_count,
)
from lineage.training._run import ParamLog, acquire_run, checkpoint_root, exit_status
from lineage.training._weights import (
    AUTO_WEIGHT_LIMIT,
    WeightStats,
    global_norm,
    weight_stats_wanted,
)

__all__ = [
    "AUTO_WEIGHT_LIMIT",
    "DEFAULT_SAMPLE",
    "MAX_SAMPLE",
    "SAME_RANGE_OPS",
    "ArtifactFolder",
    "ParamLog",
    "RecorderOptions",
    "Trial",
    "WeightStats",
    "acquire_run",
    "check_params",
    "checkpoint_root",
    "error_line",
    "exit_status",
    "global_norm",
    "metric_key",
    "noting_errors",
    "sample_count",
    "weight_stats_wanted",
]
