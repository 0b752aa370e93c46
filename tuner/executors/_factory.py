"""Building the executor a campaign config asks for."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from tuner._errors import ConfigError, TunerError
from tuner.executors._base import Executor

if TYPE_CHECKING:
    from tuner.config import CampaignConfig

__all__ = ["default_executor"]


def default_executor(config: CampaignConfig, trials_dir: Path) -> Executor:
    """The executor ``config.executor`` and ``config.resources`` describe: Ray, or local
    device slots (``auto`` detects GPUs and NPUs), its trial folders under ``trials_dir``."""
    if config.executor.name == "ray":
        try:
            from tuner.executors._ray import RayExecutor
        except ImportError as exc:
            raise TunerError(f"executor.name: ray is not available here: {exc}") from None
        res = config.resources
        return RayExecutor(
            address=config.executor.address,
            kind=res.kind,
            per_trial=res.per_trial,
            parallel=res.parallel,
            preload=config.trial.preload,
            preload_env=config.env,
        )
    from tuner.executors._devices import make_slots
    from tuner.executors._local import LocalExecutor

    res = config.resources
    kind: str = res.kind
    if kind == "auto":
        from tuner.executors._devices import detect_devices

        kind, _ = detect_devices(None)
        if kind == "cpu" and res.devices != "auto":
            raise ConfigError(
                "resources.devices lists device ids but resources.kind: auto found no GPU "
                f"(nvidia-smi) or NPU (npu-smi, /dev/davinci*); set resources.kind, got "
                f"{res.devices}"
            )
    slots = make_slots(kind, res.devices, res.per_trial, res.parallel)
    # Trials get the campaign's `env:` anyway; in the base environment it also reaches the
    # warm parents, so what a library sizes at import (OMP_NUM_THREADS) is the trials'.
    base_env = {**os.environ, **config.env}
    executor = LocalExecutor(
        slots, run_dir=trials_dir, base_env=base_env, preload=config.trial.preload
    )
    workdir = str(config.workdir) if config.workdir else None
    executor.warm_up(config.command, workdir)
    return executor
