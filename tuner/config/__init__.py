"""Campaign configs: the YAML schema, its validation, and where a campaign's stores live.

>>> from tuner.config import load_config
>>> config = load_config("configs/quickstart.yaml")      # raises ConfigError (exit code 2)
>>> config.directions, config.optuna_storage_url(), config.tracking_uri()
"""

from __future__ import annotations

from tuner.config._foreign import is_mindoptimizer_config, mindoptimizer_message
from tuner.config._load import load_config, parse_config
from tuner.config._messages import config_error
from tuner.config._model import (
    BudgetConfig,
    CampaignConfig,
    CheckpointConfig,
    DiagnosisConfig,
    ExecutorConfig,
    HeartbeatConfig,
    LineageConfig,
    MetricPattern,
    Objective,
    Parameter,
    PrunerConfig,
    ResourcesConfig,
    SamplerConfig,
    TrialConfig,
    WarmStartConfig,
    WarmStartSource,
)
from tuner.config._placeholders import BUILTINS as PLACEHOLDER_BUILTINS
from tuner.config._placeholders import render as render_arg
from tuner.config._rules import module_installed
from tuner.config._scheduler import AshaConfig, PbtConfig, Perturb, SchedulerConfig
from tuner.config._spaces import space_difference, space_spec
from tuner.config._types import suggest
from tuner.config._uris import absolute_uri, explain_storage_error

__all__ = [
    "PLACEHOLDER_BUILTINS",
    "AshaConfig",
    "BudgetConfig",
    "CampaignConfig",
    "CheckpointConfig",
    "DiagnosisConfig",
    "ExecutorConfig",
    "HeartbeatConfig",
    "LineageConfig",
    "MetricPattern",
    "Objective",
    "Parameter",
    "PbtConfig",
    "Perturb",
    "PrunerConfig",
    "ResourcesConfig",
    "SamplerConfig",
    "SchedulerConfig",
    "TrialConfig",
    "WarmStartConfig",
    "WarmStartSource",
    "absolute_uri",
    "config_error",
    "explain_storage_error",
    "is_mindoptimizer_config",
    "load_config",
    "mindoptimizer_message",
    "module_installed",
    "parse_config",
    "render_arg",
    "space_difference",
    "space_spec",
    "suggest",
]
