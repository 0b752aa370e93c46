"""The config sections below the top level: budget, trial, sampler, pruner, resources...

These models are the one home of every default a campaign has (``trial.grace_period`` 10 s,
``budget.max_failures`` 5, ...): code elsewhere reads ``config.trial.grace_period``, never
writes its own fallback.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from tuner.config._base import DEFAULT_PRUNER, DEFAULT_SAMPLER, PrunerName, SamplerName, _Model
from tuner.config._types import Duration, RuleError, Seconds, WholeSeconds, suggest
from tuner.search import PRUNERS, SAMPLERS

__all__ = [
    "AnalysisConfig",
    "BudgetConfig",
    "CheckpointConfig",
    "DiagnosisConfig",
    "ExecutorConfig",
    "HeartbeatConfig",
    "LineageConfig",
    "MetricPattern",
    "PrunerConfig",
    "SamplerConfig",
    "TrialConfig",
]


def _no_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise PydanticCustomError("int_type", "must be an integer")
    return value


#: An integer; YAML ``true`` is not 1 here.
Int = Annotated[int, BeforeValidator(_no_bool)]


def _preload(value: Any) -> Any:
    # true, false or a list of module names: "yes", 1 and a bare module name are refused
    # rather than read as true.
    if isinstance(value, bool):
        return value
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
        return value
    raise PydanticCustomError("preload_type", "must be true, false or a list of module names")


class BudgetConfig(_Model):
    """When the campaign stops: at the first limit reached of ``trials``, ``steps``,
    ``device_hours`` and ``timeout`` (at least one of them is set)."""

    trials: Int | None = Field(
        default=None,
        ge=1,
        description="finished trials to reach (COMPLETE + PRUNED + FAIL); a continuation "
        "counts once with the trial it continues",
    )
    steps: Int | None = Field(
        default=None,
        ge=1,
        description="reported steps (epochs) summed over every trial, continuations and "
        "retries included (a continuation's steps copied from its parent count once); no "
        "new trial starts once they are spent, and the running ones stop there",
    )
    device_hours: float | None = Field(
        default=None,
        gt=0,
        description="the devices each trial holds (resources.per_trial; a fraction counts "
        "its fraction, a CPU slot as one) times its running time, summed over every trial; "
        "no new trial starts once they are spent, and the running ones stop there",
    )
    timeout: Duration = Field(default=None, description="stop starting trials after this long")
    max_failures: Int = Field(
        default=5, ge=1, description="stop the campaign once this many trials have failed"
    )

    def limits_text(self) -> str:
        """The limits set (``timeout`` aside), as a phrase: ``2000 steps, 40 trials``."""
        parts = [f"{self.steps} steps"] if self.steps is not None else []
        if self.device_hours is not None:
            parts.append(f"{self.device_hours:g} device-hours")
        if self.trials is not None:
            parts.append(f"{self.trials} trials")
        return ", ".join(parts)

    @model_validator(mode="after")
    def _some_limit(self) -> BudgetConfig:
        limits = (self.trials, self.steps, self.device_hours, self.timeout)
        if all(limit is None for limit in limits):
            raise RuleError(
                (),
                "must set at least one of trials, steps, device_hours, timeout",
                show_value=False,
            )
        return self


class TrialConfig(_Model):
    """How each trial process is supervised."""

    timeout: Duration = Field(default=None, description="kill a trial running longer than this")
    retries: Int = Field(default=0, ge=0, description="re-runs of a failed trial, same params")
    retry_on: list[int | str] | None = Field(
        default=None,
        description="which failures are retried (default: every failure): exit codes, "
        "signal names such as SIGTERM (a preemption) or SIGKILL (an OOM kill, a lost Ray "
        "worker or node), and timeout. A retry continues from the trial's last checkpoint",
    )
    grace_period: Seconds = Field(
        default=10.0, description="seconds between SIGTERM and SIGKILL when stopping a trial"
    )
    preload: Annotated[bool | list[str], BeforeValidator(_preload)] = Field(
        default=True,
        description="start each Python trial as a fork of a warm parent per slot that "
        "imported the script's framework once: true finds the modules from the script's "
        "imports, a list adds modules, false starts every trial as a fresh process",
    )

    @field_validator("retry_on", mode="before")
    @classmethod
    def _failures(cls, retry_on: Any) -> Any:
        # Before pydantic reads the items: YAML true would otherwise become exit code 1.
        import signal

        if not isinstance(retry_on, list):
            return retry_on
        rule = "must be an exit code 1-255, a signal name (SIGTERM, ...) or timeout"
        for i, item in enumerate(retry_on):
            if isinstance(item, bool) or (isinstance(item, int) and not 1 <= item <= 255):
                raise RuleError((i,), rule, item)
            if (
                isinstance(item, str)
                and item != "timeout"
                and item not in signal.Signals.__members__
            ):
                raise RuleError((i,), rule, item)
        return retry_on

    def retries_on(self, exit_code: int | None, signal_name: str | None, timed_out: bool) -> bool:
        """Whether a failure that ended so is one ``retry_on`` retries."""
        if self.retry_on is None:
            return True
        if timed_out:
            return "timeout" in self.retry_on
        if signal_name is not None:
            return signal_name in self.retry_on
        return exit_code is not None and exit_code in self.retry_on


class SamplerConfig(_Model):
    """Which Optuna sampler proposes parameters."""

    name: SamplerName = Field(
        default=DEFAULT_SAMPLER, description="the Optuna sampler: " + "|".join(SAMPLERS)
    )
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

    name: PrunerName = Field(
        default=DEFAULT_PRUNER, description="the Optuna pruner: " + "|".join(PRUNERS)
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="keyword arguments of the Optuna pruner class"
    )


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


class CheckpointConfig(_Model):
    """Where trials keep their checkpoints (the `tuner.trial.checkpoint_dir` protocol)."""

    path: str | None = Field(
        default=None,
        description="folder for the trials' checkpoints, one subfolder per campaign and "
        "trial; a shared filesystem path when trials run on several hosts (default: "
        "checkpoints/ in the campaign's state folder beside the config)",
    )
    store: Literal["local", "shared", "mlflow"] = Field(
        default="local",
        description="local: a folder on the controller's host; shared: ``path`` on a "
        "filesystem every host mounts; mlflow: each committed checkpoint is also uploaded to "
        "the trial run's MLflow artifacts, and downloaded from there to resume",
    )
    keep: Int = Field(default=2, ge=1, description="checkpoints kept per trial (the newest)")
    every: Int = Field(
        default=1,
        ge=1,
        description="epochs between the checkpoints lineage.mindspore's LineageCallback, "
        "TrialCheckpoint and resumable_epochs save (the last epoch is always saved); "
        "trials read it from TUNER_CHECKPOINT_EVERY",
    )
    keep_finished: Int = Field(
        default=1,
        ge=0,
        description="checkpoints a trial keeps once it has ended for good (COMPLETE, FAIL "
        "with no retry left, PRUNED by the pruner; not a trial ASHA paused, nor under PBT): "
        "the newest; 0 removes its folder",
    )

    @model_validator(mode="after")
    def _shared_has_path(self) -> CheckpointConfig:
        if self.store == "shared" and not self.path:
            raise RuleError(("path",), "must be set when store is shared", show_value=False)
        return self


class HeartbeatConfig(_Model):
    """How controllers sharing a study (``tuner run`` on a server database, ``tuner worker``)
    tell each other they are alive. ``--heartbeat``/``--stale-after`` and
    ``TUNER_HEARTBEAT_INTERVAL``/``TUNER_HEARTBEAT_GRACE`` override these, in that order."""

    interval: WholeSeconds = Field(
        default=None, description="seconds between heartbeats (default 5)"
    )
    grace: WholeSeconds = Field(
        default=None,
        description="a RUNNING trial without a heartbeat for this many seconds is re-queued "
        "(default: max(30, 3 x interval))",
    )

    @model_validator(mode="after")
    def _grace_after_interval(self) -> HeartbeatConfig:
        if self.interval is not None and self.grace is not None and self.grace <= self.interval:
            raise RuleError(("grace",), f"must be > interval ({self.interval})", self.grace)
        return self


class AnalysisConfig(_Model):
    """The importance analysis a campaign runs at its end (``lineage importance``)."""

    method: str = Field(
        default="auto",
        description="the model that ranks the parameters: auto (a Gaussian process where the "
        "trials are complete, 200-500 of them and at least 8 per input column, and it "
        "predicts held-out trials at least as well as a random forest, else the forest), "
        "forest, or gp (a Gaussian process)",
    )

    @field_validator("method")
    @classmethod
    def _known_method(cls, method: str) -> str:
        # The names are lineage's (`lineage importance --method`): spelled there only.
        from lineage.importance import METHODS

        if method not in METHODS:
            raise RuleError((), f"must be one of {', '.join(METHODS)}", method)
        return method


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
        description="ids of the lineage.diagnose checks run on each ended trial over its "
        "reported values and parameters (default: all); findings go on its run's "
        "tuner.diagnosis tag, errors also into the campaign's output",
    )

    @field_validator("checks")
    @classmethod
    def _known(cls, checks: list[str]) -> list[str]:
        if not checks:
            return checks
        from lineage.diagnose import CHECKS

        for i, check in enumerate(checks):
            if check not in CHECKS:
                raise RuleError(
                    (i,),
                    "must be a check id" + suggest(check, CHECKS) + f" ({', '.join(CHECKS)})",
                    check,
                )
            if check in checks[:i]:
                raise RuleError((i,), "repeats an earlier check", check)
        return checks
