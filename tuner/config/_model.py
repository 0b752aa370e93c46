"""The campaign config: pydantic models whose fields are exactly the YAML keys.

Every model forbids unknown keys, so a typo is an error, not a silently ignored setting.
Rules that involve one section live on that section's model; rules across sections
(``when`` references, sampler/parameter compatibility, command placeholders) live in
:mod:`tuner.config._rules` and run from :class:`CampaignConfig`'s validator.
"""

from __future__ import annotations

import math
import re
import shlex
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from tuner.config._types import Duration, Number, RuleError, Scalar

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
]

Goal = Literal["minimize", "maximize"]
SamplerName = Literal["tpe", "gp", "random", "cmaes", "grid", "qmc", "nsga2"]
PrunerName = Literal["median", "hyperband", "percentile", "none"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, validate_default=True)


class Objective(_Model):
    """One metric to optimize and its direction."""

    metric: str = Field(min_length=1, description="metric key, as logged by the trial")
    goal: Goal = Field(description="minimize or maximize")


class Parameter(_Model):
    """One hyperparameter of the search space."""

    type: Literal["float", "int", "categorical"] = Field(description="float, int or categorical")
    low: Number = Field(default=None, description="lower bound (float, int), inclusive")
    high: Number = Field(default=None, description="upper bound (float, int), inclusive")
    log: bool = Field(default=False, description="sample on a log scale (needs low > 0)")
    step: Number = Field(default=None, description="discretization step (float, int)")
    choices: list[Scalar] | None = Field(
        default=None, description="the values of a categorical parameter"
    )
    when: dict[str, Scalar | list[Scalar]] | None = Field(
        default=None,
        description="only sample this parameter when every named categorical parameter "
        "has the given value (or one of the listed values)",
    )

    @model_validator(mode="after")
    def _check(self) -> Parameter:
        if self.type == "categorical":
            for key in ("low", "high", "step"):
                if getattr(self, key) is not None:
                    raise RuleError(
                        (key,), "is not allowed for type: categorical", getattr(self, key)
                    )
            if self.log:
                raise RuleError(("log",), "is not allowed for type: categorical", self.log)
            if self.choices is None:
                raise RuleError(("choices",), "is required for type: categorical", show_value=False)
            if not self.choices:
                raise RuleError(("choices",), "must list at least one value", self.choices)
            for i, choice in enumerate(self.choices):
                # Optuna finds a choice with ==, so true and 1 (or 1 and 1.0) are one choice.
                if any(choice == earlier for earlier in self.choices[:i]):
                    raise RuleError(("choices", i), "repeats an earlier choice", choice)
            return self
        if self.choices is not None:
            raise RuleError(
                ("choices",), f"is only for type: categorical, not {self.type}", self.choices
            )
        if self.low is None:
            raise RuleError(("low",), f"is required for type: {self.type}", show_value=False)
        if self.high is None:
            raise RuleError(("high",), f"is required for type: {self.type}", show_value=False)
        if self.type == "int":
            for key in ("low", "high", "step"):
                value = getattr(self, key)
                if value is not None and not float(value).is_integer():
                    raise RuleError((key,), "must be an integer for type: int", value)
                if value is not None:
                    setattr(self, key, int(value))
        if not self.low < self.high:
            raise RuleError(("high",), f"must be > low ({self.low})", self.high)
        if self.log and self.low <= 0:
            raise RuleError(("low",), "must be > 0 when log: true", self.low)
        if self.step is not None:
            if self.step <= 0:
                raise RuleError(("step",), "must be > 0", self.step)
            if self.log and (self.type == "float" or self.step != 1):
                raise RuleError(
                    ("step",), f"cannot be combined with log: true for type: {self.type}", self.step
                )
            span = (self.high - self.low) / self.step
            if abs(span - round(span)) > 1e-8 * max(1.0, abs(span)):
                raise RuleError(
                    ("high",),
                    f"must be low + a whole number of steps ({self.low} + k * {self.step})",
                    self.high,
                )
        if self.type == "float":
            # After the checks, so messages show the values as written.
            self.low, self.high = float(self.low), float(self.high)
            self.step = None if self.step is None else float(self.step)
        return self

    @property
    def conditional(self) -> bool:
        return bool(self.when)

    def grid_values(self) -> list[Any] | None:
        """Every value this parameter can take, or None when it is continuous."""
        if self.type == "categorical":
            return list(self.choices or [])
        step = self.step if self.step is not None else (1 if self.type == "int" else None)
        if step is None:
            return None
        assert self.low is not None and self.high is not None
        n = round((self.high - self.low) / step)
        if self.type == "int":
            return [int(self.low) + i * int(step) for i in range(n + 1)]
        return [float(self.low + i * step) for i in range(n + 1)]


def _no_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise PydanticCustomError("int_type", "must be an integer")
    return value


#: An integer; YAML ``true`` is not 1 here.
Int = Annotated[int, BeforeValidator(_no_bool)]


class BudgetConfig(_Model):
    """When the campaign stops."""

    trials: Int = Field(ge=1, description="finished trials to reach (COMPLETE + PRUNED + FAIL)")
    timeout: Duration = Field(default=None, description="stop starting trials after this long")
    max_failures: Int = Field(
        default=5, ge=1, description="stop the campaign once this many trials have failed"
    )


class TrialConfig(_Model):
    """How each trial process is supervised."""

    timeout: Duration = Field(default=None, description="kill a trial running longer than this")
    retries: Int = Field(default=0, ge=0, description="re-runs of a failed trial, same params")
    grace_period: Duration = Field(
        default=10.0, description="seconds between SIGTERM and SIGKILL when stopping a trial"
    )


class SamplerConfig(_Model):
    """Which Optuna sampler proposes parameters."""

    name: SamplerName = Field(default="tpe", description="tpe|gp|random|cmaes|grid|qmc|nsga2")
    seed: Int | None = Field(default=None, description="seed for reproducible proposals")
    options: dict[str, Any] = Field(
        default_factory=dict, description="keyword arguments of the Optuna sampler class"
    )

    @field_validator("options")
    @classmethod
    def _no_seed(cls, options: dict[str, Any]) -> dict[str, Any]:
        if "seed" in options:
            raise RuleError(
                ("seed",), "belongs in sampler.seed, not sampler.options", options["seed"]
            )
        return options


class PrunerConfig(_Model):
    """Which Optuna pruner stops unpromising trials from their intermediate values."""

    name: PrunerName = Field(default="median", description="median|hyperband|percentile|none")
    options: dict[str, Any] = Field(
        default_factory=dict, description="keyword arguments of the Optuna pruner class"
    )


class ResourcesConfig(_Model):
    """Device slots: which devices exist and how many each trial holds."""

    kind: Literal["auto", "cpu", "gpu", "npu"] = Field(
        default="auto", description="auto: CUDA GPUs, else Ascend NPUs, else CPU slots"
    )
    devices: Literal["auto"] | list[int | str] = Field(
        default="auto", description="auto, or the device ids to use, e.g. [0, 1, 2, 3]"
    )
    per_trial: Int = Field(default=1, ge=1, description="devices each trial holds")
    parallel: Int = Field(default=1, ge=1, description="trials running at once")

    @field_validator("devices", mode="before")
    @classmethod
    def _devices(cls, value: Any) -> Any:
        if value == "auto":
            return value
        if not isinstance(value, list):
            raise PydanticCustomError("devices_type", "must be auto or a list of device ids")
        if not value:
            raise PydanticCustomError("devices_empty", "must list at least one device id")
        seen: set[str] = set()
        for i, item in enumerate(value):
            if isinstance(item, bool) or not isinstance(item, int | str) or item == "":
                raise RuleError((i,), "must be a device id (an integer or a name)", item)
            if isinstance(item, int) and item < 0:
                raise RuleError((i,), "must be >= 0", item)
            if str(item) in seen:
                raise RuleError((i,), "repeats an earlier device id", item)
            seen.add(str(item))
        return value

    @model_validator(mode="after")
    def _fits(self) -> ResourcesConfig:
        if isinstance(self.devices, list) and self.parallel * self.per_trial > len(self.devices):
            raise RuleError(
                ("parallel",),
                f"times per_trial ({self.per_trial}) must be <= the {len(self.devices)} "
                "devices listed",
                self.parallel,
            )
        return self


class MetricPattern(_Model):
    """A metric read from the trial's stdout/stderr lines."""

    pattern: str = Field(
        description="regex with one group, or a named group 'value' (and optionally 'step')"
    )

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise PydanticCustomError(
                "regex", "is not a valid regular expression ({reason})", {"reason": str(exc)}
            ) from None
        names = regex.groupindex
        if "value" not in names and regex.groups != 1:
            raise PydanticCustomError(
                "regex_groups",
                "must have exactly one group, or a named group 'value' (it has {n} groups)",
                {"n": regex.groups},
            )
        return pattern

    @property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern)


class LineageConfig(_Model):
    """Where trials are recorded (MLflow)."""

    tracking_uri: str | None = Field(
        default=None,
        description="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else "
        "sqlite:///mlflow.db in the current directory)",
    )
    experiment: str | None = Field(default=None, description="MLflow experiment (default: name)")


class ExecutorConfig(_Model):
    """Where trial processes run."""

    name: Literal["local", "ray"] = Field(default="local", description="local or ray")
    address: str | None = Field(default=None, description="Ray cluster address (ray only)")

    @model_validator(mode="after")
    def _address(self) -> ExecutorConfig:
        if self.address is not None and self.name != "ray":
            raise RuleError(("address",), "is only for name: ray", self.address)
        return self


class DiagnosisConfig(_Model):
    """Loss-curve checks applied to intermediate values while trials run."""

    early_stop: bool = Field(
        default=True, description="stop a trial whose curve is diverging (NaN, explosion)"
    )
    checks: list[str] = Field(
        default_factory=list,
        description="ids of the lineage.diagnose checks to run on each finished trial "
        "(default: all)",
    )

    @field_validator("checks")
    @classmethod
    def _known(cls, checks: list[str]) -> list[str]:
        if not checks:
            return checks
        from lineage.diagnose import CHECKS

        for i, check in enumerate(checks):
            if check not in CHECKS:
                from tuner.config._rules import suggest

                raise RuleError(
                    (i,),
                    "must be a check id" + suggest(check, CHECKS) + f" ({', '.join(CHECKS)})",
                    check,
                )
            if check in checks[:i]:
                raise RuleError((i,), "repeats an earlier check", check)
        return checks


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
        "(never run through a shell); {param} placeholders"
    )
    workdir: Path | None = Field(
        default=None, description="directory trials run in (default: the config file's)"
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
        if self.objectives and "pruner" not in self.model_fields_set:
            self.pruner = PrunerConfig(name="none")
        if self.lineage.experiment is None:
            self.lineage.experiment = self.name
        check_campaign(self)
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

    def render_command(
        self, params: dict[str, Any], *, trial: int | None = None, run_id: str | None = None
    ) -> list[str]:
        """The trial's argv: ``command`` with ``{name}`` placeholders replaced.

        ``params`` fills the parameter placeholders; ``trial`` and ``run_id`` the built-ins of
        the same names, ``{workdir}`` is the campaign's. A placeholder without a value raises
        :class:`~tuner.TunerError`. Each element stays one argument: no shell ever sees it.
        """
        from tuner.config._placeholders import render

        values: dict[str, Any] = {**params, "workdir": str(self.workdir)}
        if trial is not None:
            values["trial"] = trial
        if run_id is not None:
            values["run_id"] = run_id
        return [render(arg, values) for arg in self.command]


def _argv_item(value: Any) -> Any:
    # YAML reads `--epochs 3` as a list item 3; an argv element is text either way.
    if isinstance(value, int | float) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            return value
        return str(value)
    return value
