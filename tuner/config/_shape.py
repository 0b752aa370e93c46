"""What the cross-section rules read of a campaign, named as a shape of its own.

`tuner.config._model.CampaignConfig` runs the rules (`check_campaign`, the scheduler's, the
warm start's, the URIs') from its validator and its methods; the rules type their argument
with `Campaign`, which the model has, so they need not import the model back. The scheduler
and warm-start sections are read as plain objects here: their own modules narrow them to
their classes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from tuner.config._base import Objective
from tuner.config._parameter import Parameter
from tuner.config._resources import ResourcesConfig
from tuner.config._sections import (
    BudgetConfig,
    LineageConfig,
    PrunerConfig,
    SamplerConfig,
    TrialConfig,
)

__all__ = ["Campaign"]


class Campaign(Protocol):
    """A campaign as its rules read it (`CampaignConfig` has every attribute)."""

    @property
    def command(self) -> Sequence[str]: ...
    @property
    def display_name(self) -> str: ...
    @property
    def base_dir(self) -> Path: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def reads_tuner_params(self) -> bool: ...
    @property
    def target(self) -> Objective: ...
    @property
    def objectives(self) -> Sequence[Objective]: ...
    @property
    def metric_names(self) -> list[str]: ...
    @property
    def parameters(self) -> Mapping[str, Parameter]: ...
    @property
    def budget(self) -> BudgetConfig: ...
    @property
    def trial(self) -> TrialConfig: ...
    @property
    def sampler(self) -> SamplerConfig: ...
    @property
    def pruner(self) -> PrunerConfig: ...
    @property
    def resources(self) -> ResourcesConfig: ...
    @property
    def lineage(self) -> LineageConfig: ...
    @property
    def storage(self) -> str | None: ...
    @property
    def scheduler(self) -> object | None: ...
    @property
    def warm_start(self) -> object | None: ...
