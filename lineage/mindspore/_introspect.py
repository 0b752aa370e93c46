"""Read training facts out of live MindSpore objects: weights, precision, context, outputs.

Everything here is read-only and tolerant: what cannot be read is left out, never raised.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mindspore as ms
import numpy as np
from mindspore import Tensor

from lineage.mindspore._lr import (
    LrEvaluator,
    LrInfo,
    global_step,
    learning_rates,
    optimizer_params,
)
from lineage.mindspore._values import constructor_args, scalar

__all__ = [
    "LrEvaluator",
    "LrInfo",
    "ParameterCounts",
    "amp_level",
    "batch_rows",
    "cell_params",
    "constructor_args",
    "context_params",
    "global_step",
    "learning_rates",
    "loss_scale_params",
    "loss_scale_value",
    "loss_value",
    "model_params",
    "optimizer_params",
    "parameter_counts",
    "rank",
    "scalar",
]


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
        except Exception:  # a setting this MindSpore lacks is not recorded
            continue
    if device_number is not None:
        out["device.count"] = int(device_number)
    if parallel_mode is not None:
        out["parallel_mode"] = str(parallel_mode)
    return {k: v for k, v in out.items() if v is not None}


def rank() -> int | None:
    """This process's rank in a distributed job: MindSpore's own in a parallel mode, else the
    one its launcher (msrun, torchrun, mpirun) set in the environment; None for a single
    process. The launcher's counts too: a script run by ``msrun`` that never calls
    ``mindspore.communication.init`` is still one of several processes."""
    from mindspore import context

    from lineage._identity import launcher_rank

    try:
        if context.get_auto_parallel_context("parallel_mode") != "stand_alone":
            from mindspore.communication import get_rank

            return int(get_rank())
    except Exception:  # communication not initialised
        pass
    return launcher_rank()


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
