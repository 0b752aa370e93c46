"""The checks `lineage.pytorch.watch` makes of its arguments before anything is recorded,
each refusal one `UsageError` naming the argument, the rule and the value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from lineage._errors import UsageError

__all__ = ["DEFAULT_SAMPLE", "check_arguments", "flag", "sample_count", "unwrap"]

#: Rows drawn when ``data_sample=True``.
DEFAULT_SAMPLE = 16


def unwrap(optimizer: Any) -> Any:
    """The torch optimizer inside accelerate's AcceleratedOptimizer or Lightning's
    LightningOptimizer (its hooks and hyperparameters live on the inner one)."""
    seen = 0
    while type(optimizer).__name__ != "Optimizer" and seen < 4:
        inner = getattr(optimizer, "optimizer", None)
        if not isinstance(inner, torch.optim.Optimizer):
            break
        optimizer, seen = inner, seen + 1
    return optimizer


def sample_count(value: Any) -> int:
    if value is True:
        return DEFAULT_SAMPLE
    if value is False or value is None:
        return 0
    if isinstance(value, int) and 1 <= value <= 256:
        return value
    raise UsageError(f"data_sample must be True, False or an int in [1, 256], got {value!r}")


def flag(name: str, value: Any, *, none: bool = False) -> None:
    if isinstance(value, bool) or (none and value is None):
        return
    rule = "True, False or None" if none else "True or False"
    raise UsageError(f"{name} must be {rule}, got {value!r}")


def check_arguments(
    model: Any,
    optimizer: Any,
    *,
    scheduler: Any,
    loader: Any,
    scaler: Any,
    run: Any,
    experiment: Any,
    trial: Any,
    params: Any,
) -> None:
    """Raise `UsageError` naming the first argument of `lineage.pytorch.watch` that is not
    what it must be (the settings `Watcher` checks itself), before anything is recorded."""

    def refuse(name: str, rule: str, value: Any) -> None:
        raise UsageError(f"{name} must be {rule}, got {type(value).__name__} {value!r:.200}")

    if model is not None and not isinstance(model, torch.nn.Module):
        refuse("model", "a torch.nn.Module or None", model)
    if optimizer is not None and not isinstance(unwrap(optimizer), torch.optim.Optimizer):
        refuse("optimizer", "a torch.optim.Optimizer or None", optimizer)
    if scheduler is not None and not callable(getattr(scheduler, "step", None)):
        refuse("scheduler", "an lr scheduler (with a step method) or None", scheduler)
    if loader is not None and not hasattr(loader, "__iter__"):
        refuse("loader", "an iterable (a torch DataLoader) or None", loader)
    if scaler is not None and not callable(getattr(scaler, "is_enabled", None)):
        refuse("scaler", "a torch.amp.GradScaler or None", scaler)
    if run is not None and not all(
        callable(getattr(run, m, None)) for m in ("log_params", "log_metric", "set_tags", "end")
    ):
        refuse("run", "a lineage run (lineage.start_run's value) or None", run)
    if experiment is not None and not (isinstance(experiment, str) and experiment):
        refuse("experiment", "a non-empty str or None", experiment)
    if trial is not None and not all(
        callable(getattr(trial, m, None)) for m in ("report", "should_prune")
    ):
        refuse("trial", "tuner.trial (with report and should_prune) or None", trial)
    if params is not None and not (
        isinstance(params, Mapping) and all(isinstance(k, str) for k in params)
    ):
        refuse("params", "a mapping of str names to values or None", params)
