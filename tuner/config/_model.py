"""The campaign config: pydantic models whose fields are exactly the YAML keys.

Every model forbids unknown keys, so a typo is an error, not a silently ignored setting.
Rules that involve one section live on that section's model; rules across sections
(``when`` references, sampler/parameter compatibility, command placeholders) live in
:mod:`tuner.config._rules` and run from :class:`CampaignConfig`'s validator.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    Field,
    PrivateAttr,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from tuner.config._base import _NAME, Objective, _Model
from tuner.config._parameter import Parameter
from tuner.config._resources import ResourcesConfig
from tuner.config._scheduler import SchedulerConfig
from tuner.config._sections import (
    AnalysisConfig,
    BudgetConfig,
    CheckpointConfig,
    DiagnosisConfig,
    ExecutorConfig,
    HeartbeatConfig,
    LineageConfig,
    MetricPattern,
    PrunerConfig,
    SamplerConfig,
    TrialConfig,
)
from tuner.config._types import RuleError
from tuner.config._warm_start import WarmStartConfig, WarmStartSource
from tuner.search import NO_PRUNING

if TYPE_CHECKING:
    from tuner._errors import ConfigError

__all__ = [
    "BudgetConfig",
    "CampaignConfig",
    "DiagnosisConfig",
    "ExecutorConfig",
    "LineageConfig",
    "MetricPattern",
    "Objective",
    "Parameter",
    "PrunerConfig",
    "ResourcesConfig",
    "SamplerConfig",
    "TrialConfig",
    "WarmStartConfig",
    "WarmStartSource",
]


class CampaignConfig(_Model):
    """A tuning campaign, as read from its YAML file."""

    name: str = Field(min_length=1, description="campaign name; also the study name")
    command: Annotated[
        list[str],
        WithJsonSchema(
            {
                "anyOf": [
                    {"type": "string"},
                    {"type": "array", "items": {"type": ["string", "number"]}, "minItems": 1},
                ]
            }
        ),
    ] = Field(
        description="the trial command: a list, or a string split like a shell would "
        "(never run through a shell); {param} placeholders, {param?} for a conditional "
        "parameter (the argument, and a flag just before it, is left out when inactive)"
    )
    workdir: Path | None = Field(
        default=None, description="directory trials run in (default: the config file's)"
    )
    reads_tuner_params: bool = Field(
        default=False,
        description="the script reads its parameters from TUNER_PARAMS (or "
        "tuner.trial.params()), so a parameter no command placeholder names is not a mistake",
    )
    env: Annotated[
        dict[str, str],
        WithJsonSchema({"type": "object", "additionalProperties": {"type": ["string", "number"]}}),
    ] = Field(default_factory=dict, description="extra environment variables")
    target: Objective = Field(description="the metric to optimize")
    objectives: list[Objective] = Field(
        default_factory=list, description="further objectives (multi-objective campaign)"
    )
    parameters: dict[str, Parameter] = Field(description="the search space")
    budget: BudgetConfig
    trial: TrialConfig = Field(default_factory=TrialConfig)
    sampler: SamplerConfig = Field(default_factory=SamplerConfig)
    pruner: PrunerConfig = Field(default_factory=PrunerConfig)
    scheduler: SchedulerConfig | None = Field(
        default=None,
        description="a trial scheduler on top of checkpoints: asha (pause and promote, or "
        "stop, at rung steps) or pbt (population-based training); replaces the pruner",
    )
    resources: ResourcesConfig = Field(default_factory=ResourcesConfig)
    metrics: dict[str, MetricPattern] = Field(
        default_factory=dict, description="metrics parsed from trial output lines"
    )
    lineage: LineageConfig = Field(default_factory=LineageConfig)
    storage: str | None = Field(
        default=None, description="Optuna storage URL (default: optuna.db beside the lineage store)"
    )
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    diagnosis: DiagnosisConfig = Field(default_factory=DiagnosisConfig)
    analysis: AnalysisConfig = Field(default_factory=AnalysisConfig)
    heartbeat: HeartbeatConfig = Field(default_factory=HeartbeatConfig)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
    warm_start: WarmStartConfig | None = Field(
        default=None,
        description="earlier runs (experiments, campaigns) imported as finished trials "
        "before the first trial",
    )

    _source_path: Path | None = PrivateAttr(default=None)
    _display: str = PrivateAttr(default="config")
    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if name != name.strip():
            raise PydanticCustomError("name_space", "must not start or end with spaces")
        return name

    @field_validator("command", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                value = shlex.split(value)
            except ValueError as exc:
                raise PydanticCustomError(
                    "command_syntax",
                    "cannot be split into arguments ({reason})",
                    {"reason": str(exc)},
                ) from None
        if isinstance(value, list):
            value = [_argv_item(v) for v in value]
            if not value:
                raise PydanticCustomError("command_empty", "must name a program to run")
        return value

    @field_validator("env", mode="before")
    @classmethod
    def _env(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: _argv_item(v) for k, v in value.items()}
        return value

    @field_validator("parameters")
    @classmethod
    def _param_names(cls, params: dict[str, Parameter]) -> dict[str, Parameter]:
        if not params:
            raise PydanticCustomError("parameters_empty", "must declare at least one parameter")
        for name in params:
            if not _NAME.match(name):
                raise RuleError(
                    (name,),
                    "is not a valid parameter name (letters, digits, _ . -; not starting with a digit)",
                    name,
                )
        return params

    @model_validator(mode="after")
    def _resolve(self, info: ValidationInfo) -> CampaignConfig:
        from tuner.config._rules import check_campaign

        context = info.context or {}
        base = Path(context.get("base_dir") or Path.cwd()).resolve()
        self._base_dir = base
        if context.get("source_path"):
            self._source_path = Path(context["source_path"]).resolve()
            self._display = str(context.get("display") or context["source_path"])
        if self.workdir is None:
            self.workdir = base
        else:
            self.workdir = (base / self.workdir.expanduser()).resolve()
        if not self.workdir.is_dir():
            raise RuleError(("workdir",), "must be an existing directory", str(self.workdir))
        if (self.objectives or self.scheduler) and "pruner" not in self.model_fields_set:
            self.pruner = PrunerConfig(name=NO_PRUNING)
        if self.lineage.experiment is None:
            self.lineage.experiment = self.name
        check_campaign(self, check_options=context.get("check_options", True))
        return self

    # ----- derived values ----------------------------------------------------------------

    @property
    def source_path(self) -> Path | None:
        """The YAML file this config was read from (None when built in code)."""
        return self._source_path

    @property
    def display_name(self) -> str:
        """The config file as the user named it, for messages."""
        return self._display

    @property
    def base_dir(self) -> Path:
        """Directory relative paths in the config are resolved against (the file's)."""
        return self._base_dir

    @property
    def study_name(self) -> str:
        """The Optuna study name: the campaign ``name``."""
        return self.name

    @property
    def experiment(self) -> str:
        """The MLflow experiment trials are recorded in (``lineage.experiment`` or ``name``)."""
        return self.lineage.experiment or self.name

    @property
    def all_objectives(self) -> list[Objective]:
        """``target`` first, then ``objectives``."""
        return [self.target, *self.objectives]

    @property
    def directions(self) -> list[str]:
        """Optuna directions, one per objective: ``["minimize"]``, ``["maximize", "minimize"]``."""
        return [o.goal for o in self.all_objectives]

    @property
    def metric_names(self) -> list[str]:
        """The objective metrics, ``target`` first."""
        return [o.metric for o in self.all_objectives]

    @property
    def multi_objective(self) -> bool:
        return bool(self.objectives)

    @property
    def trial_limit(self) -> int | None:
        """The counted trials the campaign asks for: ``budget.trials``, else a PBT
        population (each member counts once), else None (another limit of ``budget`` ends
        it)."""
        from tuner.config._scheduler import PbtConfig

        if self.budget.trials is not None:
            return self.budget.trials
        if isinstance(self.scheduler, PbtConfig):
            return self.scheduler.population
        return None

    def tracking_uri(self) -> str:
        """The MLflow tracking URI, with a relative SQLite/file path made absolute.

        ``lineage.tracking_uri`` (relative paths: against the config file's directory), else
        ``$MLFLOW_TRACKING_URI``, else ``sqlite:///mlflow.db`` in the current directory, as the
        ``lineage`` CLI reads it.
        """
        from tuner.config._uris import tracking_uri

        return tracking_uri(self)

    def optuna_storage_url(self) -> str:
        """The Optuna storage URL: ``storage``, else ``optuna.db`` beside the lineage store."""
        from tuner.config._uris import optuna_storage_url

        return optuna_storage_url(self)

    def argv(
        self, values: dict[str, Any], *, trial: int | None = None, run_id: str | None = None
    ) -> list[str]:
        """The trial's argv: ``command`` with ``{name}`` and ``{name?}`` placeholders replaced.

        ``values`` holds the trial's active parameters; ``trial`` and ``run_id`` fill the
        built-ins of the same names, ``{workdir}`` is the campaign's, ``{nproc}``,
        ``{devices}`` and ``{port}`` serve a multi-device launcher. An element holding a
        ``{name?}`` whose parameter is inactive (absent from ``values``) is left out whole, and
        the option flag just before it when the element is that placeholder alone
        (``--momentum {momentum?}``); a plain ``{name}`` without a value raises
        :class:`~tuner.TunerError`. Each element stays one argument: no shell ever sees it.
        """
        from tuner.config._placeholders import free_port, render_argv

        n = self.resources.devices_per_trial
        filled: dict[str, Any] = {
            **values,
            "workdir": str(self.workdir),
            "nproc": n,
            "devices": ",".join(str(i) for i in range(n)),
        }
        if any("{port}" in arg for arg in self.command):
            filled["port"] = free_port()
        if trial is not None:
            filled["trial"] = trial
        if run_id is not None:
            filled["run_id"] = run_id
        return render_argv(self.command, filled)

    #: The name the controller calls (same as :meth:`argv`).
    render_command = argv

    def warnings(self) -> list[str]:
        """Legal but probably wrong, one line each: a parameter no command placeholder passes
        (unless ``reads_tuner_params: true``), ``trial.retry_on`` without retries, a
        ``trial.preload`` module the tuner's Python cannot find."""
        from tuner.config._rules import campaign_warnings

        return campaign_warnings(self)

    def error(self, path: Sequence[Any], rule: str, value: Any = ...) -> ConfigError:
        """A :class:`ConfigError` about ``path`` in this config's file, phrased like every
        other (for checks made after loading: the Optuna constructors, the stores)."""
        from tuner.config._messages import config_error

        return config_error(self, path, rule, value)


def _argv_item(value: Any) -> Any:
    # YAML reads `--epochs 3` as a list item 3; an argv element is text either way.
    if isinstance(value, int | float) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            return value
        return str(value)
    return value
