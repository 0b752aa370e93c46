"""``weight_norm`` and ``weight_delta``, for the diagnosis checks that need them
(``weights_unchanged``: a learning rate of 0, a schedule that drops it to 0, an optimizer
built on the wrong parameters). Each framework hands over its trainable weights as host
arrays; the arithmetic is the same for all."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

__all__ = ["AUTO_WEIGHT_LIMIT", "WeightStats", "global_norm", "weight_stats_wanted"]

AUTO_WEIGHT_LIMIT = 50_000_000
"""Above this many trainable elements a recorder keeps no copy of the weights unless asked
(``weight_stats=True``)."""


def global_norm(arrays: Iterable[np.ndarray]) -> float:
    """The L2 norm of all the arrays' entries together, summed in float64.

    Args:
        arrays: the arrays, of any shapes; each is flattened.

    Returns:
        The norm (0.0 for no arrays).
    """
    total = 0.0
    for a in arrays:
        flat = a.ravel().astype(np.float64, copy=False)
        total += float(np.dot(flat, flat))
    return float(np.sqrt(total))


def weight_stats_wanted(setting: bool | None, trainable: int) -> bool:
    """Whether to measure the weights: always with True, never with False, and with None
    for models of up to `AUTO_WEIGHT_LIMIT` trainable elements (at least one).

    Args:
        setting: the ``weight_stats`` option: True: measure, False: do not, None: measure for
            models up to `AUTO_WEIGHT_LIMIT` trainable elements.
        trainable: the model's number of trainable elements.

    Returns:
        Whether to measure; never with no trainable elements.
    """
    if setting is None:
        return 0 < trainable <= AUTO_WEIGHT_LIMIT
    return setting and trainable > 0


class WeightStats:
    """The L2 norm of the trainable weights, and of their change since the previous
    `measure`. ``snapshot`` returns a float32 host copy of the weights, one array each;
    the last one is kept."""

    def __init__(self, snapshot: Callable[[], list[np.ndarray]]) -> None:
        self._snapshot = snapshot
        self._prev = snapshot()

    def reset(self) -> None:
        """Measure the next change from the weights as they are now (after a restore)."""
        self._prev = self._snapshot()

    def measure(self) -> dict[str, float]:
        now = self._snapshot()
        delta = global_norm(a - b for a, b in zip(now, self._prev, strict=True))
        self._prev = now
        return {"weight_norm": global_norm(now), "weight_delta": delta}
