"""The names of the MLflow tags a campaign writes, spelled once.

``tuner.*`` tags are the tuner's own; the ``lineage.*`` and ``mlflow.*`` ones it shares with
``lineage`` come from `lineage.tags`, so ``lineage runs``, ``show`` and ``diff`` read what
the tuner wrote. Every run of a campaign (parent, trials, reserved) carries `CAMPAIGN`.
"""

from __future__ import annotations

from lineage.tags import (
    CAMPAIGN,
    COMMAND,
    EXPERIMENT_TARGET,
    EXPERIMENT_TUNED,
    MLFLOW_PARENT_RUN_ID,
    MLFLOW_RUN_NAME,
    RUN_TYPE,
    RUN_TYPE_CAMPAIGN,
    RUN_TYPE_TRIAL,
    TRIAL_NUMBER,
    TRIAL_STATE,
)
from lineage.trials import ATTEMPT_ATTR, PLACEMENT_ATTR

__all__ = [
    "ATTEMPT",
    "BEST_NUMBER",
    "BEST_VALUE",
    "CAMPAIGN",
    "COMMAND",
    "CONFIG_PATH",
    "COUNT_PREFIX",
    "DEVICE",
    "DEVICE_HOURS",
    "DEVICE_NEIGHBOURS",
    "DEVICE_PEAK_MEMORY",
    "DIAGNOSIS",
    "DURATION",
    "ENV_PREFIX",
    "ERROR",
    "EXIT_CODE",
    "EXPERIMENT_TARGET",
    "EXPERIMENT_TUNED",
    "FAIL_REASON",
    "MLFLOW_PARENT_RUN_ID",
    "MLFLOW_RUN_NAME",
    "OCCUPANCY_PREFIX",
    "PARETO_FRONT",
    "PARETO_NUMBERS",
    "PARETO_SIZE",
    "PLACEMENT_ATTR",
    "PRUNE_REASON",
    "RETRIED_AS",
    "RUN_TYPE",
    "RUN_TYPE_CAMPAIGN",
    "RUN_TYPE_RESERVED",
    "RUN_TYPE_TRIAL",
    "SAMPLER",
    "SIGNAL",
    "SPACE_CHANGE",
    "SPACE_CHANGE_PARAM_PREFIX",
    "STATE",
    "STOP_REASON",
    "STORAGE",
    "STUDY",
    "TRIAL_COMMAND",
    "TRIAL_NUMBER",
    "VALUE_PREFIX",
    "WARM_START",
]

#: A child run created ahead for the next trial (deleted when no trial used it).
RUN_TYPE_RESERVED = "reserved"

# ----- a trial run -----------------------------------------------------------------------------
ATTEMPT = ATTEMPT_ATTR
SAMPLER = "tuner.sampler"
DEVICE = "tuner.device"
#: The most other trials that shared the trial's device at once, and its peak device memory
#: (MiB, as the driver measured its processes); on the trial run, and in the Optuna trial's
#: ``PLACEMENT_ATTR`` user attribute ``{"device", "neighbours", "peak_memory_mib",
#: "packed_oom", "started", "duration"}`` (``packed_oom``: it ran out of device memory beside
#: other trials; a resumed campaign's packing recalls it).
DEVICE_NEIGHBOURS = "tuner.device.neighbours"
DEVICE_PEAK_MEMORY = "tuner.device.peak_memory_mib"
#: The campaign's device-hours (each device's time with at least one trial on it, summed) and
#: each device's mean occupancy (trials on it at once, averaged over that time).
DEVICE_HOURS = "tuner.device_hours"
OCCUPANCY_PREFIX = "tuner.occupancy."
#: The trial's command line, secrets masked (also under `COMMAND`, lineage's own name).
TRIAL_COMMAND = "tuner.command"
#: ``tuner.env.<NAME>``: the campaign's ``env`` entries, secrets masked.
ENV_PREFIX = "tuner.env."
#: On the campaign's run: what a ``compare: auto`` warm start measured and chose, per source,
#: and the parameters whose best trials sit at a bound of their range (one line each).
WARM_START_DECISION = "tuner.warm_start_decision"
AT_BOUNDS = "tuner.at_bounds"
#: RUNNING, then COMPLETE, PRUNED or FAIL.
STATE = TRIAL_STATE
DURATION = "tuner.duration_s"
EXIT_CODE = "tuner.exit_code"
SIGNAL = "tuner.signal"
PRUNE_REASON = "tuner.prune_reason"
FAIL_REASON = "tuner.fail_reason"
#: On a failed attempt that was run again: the number of the trial that re-runs it.
RETRIED_AS = "tuner.retried_as"
#: What the campaign's ``diagnosis.checks`` found on an ended attempt's reported values and
#: parameters: ``check (severity): summary`` entries joined by ``"; "``. Absent when healthy.
DIAGNOSIS = "tuner.diagnosis"
#: ``tuner.value.<metric>``: the objective values of a COMPLETE trial.
VALUE_PREFIX = "tuner.value."

# ----- the campaign's parent run ------------------------------------------------------------
STUDY = "tuner.study"
STORAGE = "tuner.storage"
CONFIG_PATH = "tuner.config_path"
#: ``tuner.count.<STATE>``: trials by final state when the campaign stopped.
COUNT_PREFIX = "tuner.count."
BEST_NUMBER = "tuner.best.number"
BEST_VALUE = "tuner.best.value"
STOP_REASON = "tuner.stop_reason"
#: Why the controller failed (its own error, or closing the campaign's runs failed).
ERROR = "tuner.error"
#: A multi-objective campaign's Pareto front: its size, trial numbers and values (JSON).
PARETO_SIZE = "tuner.pareto.size"
PARETO_NUMBERS = "tuner.pareto.numbers"
PARETO_FRONT = "tuner.pareto.front"
#: The last accepted change of the search space (``--allow-space-change``), one line; each
#: change is also a param ``space_change.<n>`` of the campaign's run.
SPACE_CHANGE = "tuner.space_change"
SPACE_CHANGE_PARAM_PREFIX = "space_change."
#: What ``warm_start:`` imported into the campaign's study: the two lines `tuner run` printed.
WARM_START = "tuner.warm_start"
