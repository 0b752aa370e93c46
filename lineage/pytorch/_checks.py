"""The checks `lineage.pytorch.watch` makes of its arguments before anything is recorded,
each refusal one `UsageError` naming the argument, the rule and the value."""

from __future__ import annotations

from typing import Any

import torch

from lineage._errors import UsageError
from lineage.training import check_params

__all__ = ["check_arguments", "unwrap"]


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


def check_arguments(
    model: Any,
    optimizer: Any,
    *,
    scheduler: Any,
    loader: Any,
    scaler: Any,
    params: Any,
) -> None:
    """Raise `UsageError` naming the first of the objects given to `lineage.pytorch.watch`
    that is not what it must be, before anything is recorded (the recording options are
    checked by `lineage.training.RecorderOptions`)."""

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
    check_params(params)
