"""``weight_norm`` and ``weight_delta`` of a PyTorch model (see `lineage.training.WeightStats`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from lineage.training import WeightStats, weight_stats_wanted


def _host_copy(weights: list[torch.nn.Parameter]) -> list[np.ndarray]:
    with torch.no_grad():
        return [p.detach().to("cpu", torch.float32, copy=True).numpy() for p in weights]


def weight_stats(model: Any, enabled: bool | None) -> WeightStats | None:
    """A `WeightStats` over ``model``'s trainable weights when `weight_stats_wanted` says so
    (it keeps one float32 copy of them on the CPU)."""
    if model is None or enabled is False:
        return None
    weights = [p for p in model.parameters() if p.requires_grad]
    if not weight_stats_wanted(enabled, sum(p.numel() for p in weights)):
        return None
    return WeightStats(lambda: _host_copy(weights))
