"""``weight_norm`` and ``weight_delta`` of a PyTorch model, for the diagnosis checks that
need them (``weights_unchanged``: a learning rate of 0, a schedule that drops it to 0, an
optimizer built on the wrong parameters)."""

from __future__ import annotations

from typing import Any

import torch

#: Above this many trainable elements the watcher does not keep a copy unless asked
#: (``weight_stats=True``): the same limit as the MindSpore recorder's.
AUTO_LIMIT = 50_000_000


class WeightStats:
    """The L2 norm of the trainable weights, and of their change since the previous call;
    keeps one float32 copy of the weights on the CPU."""

    def __init__(self, weights: list[torch.nn.Parameter]) -> None:
        self.weights = weights
        self._prev = self._snapshot()

    def _snapshot(self) -> list[torch.Tensor]:
        with torch.no_grad():
            return [p.detach().to("cpu", torch.float32, copy=True) for p in self.weights]

    def measure(self) -> dict[str, float]:
        now = self._snapshot()
        delta = sum(
            float((a - b).double().square().sum()) for a, b in zip(now, self._prev, strict=True)
        )
        norm = sum(float(a.double().square().sum()) for a in now)
        self._prev = now
        return {"weight_norm": norm**0.5, "weight_delta": delta**0.5}


def weight_stats(model: Any, enabled: bool | None) -> WeightStats | None:
    """A `WeightStats` over ``model``'s trainable weights: always with ``enabled=True``, for
    models up to `AUTO_LIMIT` elements with None, never with False (or none trainable)."""
    if model is None or enabled is False:
        return None
    weights = [p for p in model.parameters() if p.requires_grad]
    if not weights or (enabled is None and sum(p.numel() for p in weights) > AUTO_LIMIT):
        return None
    return WeightStats(weights)
