"""The names of the tags ``lineage`` writes and reads, spelled once.

Recording (``lineage.start_run``, the MindSpore callback) writes them; ``lineage runs``,
``show`` and ``diff`` read them back. Tools built on ``lineage`` (the tuner) use these
constants rather than the strings. Three kinds:

- ``lineage.*``: what this package records about a run (identity, data, outcome);
- ``mlflow.*``: MLflow's own tags that ``lineage`` sets or reads (run name, source, parent,
  the experiment kind the MLflow UI opens on);
- names other tools write that ``lineage`` reads for display only (a tuning campaign's
  runs), so that ``lineage runs`` can pick the columns a user wants.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "CAMPAIGN",
    "CAMPAIGN_OBJECTIVES",
    "CAMPAIGN_SPACE_PREFIX",
    "CAMPAIGN_TARGET",
    "COMMAND",
    "CONFLICTS",
    "CWD",
    "DATA_PREFIX",
    "ENV",
    "ERROR",
    "EXPERIMENT_KIND",
    "EXPERIMENT_KIND_TRAINING",
    "EXPERIMENT_TARGET",
    "EXPERIMENT_TUNED",
    "FRAMEWORK_PREFIX",
    "FROZEN_PARAMS",
    "FROZEN_PARAMS_KEYS",
    "GIT_BRANCH",
    "GIT_COMMIT",
    "GIT_DIRTY",
    "GIT_ROOT",
    "HOST",
    "IDENTITY_KEYS",
    "IDENTITY_PREFIXES",
    "IMPORT_SOURCE",
    "LR_ERROR",
    "MLFLOW_PARENT_RUN_ID",
    "MLFLOW_RUN_NAME",
    "MLFLOW_SHARED_VIEW_PREFIX",
    "MLFLOW_SOURCE_GIT_BRANCH",
    "MLFLOW_SOURCE_GIT_COMMIT",
    "MLFLOW_SOURCE_GIT_REPO_URL",
    "MLFLOW_SOURCE_NAME",
    "MLFLOW_SOURCE_TYPE",
    "MLFLOW_USER",
    "NOT_IDENTITY",
    "OUTCOME",
    "PARAM_TYPES",
    "PID",
    "PLATFORM",
    "PRUNED_AT",
    "PYTHON",
    "RUN_KINDS_APART",
    "RUN_KIND_TRAINING",
    "RUN_TYPE",
    "RUN_TYPE_ANALYSIS",
    "RUN_TYPE_CAMPAIGN",
    "RUN_TYPE_RESERVED",
    "RUN_TYPE_TRIAL",
    "TAG_ALIASES",
    "TRAINABLE_PARAMS",
    "TRAINABLE_PARAMS_KEYS",
    "TRIAL_NUMBER",
    "TRIAL_STATE",
    "TRIAL_STATE_PRUNED",
    "USER",
    "data_tag",
    "framework_tag",
    "read_tag",
    "spellings",
]

# -- lineage.*: written by the recording API ---------------------------------------------------
#: JSON object: param key -> the Python type it was logged as (``lineage._params``).
PARAM_TYPES = "lineage.param_types"
GIT_COMMIT = "lineage.git.commit"
GIT_DIRTY = "lineage.git.dirty"
GIT_BRANCH = "lineage.git.branch"
GIT_ROOT = "lineage.git.root"
#: The command line, secrets masked, as a JSON list.
COMMAND = "lineage.command"
HOST = "lineage.host"
USER = "lineage.user"
PYTHON = "lineage.python"
PLATFORM = "lineage.platform"
PID = "lineage.pid"
CWD = "lineage.cwd"
#: The recorded environment variables (secrets masked), as a JSON object.
ENV = "lineage.env"
#: ``lineage.framework.<name>``: the version of each framework the script imported.
FRAMEWORK_PREFIX = "lineage.framework."
#: ``lineage.data.<name>.{path,fingerprint,size,files}``: one dataset.
DATA_PREFIX = "lineage.data."
#: FINISHED, FAILED or KILLED as this process saw it (an attached run's status is its owner's).
OUTCOME = "lineage.outcome"
ERROR = "lineage.error"
#: What a run is: ``analysis`` (importance), ``campaign`` and ``trial`` (a tuning campaign).
RUN_TYPE = "lineage.run_type"
RUN_TYPE_ANALYSIS = "analysis"
RUN_TYPE_CAMPAIGN = "campaign"
RUN_TYPE_TRIAL = "trial"
#: A trial number the tuner holds for a run that has not started yet.
RUN_TYPE_RESERVED = "reserved"
#: The kinds ``lineage runs`` lists apart from the training runs, by ``RUN_TYPE``; every
#: other run (a trial, a script's run) is of kind ``RUN_KIND_TRAINING``.
RUN_KINDS_APART = (RUN_TYPE_CAMPAIGN, RUN_TYPE_ANALYSIS, RUN_TYPE_RESERVED)
RUN_KIND_TRAINING = "training"
#: Where an imported run came from (``mindinsight``: ``lineage import-mindinsight``).
IMPORT_SOURCE = "lineage.import.source"
# -- written by the training recorders (lineage.training and its framework adapters) ---------
#: Params a recorder could not log because the script had logged another value (JSON object:
#: key -> the value not logged).
CONFLICTS = "lineage.conflicts"
#: Why the learning rate (schedule) could not be read.
LR_ERROR = "lineage.lr_error"
#: The epoch at which the tuner pruned the trial a recorder watched.
PRUNED_AT = "lineage.pruned_at"
#: The frozen weights: the count of frozen tensors (a tag) or of frozen elements (a param),
#: a JSON list of names or a comma-separated string; ``lineage diagnose`` reads tags, then
#: params.
FROZEN_PARAMS = "frozen_params"
#: The number of trainable elements (a param), or a JSON list of names.
TRAINABLE_PARAMS = "trainable_params"
#: The other names runs carry for a concept above (recorded before it had one name, or by
#: scripts that log it themselves), in the order they are read after the name itself.
TAG_ALIASES: dict[str, tuple[str, ...]] = {
    CONFLICTS: ("lineage.mindspore.conflicts", "lineage.pytorch.conflicts"),
    LR_ERROR: ("lineage.mindspore.lr_error",),
    FROZEN_PARAMS: ("lineage.frozen_params", "lineage.mindspore.frozen_params"),
    TRAINABLE_PARAMS: (
        "lineage.trainable_params",
        "lineage.mindspore.trainable_params",
        "lineage.param_count.trainable",
    ),
}


def spellings(name: str) -> tuple[str, ...]:
    """``name`` and its aliases (`TAG_ALIASES`), in the order a reader looks."""
    return (name, *TAG_ALIASES.get(name, ()))


def read_tag(values: Mapping[str, str], name: str) -> str | None:
    """The value of ``name`` in ``values`` (a run's tags or params), else of the first of
    its aliases found; None when none is there."""
    for key in spellings(name):
        if key in values:
            return values[key]
    return None


FROZEN_PARAMS_KEYS = spellings(FROZEN_PARAMS)
TRAINABLE_PARAMS_KEYS = spellings(TRAINABLE_PARAMS)


def framework_tag(name: str) -> str:
    """``lineage.framework.<name>``."""
    return f"{FRAMEWORK_PREFIX}{name}"


def data_tag(name: str, field: str) -> str:
    """``lineage.data.<name>.<field>`` (field: path, fingerprint, size, files, and from
    MindSpore pipelines and MindInsight imports kind and samples)."""
    return f"{DATA_PREFIX}{name}.{field}"


# -- mlflow.*: MLflow's own ------------------------------------------------------------------
MLFLOW_RUN_NAME = "mlflow.runName"
MLFLOW_PARENT_RUN_ID = "mlflow.parentRunId"
MLFLOW_USER = "mlflow.user"
MLFLOW_SOURCE_NAME = "mlflow.source.name"
MLFLOW_SOURCE_TYPE = "mlflow.source.type"
MLFLOW_SOURCE_GIT_COMMIT = "mlflow.source.git.commit"
MLFLOW_SOURCE_GIT_BRANCH = "mlflow.source.git.branch"
MLFLOW_SOURCE_GIT_REPO_URL = "mlflow.source.git.repoURL"
#: The experiment tag the MLflow UI (3.x) reads to open an experiment on its runs
#: (``custom_model_development``) rather than on the GenAI traces view.
EXPERIMENT_KIND = "mlflow.experimentKind"
EXPERIMENT_KIND_TRAINING = "custom_model_development"
#: The experiment-tag prefix of a view of the runs page the MLflow UI opens on
#: (``?viewStateShareKey=KEY`` reads ``mlflow.sharedViewState.KEY``): filter, order, columns,
#: expanded rows, as JSON.
MLFLOW_SHARED_VIEW_PREFIX = "mlflow.sharedViewState."

# -- what ``show`` and ``diff`` call identity ------------------------------------------------
#: Tags that say where, from what and on what a run ran.
IDENTITY_PREFIXES = ("lineage.", "mlflow.source.")
IDENTITY_KEYS = frozenset({MLFLOW_USER})
#: ``lineage.*`` tags that are bookkeeping rather than identity (or differ on every run).
NOT_IDENTITY = frozenset({PARAM_TYPES, PID, OUTCOME, ERROR, RUN_TYPE})

# -- read for display: a tuning campaign's runs (written by ``tuner``) -----------------------
#: Experiment tags a campaign sets on its experiment, so that every reader knows what the
#: experiment optimises whichever runs a query selects: the target as ``metric:goal``
#: (several objectives comma-separated, as ``CAMPAIGN_OBJECTIVES``) and the tuned
#: parameters' names, comma-separated.
EXPERIMENT_TARGET = "lineage.target"
EXPERIMENT_TUNED = "lineage.tuned"
#: On a campaign's parent run and on each of its trial runs: the campaign's name.
CAMPAIGN = "tuner.campaign"
#: Params of a campaign's parent run: ``space.<name>`` per tuned parameter, and ``target``
#: (``metric:goal``).
CAMPAIGN_SPACE_PREFIX = "space."
CAMPAIGN_TARGET = "target"
#: A multi-objective campaign's parent-run param: ``metric:goal`` pairs, comma-separated.
CAMPAIGN_OBJECTIVES = "objectives"
#: On a trial run: how the tuner judged it (COMPLETE, PRUNED, FAIL); MLflow's status of a
#: pruned trial is KILLED, which the run table shows as PRUNED.
TRIAL_STATE = "tuner.state"
TRIAL_STATE_PRUNED = "PRUNED"
#: On a trial run: its Optuna trial number. A trial run also carries the scheduler's marks
#: and its chain's attributes as tags, under the names `lineage.trials` spells (the parent
#: trial, the pause and exploit steps).
TRIAL_NUMBER = "tuner.trial_number"
