"""What a PyTorch model, optimizer, scheduler and data loader say about themselves.

Every function returns flat ``{name: value}`` parameters for the lineage run; none of them
touches a tensor's data, so they are cheap at the start of a training.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import torch

_SCALARS = (bool, int, float, str)


def _scalar(value: Any) -> Any:
    if isinstance(value, _SCALARS) or value is None:
        return value
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.item()
    if isinstance(value, tuple | list) and all(isinstance(v, _SCALARS) for v in value):
        return list(value)
    return None


def optimizer_params(optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """``optimizer.name`` and every hyperparameter of ``optimizer.defaults`` (the constructor's
    arguments, defaults included) as ``optimizer.<key>``; a parameter group that differs from
    the defaults adds ``optimizer.group<i>.<key>``."""
    out: dict[str, Any] = {"optimizer.name": type(optimizer).__name__}
    defaults = dict(optimizer.defaults)
    for key, value in defaults.items():
        v = _scalar(value)
        if v is not None:
            out[f"optimizer.{key}"] = v
    out["optimizer.param_groups"] = len(optimizer.param_groups)
    for i, group in enumerate(optimizer.param_groups):
        for key, value in group.items():
            if key == "params" or key.startswith("initial_"):
                continue
            v = _scalar(value)
            if v is not None and (key not in defaults or _scalar(defaults[key]) != v):
                out[f"optimizer.group{i}.{key}"] = v
    return out


def scheduler_params(scheduler: Any) -> dict[str, Any]:
    """``scheduler.name`` and the scalar settings of its state (step size, gamma, T_max...)."""
    if scheduler is None:
        return {}
    out: dict[str, Any] = {"scheduler.name": type(scheduler).__name__}
    state = scheduler.state_dict() if hasattr(scheduler, "state_dict") else {}
    for key, value in state.items():
        if key.startswith("_") or key in {"last_epoch", "base_lrs", "verbose"}:
            continue
        v = _scalar(value)
        if v is not None:
            out[f"scheduler.{key}"] = v
    return out


def model_params(model: torch.nn.Module) -> tuple[dict[str, Any], list[str]]:
    """Model class, parameter counts, dtype and device; and the names of frozen weights."""
    trainable = frozen = 0
    frozen_names: list[str] = []
    dtypes: set[str] = set()
    devices: set[str] = set()
    for name, p in model.named_parameters():
        n = p.numel()
        if p.requires_grad:
            trainable += n
        else:
            frozen += n
            frozen_names.append(name)
        dtypes.add(str(p.dtype).removeprefix("torch."))
        devices.add(str(p.device))
    out: dict[str, Any] = {
        "network.name": type(model).__name__,
        "network.module": type(model).__module__,
        "trainable_params": trainable,
        "frozen_params": frozen,
        "total_params": trainable + frozen,
        "precision": ",".join(sorted(dtypes)) or None,
        "device.type": ",".join(sorted({d.split(":")[0] for d in devices})) or None,
        "device.count": len(devices) or None,
    }
    return out, frozen_names


def output_size(model: torch.nn.Module) -> int | None:
    """The number of classes a classifier predicts: ``config.num_labels`` (Hugging Face), else
    the ``out_features`` of the model's last linear layer; None when neither is found."""
    config = getattr(model, "config", None)
    labels = getattr(config, "num_labels", None)
    if isinstance(labels, int) and labels > 0:
        return labels
    last = None
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            last = module
    return int(last.out_features) if last is not None else None


def scaler_params(scaler: Any) -> dict[str, Any]:
    """Mixed precision through ``torch.amp.GradScaler``: enabled and its scale settings."""
    if scaler is None:
        return {"amp": False}
    out: dict[str, Any] = {"amp": bool(scaler.is_enabled())}
    for key in ("init_scale", "growth_factor", "backoff_factor", "growth_interval"):
        value = getattr(scaler, f"_{key}", None)
        if isinstance(value, int | float):
            out[f"loss_scale.{key}"] = value
    return out


def loader_params(loader: Any, role: str = "train") -> dict[str, Any]:
    """Batch size, sampler, workers and dataset size of a ``DataLoader``."""
    dataset = getattr(loader, "dataset", None)
    out: dict[str, Any] = {
        # accelerate's loaders batch through their batch sampler and leave batch_size unset.
        "batch_size": getattr(loader, "batch_size", None)
        or getattr(getattr(loader, "batch_sampler", None), "batch_size", None),
        f"data.{role}.sampler": type(getattr(loader, "sampler", None)).__name__,
        f"data.{role}.shuffle": type(getattr(loader, "sampler", None)).__name__ == "RandomSampler",
        f"data.{role}.num_workers": getattr(loader, "num_workers", None),
        f"data.{role}.drop_last": getattr(loader, "drop_last", None),
        f"data.{role}.pin_memory": getattr(loader, "pin_memory", None),
        f"data.{role}.dataset": type(dataset).__name__ if dataset is not None else None,
    }
    try:
        out[f"{role}_size"] = len(dataset)  # type: ignore[arg-type]
        out["steps_per_epoch"] = len(loader)
    except TypeError:
        pass  # an iterable-style dataset has no length
    return out


def pipeline(dataset: Any) -> list[dict[str, Any]]:
    """The dataset chain as steps, source first: each wrapper (``Subset``, ``ConcatDataset``),
    the dataset class with its root or file, then each transform (a torchvision ``Compose`` is
    unrolled) with its public scalar attributes."""
    chain: list[Any] = []
    node, seen = dataset, 0
    while node is not None and seen < 8:
        chain.append(node)
        node = getattr(node, "dataset", None)
        seen += 1
    steps: list[dict[str, Any]] = []
    for ds in reversed(chain):
        step: dict[str, Any] = {"op": type(ds).__name__, "module": type(ds).__module__}
        for attr in ("root", "path", "file", "split", "train"):
            value = getattr(ds, attr, None)
            if isinstance(value, (*_SCALARS, os.PathLike)):
                step[attr] = str(value)
        if isinstance(ds, torch.utils.data.TensorDataset):
            step["tensors"] = [list(t.shape) for t in ds.tensors]
        steps.append(step)
        for name in ("transform", "transforms", "target_transform"):
            steps.extend(_transforms(getattr(ds, name, None), name))
    return steps


def _transforms(transform: Any, role: str) -> list[dict[str, Any]]:
    if transform is None or isinstance(transform, str | list | tuple | Mapping):
        return []
    inner = getattr(transform, "transforms", None)
    if isinstance(inner, list | tuple):
        return [s for t in inner for s in _transforms(t, role)]
    step: dict[str, Any] = {"op": getattr(transform, "__name__", type(transform).__name__)}
    if role != "transform":
        step["applies_to"] = role
    for key, value in vars(transform).items() if hasattr(transform, "__dict__") else ():
        v = _scalar(value)
        if not key.startswith("_") and v is not None:
            step[key] = v
    return [step]


def rank() -> int | None:
    """This process's rank under torch.distributed or ``torchrun`` (None when not distributed)."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return int(dist.get_rank())
    value = os.environ.get("RANK")
    return int(value) if value and value.isdigit() else None
