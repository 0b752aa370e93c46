"""Names of what the tuner stores on Optuna trials and studies (beside params and values).

The trial attributes, and the rules over them, are `lineage.trials` (the reports and ``lineage
runs`` read them too, and ``lineage`` cannot import the tuner); they are named here again for
the tuner's modules. The study attributes are the tuner's own. User attributes are meant for
people (``study.trials_dataframe()`` shows them); system attributes (``tuner:`` prefix) are
bookkeeping.
"""

from __future__ import annotations

from lineage.trials import (
    ATTEMPT_ATTR,
    ENQUEUED_FROM_ATTR,
    EXPLOIT_ATTR,
    EXPLOITED_ATTR,
    EXPLORING_ATTR,
    FAIL_ATTR,
    FAILED_ATTEMPT,
    FIRST_TRIAL_ATTR,
    IMPORTED_ATTR,
    IMPORTED_FROM_ATTR,
    LAUNCH_ATTR,
    MEMBER_ATTR,
    OWNER_ATTR,
    PARENT_ATTR,
    PAUSED_ATTR,
    PROMOTED_FROM_ATTR,
    PRUNE_ATTR,
    RERUN_OF_ATTR,
    RESUMED_STEP_ATTR,
    RETRY_HISTORY_ATTR,
    RETRY_OF_ATTR,
    RETRY_OF_USER_ATTR,
    STALE_ATTR,
    STEERED_ATTR,
    SUPERSEDES_ATTR,
    SYSTEM_PREFIX,
)

__all__ = [
    "ATTEMPT_ATTR",
    "ENQUEUED_FROM_ATTR",
    "EXPLOITED_ATTR",
    "EXPLOIT_ATTR",
    "EXPLORING_ATTR",
    "FAILED_ATTEMPT",
    "FAIL_ATTR",
    "FIRST_TRIAL_ATTR",
    "IMPORTED_ATTR",
    "IMPORTED_FROM_ATTR",
    "LAUNCH_ATTR",
    "MEMBER_ATTR",
    "OWNER_ATTR",
    "PARENT_ATTR",
    "PARENT_RUN_ATTR",
    "PAUSED_ATTR",
    "PROMOTED_FROM_ATTR",
    "PRUNE_ATTR",
    "RERUN_OF_ATTR",
    "RESUMED_STEP_ATTR",
    "RETRY_HISTORY_ATTR",
    "RETRY_OF_ATTR",
    "RETRY_OF_USER_ATTR",
    "SAMPLER_STARTS_ATTR",
    "SPACE_ATTR",
    "SPACE_CHANGES_ATTR",
    "STALE_ATTR",
    "STEERED_ATTR",
    "SUPERSEDES_ATTR",
    "SYSTEM_PREFIX",
    "WARM_START_ATTR",
]

# ----- user attributes of the study ----------------------------------------------------------
#: The campaign's parent MLflow run, reused by every later controller of the study.
PARENT_RUN_ATTR = "mlflow_parent_run_id"
#: What ``warm_start:`` imported, once (``{"imported", "skipped", "enqueued"}``): a study
#: that has it is never imported into again (`tuner resume`, a second `tuner run`).
WARM_START_ATTR = "tuner.warm_start"
#: The search space the study was last run with (``{name: parameter as in the YAML}``).
SPACE_ATTR = "tuner.space"
#: Every accepted change of the space (``--allow-space-change``): ``[{"at", "change"}]``.
SPACE_CHANGES_ATTR = "tuner.space_changes"
#: How many controllers have opened the study with a seeded sampler: the first uses
#: ``sampler.seed``, each later one (a resume, another worker) a seed derived from it.
SAMPLER_STARTS_ATTR = "tuner.sampler_starts"
