"""Turn live MindSpore objects into plain values: scalars and constructor arguments.

Read-only and tolerant: a third-party class that stores its arguments under other names
yields fewer fields, never an exception.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import numpy as np
from mindspore import Parameter, Tensor, nn

# Constructor arguments that are not hyperparameters (or are recorded separately).
_SKIP_ARGS = {"self", "params", "parameters", "learning_rate", "network", "kwargs", "args"}


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
        except Exception:  # not readable on the host: not recorded
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
