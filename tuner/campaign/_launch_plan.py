"""What launching a trial reads of a campaign, cut from its config in one place."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna

    from tuner.config import CampaignConfig, CheckpointConfig, TrialConfig

__all__ = ["HPARAM_PREFIX", "LaunchPlan"]

#: The metric series of a PBT trial's changing parameters: ``hparam/<name>``.
HPARAM_PREFIX = "hparam/"


@dataclass(frozen=True)
class LaunchPlan:
    """What the launcher reads of a campaign: how a trial's process is made and recorded."""

    #: The campaign's ``name`` (a tag on every trial run, the checkpoint subfolder).
    campaign: str
    #: The lineage store the trials log into.
    tracking_uri: str
    #: The ``trial:`` section (timeout, grace period) and the ``checkpoint:`` section.
    trial: TrialConfig
    checkpoint: CheckpointConfig
    #: The campaign's ``env:``, added to every trial's environment.
    env: Mapping[str, str]
    workdir: Path | None
    #: ``metrics:`` patterns read from a trial's output, by metric name.
    patterns: Mapping[str, re.Pattern[str]]
    #: The target metric, and the sampler's name (a tag on every trial run).
    target: str
    sampler: str
    #: Under a PBT scheduler, the parameters it perturbs (logged as ``hparam/<name>``
    #: series); None without PBT.
    perturbed: Sequence[str] | None
    #: A trial's argv for its parameters (`tuner.config.CampaignConfig.argv`).
    argv: Callable[..., list[str]]
    #: Asks an Optuna trial for its parameters (`tuner.search.sample_params`).
    sample: Callable[[optuna.Trial], dict[str, Any]]

    @classmethod
    def of(cls, config: CampaignConfig) -> LaunchPlan:
        """The plan of ``config``'s campaign. It takes the whole config because this is where
        the controller cuts out what launching a trial reads; nothing past it does."""
        from tuner.search import sample_params

        scheduler = config.scheduler
        return cls(
            campaign=config.name,
            tracking_uri=config.tracking_uri(),
            trial=config.trial,
            checkpoint=config.checkpoint,
            env=config.env,
            workdir=config.workdir,
            patterns={name: m.regex for name, m in config.metrics.items()},
            target=config.target.metric,
            sampler=config.sampler.name,
            perturbed=list(scheduler.perturb) if scheduler and scheduler.name == "pbt" else None,
            argv=config.argv,
            sample=lambda trial: sample_params(trial, config.parameters),
        )
