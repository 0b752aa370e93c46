"""Read hyperparameters out of live MindSpore objects (optimizer, loss, network, context).

Everything here is read-only and tolerant: a third-party optimizer or loss that stores its
arguments under other names yields fewer fields, never an exception.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import mindspore as ms
import numpy as np
from mindspore import Parameter, Tensor, nn

# Constructor arguments that are not hyperparameters (or are recorded separately).
_SKIP_ARGS = {"self", "params", "parameters", "learning_rate", "network", "kwargs", "args"}
# Optimizer arguments that are implementation switches rather than hyperparameters.
_SWITCHES = {"use_locking", "use_lazy", "use_offload", "use_fused_opt", "maximize"}


def scalar(value: Any) -> Any:
    """A JSON/MLflow friendly scalar for ``value``, or None when it is not one."""
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, np.floating) and value.dtype.itemsize < 8:
        # float32 0.05 is 0.05000000074505806 as a double; keep the value the user typed.
        return scalar(float(str(value)))
    if isinstance(value, np.generic):
        return scalar(value.item())
    if isinstance(value, Tensor | Parameter):
        try:
            arr = value.asnumpy()
        except Exception:
            return None
        if arr.size == 1:
            return scalar(arr.reshape(-1)[0])
        return None
    if isinstance(value, tuple | list) and 0 < len(value) <= 8:
        items = [scalar(v) for v in value]
        if all(i is not None and not isinstance(i, list) for i in items):
            return list(items)
    return None


def constructor_args(obj: Any) -> dict[str, Any]:
    """Constructor arguments of a MindSpore object, read back from the instance.

    Optimizers decorated with ``opt_init_args_register`` keep them in ``init_args``; for
    everything else the ``__init__`` signature names the attributes to look for.
    """
    out: dict[str, Any] = {}
    registered = getattr(obj, "init_args", None)
    if isinstance(registered, dict):
        extra = registered.get("kwargs")
        items = list(registered.items()) + (list(extra.items()) if isinstance(extra, dict) else [])
        for name, value in items:
            if name in _SKIP_ARGS:
                continue
            if isinstance(value, nn.Cell):
                out[name] = type(value).__name__
            elif (v := scalar(value)) is not None or value is None:
                out[name] = v
        return out
    try:
        sig = inspect.signature(type(obj).__init__)
    except (TypeError, ValueError):
        return out
    for name, p in sig.parameters.items():
        if name in _SKIP_ARGS or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        for attr in (name, f"_{name}"):
            if attr in vars(obj) or hasattr(type(obj), attr):
                value = getattr(obj, attr, None)
                if isinstance(value, nn.Cell):
                    out[name] = type(value).__name__
                    break
                v = scalar(value)
                if v is not None:
                    out[name] = v
                    break
    return out


@dataclass
class LrInfo:
    """How an optimizer's learning rate is set.

    ``kind`` is ``constant``, ``list`` (dynamic lr given as a sequence, one value per step)
    or ``schedule`` (a ``LearningRateSchedule`` cell). ``groups`` holds one entry per
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


def learning_rates(optimizer: Any) -> list[LrInfo]:
    """One `LrInfo` per parameter group with its own lr (a single entry otherwise)."""
    lr = getattr(optimizer, "learning_rate", None)
    if getattr(optimizer, "is_group_lr", False) and isinstance(lr, Iterable):
        return [_lr_info(item) for item in lr]
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
    except Exception:
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
    if len(infos) == 1:
        for key, value in infos[0].describe().items():
            out[f"optimizer.{key}"] = value
    else:
        out["optimizer.lr_groups"] = len(infos)
        for i, info in enumerate(infos):
            for key, value in info.describe().items():
                out[f"optimizer.group{i}.{key}"] = value
    if getattr(optimizer, "is_group", False):
        wd = getattr(optimizer, "group_weight_decay", None) or []
        for i, value in enumerate(wd):
            out[f"optimizer.group{i}.weight_decay"] = (
                type(value).__name__ if isinstance(value, nn.Cell) else scalar(value)
            )
    return {k: v for k, v in out.items() if v is not None}


def cell_params(prefix: str, cell: Any) -> dict[str, Any]:
    """``<prefix>.name`` plus the cell's constructor arguments (e.g. loss ``reduction``)."""
    if cell is None:
        return {}
    out: dict[str, Any] = {f"{prefix}.name": type(cell).__name__}
    for key, value in constructor_args(cell).items():
        if value is not None:
            out[f"{prefix}.{key}"] = value
    return out


def _size(p: Any) -> int:
    return int(np.prod(p.shape)) if len(p.shape) else 1


@dataclass
class ParameterCounts:
    trainable: int
    frozen: int
    frozen_weights: list[dict[str, Any]]

    @property
    def total(self) -> int:
        return self.trainable + self.frozen


def parameter_counts(network: Any, optimizer: Any) -> ParameterCounts:
    """Split the network's weights into those the optimizer updates and the frozen rest.

    A weight is frozen when ``requires_grad`` is False or the optimizer was not given it
    (the classic silent bug: ``nn.Momentum(net.dense2.trainable_params(), ...)``).
    Non-persistent buffers are not weights and are not counted.
    """
    updated = {id(p) for p in getattr(optimizer, "parameters", ())} if optimizer else None
    trainable = frozen = 0
    weights: list[dict[str, Any]] = []
    for p in network.get_parameters():
        size = _size(p)
        if not p.requires_grad:
            reason = "requires_grad=False"
        elif updated is not None and id(p) not in updated:
            reason = "not given to the optimizer"
        else:
            trainable += size
            continue
        frozen += size
        weights.append({"name": p.name, "shape": list(p.shape), "size": size, "reason": reason})
    return ParameterCounts(trainable, frozen, weights)


def amp_level(*networks: Any) -> str:
    """The mixed-precision level applied to the (train) network, ``O0`` when none.

    ``auto_mixed_precision`` leaves ``_amp_level`` on the cell it converted; a plain
    ``to_float(float16)`` (what ``Model(amp_level="O2")`` does on some paths) only marks the
    cells, reported as ``fp16`` / ``bf16``.
    """
    marked = ""
    for net in networks:
        if net is None:
            continue
        for _, cell in [("", net), *net.cells_and_names()]:
            level = getattr(cell, "_amp_level", "")
            if level:
                return str(level)
            kind = str(getattr(cell, "mixed_precision_type", None) or "")
            if not marked and ("FP16" in kind or "BF16" in kind):
                marked = "bf16" if "BF16" in kind else "fp16"
    return marked or "O0"


def model_params(model: Any) -> dict[str, Any]:
    """What only the ``Model`` knows: amp and boost levels, metric names."""
    if model is None:
        return {}
    out: dict[str, Any] = {}
    level = getattr(model, "_amp_level", None)
    if isinstance(level, str) and level:
        out["amp_level"] = level
    boost = getattr(model, "_boost_level", None)
    if isinstance(boost, str) and boost:
        out["boost_level"] = boost
    kwargs = getattr(model, "_kwargs", None)
    if isinstance(kwargs, dict):
        for key in ("keep_batchnorm_fp32", "cast_model_type"):
            if key in kwargs and (v := scalar(kwargs[key]) or str(kwargs[key])) is not None:
                out[f"amp.{key}"] = v
    metrics = getattr(model, "_metric_fns", None)
    if isinstance(metrics, dict) and metrics:
        out["eval_metrics"] = ",".join(sorted(str(k) for k in metrics))
    return out


def context_params(
    device_number: int | None = None, parallel_mode: str | None = None
) -> dict[str, Any]:
    """Device, execution mode, parallel mode and seeds from MindSpore's global context."""
    from mindspore import context
    from mindspore import dataset as mds

    out: dict[str, Any] = {}
    for key, getter in (
        ("device.target", lambda: context.get_context("device_target")),
        ("device.id", lambda: context.get_context("device_id")),
        ("mode", lambda: "graph" if context.get_context("mode") == 0 else "pynative"),
        ("parallel_mode", lambda: context.get_auto_parallel_context("parallel_mode")),
        ("device.count", lambda: context.get_auto_parallel_context("device_num")),
        ("seed", ms.get_seed),
        ("dataset_seed", mds.config.get_seed),
    ):
        try:
            out[key] = scalar(getter())
        except Exception:
            continue
    if device_number is not None:
        out["device.count"] = int(device_number)
    if parallel_mode is not None:
        out["parallel_mode"] = str(parallel_mode)
    return {k: v for k, v in out.items() if v is not None}


def loss_scale_params(manager: Any) -> dict[str, Any]:
    """Model's loss-scale manager, or a ``mindspore.amp`` loss scaler of a functional loop."""
    if manager is None:
        return {}
    out: dict[str, Any] = {"loss_scale.manager": type(manager).__name__}
    getter = getattr(manager, "get_loss_scale", None)
    if callable(getter):
        out["loss_scale.init"] = scalar(getter())
    for attr in ("scale_value", "scale_factor", "scale_window", "drop_overflow_update"):
        if hasattr(manager, attr):
            key = "loss_scale.init" if attr == "scale_value" else f"loss_scale.{attr}"
            out[key] = scalar(getattr(manager, attr))
    return {k: v for k, v in out.items() if v is not None}


def loss_value(outputs: Any) -> float | None:
    """The scalar loss in a train step's outputs (a Tensor, or (loss, overflow, scale))."""
    if isinstance(outputs, tuple | list):
        if not outputs:
            return None
        outputs = outputs[0]
    if isinstance(outputs, Tensor):
        arr = outputs.asnumpy()
        return float(arr.mean()) if arr.size else None
    if isinstance(outputs, int | float | np.generic | np.ndarray):
        return float(np.mean(np.asarray(outputs, dtype=np.float64)))
    return None


def loss_scale_value(outputs: Any) -> float | None:
    """The current loss scale in a loss-scaled train step's (loss, overflow, scale)."""
    if isinstance(outputs, tuple | list) and len(outputs) == 3:
        v = scalar(outputs[2])
        return float(v) if isinstance(v, int | float) else None
    return None


def batch_rows(element: Any) -> int | None:
    """Rows in a batch from the first input's leading dimension (shape metadata only)."""
    if isinstance(element, tuple | list) and element:
        element = element[0]
    shape = getattr(element, "shape", None)
    if shape is not None and len(shape) > 0:
        return int(shape[0])
    return None
