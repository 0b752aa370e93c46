"""An optimizer's hyperparameters and learning rate: a value, a list per step, a schedule."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn

from lineage.mindspore._values import constructor_args, scalar

# Optimizer arguments that are implementation switches rather than hyperparameters.
_SWITCHES = {"use_locking", "use_lazy", "use_offload", "use_fused_opt", "maximize"}


@dataclass
class LrInfo:
    """How an optimizer's learning rate is set.

    ``kind`` is ``constant``, ``list`` (dynamic lr given as a sequence, one value per step)
    or ``schedule`` (a ``LearningRateSchedule`` cell). `learning_rates` returns one per
    parameter group when the groups have their own learning rates.
    """

    kind: str
    value: float | None = None
    values: list[float] | None = None
    schedule: Any = None
    schedule_args: dict[str, Any] = field(default_factory=dict)

    @property
    def dynamic(self) -> bool:
        return self.kind != "constant"

    def describe(self) -> dict[str, Any]:
        if self.kind == "constant":
            return {"lr": self.value}
        if self.kind == "list":
            vals = self.values or []
            return {
                "lr": vals[0] if vals else None,
                "lr_schedule": "list",
                "lr_schedule.length": len(vals),
                "lr_schedule.min": min(vals) if vals else None,
                "lr_schedule.max": max(vals) if vals else None,
                "lr_schedule.last": vals[-1] if vals else None,
            }
        out: dict[str, Any] = {"lr_schedule": type(self.schedule).__name__}
        for key, value in self.schedule_args.items():
            out[f"lr_schedule.{key}"] = value
        return out


def _lr_info(lr: Any) -> LrInfo:
    # Inner wrappers of nn.Optimizer: _IteratorLearningRate (a list), _ConvertToCell (constant).
    name = type(lr).__name__
    if name == "_ConvertToCell":
        return LrInfo("constant", value=scalar(lr.learning_rate))
    if name == "_IteratorLearningRate":
        values = [float(str(v)) for v in lr.learning_rate.asnumpy().reshape(-1)]
        return LrInfo("list", values=values)
    if isinstance(lr, nn.Cell):
        return LrInfo("schedule", schedule=lr, schedule_args=constructor_args(lr))
    value = scalar(lr)
    return LrInfo("constant", value=float(value) if isinstance(value, int | float) else None)


def _groups(optimizer: Any) -> list[tuple[int, int]]:
    """(first parameter index, parameter count) of each parameter group.

    MindSpore keeps a grouped optimizer's lr and weight decay per parameter; consecutive
    parameters with the same settings are one group (the user's groups, in order).
    """
    lr = getattr(optimizer, "learning_rate", None)
    per_param_lr = (
        [_lr_info(item).describe() for item in lr]
        if getattr(optimizer, "is_group_lr", False) and isinstance(lr, Iterable)
        else None
    )
    wd = list(getattr(optimizer, "group_weight_decay", None) or [])
    n = len(per_param_lr) if per_param_lr is not None else len(wd)
    if not getattr(optimizer, "is_group", False) or n == 0:
        return [(0, max(n, 1))]

    def key(i: int) -> tuple[Any, ...]:
        lr_key = per_param_lr[i] if per_param_lr is not None else None
        wd_val = wd[i] if i < len(wd) else None
        wd_key = type(wd_val).__name__ if isinstance(wd_val, nn.Cell) else scalar(wd_val)
        return (repr(lr_key), repr(wd_key))

    groups: list[tuple[int, int]] = []
    for i in range(n):
        if groups and key(i) == key(groups[-1][0]):
            groups[-1] = (groups[-1][0], groups[-1][1] + 1)
        else:
            groups.append((i, 1))
    return groups


def learning_rates(optimizer: Any) -> list[LrInfo]:
    """One `LrInfo` per parameter group with its own lr (a single entry otherwise)."""
    lr = getattr(optimizer, "learning_rate", None)
    if getattr(optimizer, "is_group_lr", False) and isinstance(lr, Iterable):
        per_param = list(lr)
        return [_lr_info(per_param[first]) for first, _ in _groups(optimizer)]
    return [_lr_info(lr)]


class LrEvaluator:
    """The learning rate an optimizer used at a given (0-based) step.

    Schedules are evaluated through ``mindspore.jit`` so the same code works in graph and
    PyNative mode; the first call compiles (~0.1-0.5 s), later ones take well under 1 ms.
    """

    def __init__(self, infos: list[LrInfo]) -> None:
        self.infos = infos
        self._compiled: dict[int, Callable[[Any], Any]] = {}
        self.failed: str | None = None

    @property
    def dynamic(self) -> bool:
        return any(i.dynamic for i in self.infos)

    def at(self, step: int) -> list[float | None]:
        return [self._value(i, info, step) for i, info in enumerate(self.infos)]

    def _value(self, index: int, info: LrInfo, step: int) -> float | None:
        if info.kind == "constant":
            return info.value
        if info.kind == "list":
            vals = info.values or []
            return vals[min(max(step, 0), len(vals) - 1)] if vals else None
        if self.failed is not None:
            return None
        try:
            fn = self._compiled.get(index)
            if fn is None:
                fn = ms.jit(info.schedule.construct)
                self._compiled[index] = fn
            out = fn(Tensor(np.array([max(step, 0)], dtype=np.int32)))
            return float(out.asnumpy().reshape(-1)[0])
        except Exception as exc:  # a schedule we cannot evaluate outside the graph
            self.failed = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            return None


def global_step(optimizer: Any) -> int | None:
    """The optimizer's own step counter (number of updates applied), if it has one."""
    gs = getattr(optimizer, "global_step", None)
    if gs is None:
        return None
    try:
        return int(gs.asnumpy().reshape(-1)[0])
    except Exception:  # no readable counter: the caller counts steps
        return None


def optimizer_params(optimizer: Any) -> dict[str, Any]:
    """``optimizer.*`` fields: class, every constructor hyperparameter, lr or lr schedule."""
    out: dict[str, Any] = {"optimizer.name": type(optimizer).__name__}
    args = constructor_args(optimizer)
    for key, value in args.items():
        if key in _SWITCHES:
            continue
        out[f"optimizer.{key}"] = value
    if "loss_scale" not in args and hasattr(optimizer, "loss_scale"):
        out["optimizer.loss_scale"] = scalar(optimizer.loss_scale)
    infos = learning_rates(optimizer)
    initial = getattr(optimizer, "init_learning_rate", None)
    if len(infos) == 1 and infos[0].kind == "constant" and isinstance(initial, int | float):
        infos[0].value = float(initial)  # as given, not read back from a float32 Parameter
    groups = _groups(optimizer) if getattr(optimizer, "is_group", False) else []
    if len(groups) > 1:
        out["optimizer.groups"] = len(groups)
        wd = list(getattr(optimizer, "group_weight_decay", None) or [])
        for g, (first, count) in enumerate(groups):
            out[f"optimizer.group{g}.params"] = count
            if len(infos) == len(groups):
                for key, value in infos[g].describe().items():
                    out[f"optimizer.group{g}.{key}"] = value
            if first < len(wd):
                value = wd[first]
                out[f"optimizer.group{g}.weight_decay"] = (
                    type(value).__name__ if isinstance(value, nn.Cell) else scalar(value)
                )
    if len(infos) == 1:
        for key, value in infos[0].describe().items():
            out[f"optimizer.{key}"] = value
    return {k: v for k, v in out.items() if v is not None}
