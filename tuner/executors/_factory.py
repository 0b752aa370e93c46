"""Building the executor a campaign config asks for."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tuner._errors import ConfigError, TunerError
from tuner.executors._base import Executor

if TYPE_CHECKING:
    from tuner.config import ExecutorConfig, ResourcesConfig
    from tuner.executors._packing import Packing

__all__ = ["default_executor"]


def default_executor(
    executor: ExecutorConfig,
    resources: ResourcesConfig,
    trials_dir: Path,
    *,
    command: Sequence[str],
    workdir: Path | None,
    env: Mapping[str, str],
    preload: bool | Sequence[str],
) -> Executor:
    """The executor the ``executor`` and ``resources`` sections describe: Ray, or local
    device slots (``auto`` detects GPUs and NPUs), its trial folders under ``trials_dir``.

    ``command`` (placeholders unfilled), ``workdir``, ``env`` (the campaign's ``env:``) and
    ``preload`` (``trial.preload``) are what every trial runs: the warm parents start for
    them before the first trial is asked for."""
    if executor.name == "ray":
        try:
            from tuner.executors._ray import RayExecutor
        except ImportError as exc:
            raise TunerError(f"executor.name: ray is not available here: {exc}") from None
        # Shared devices without a parallel: as many as the cluster's devices hold.
        shared = resources.trials_per_device != 1 and not resources.parallel_given
        return RayExecutor(
            address=executor.address,
            kind=resources.kind,
            per_trial=resources.per_trial,
            parallel=None if shared else resources.parallel,
            packing=_packing(resources),
            preload=preload,
            preload_env=env,
        )
    from tuner.executors._devices import slots_for
    from tuner.executors._local import LocalExecutor

    kind: str = resources.kind
    if kind == "auto":
        from tuner.executors._devices import detect_devices

        kind, _ = detect_devices(None)
        if kind == "cpu" and resources.devices != "auto":
            raise ConfigError(
                "resources.devices lists device ids but resources.kind: auto found no GPU "
                f"(nvidia-smi) or NPU (npu-smi, /dev/davinci*); set resources.kind, got "
                f"{resources.devices}"
            )
    slots = slots_for(resources, kind)
    packing = _packing(resources) if kind != "cpu" else None
    # Trials get the campaign's `env:` anyway; in the base environment it also reaches the
    # warm parents, so what a library sizes at import (OMP_NUM_THREADS) is the trials'.
    base_env = {**os.environ, **env}
    local = LocalExecutor(
        slots, run_dir=trials_dir, base_env=base_env, preload=preload, packing=packing
    )
    local.warm_up(command, str(workdir) if workdir else None)
    return local


def _packing(resources: ResourcesConfig) -> Packing | None:
    """The memory policy of ``per_trial: auto`` (None for any other ``per_trial``)."""
    if resources.per_trial != "auto":
        return None
    from tuner.executors._packing import Packing

    return Packing(memory_params=resources.memory_params)
