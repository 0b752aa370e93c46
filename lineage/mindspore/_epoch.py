"""What one epoch of training measures: its time, its throughput, its mean loss, and how
far the weights moved."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["EpochMeter", "WeightStats", "global_norm", "host_arrays"]


def host_arrays(tensors: Any) -> list[np.ndarray]:
    """A tensor or a list of them as numpy arrays on the host."""
    items = tensors if isinstance(tensors, list | tuple) else [tensors]
    return [t.asnumpy() if hasattr(t, "asnumpy") else np.asarray(t) for t in items]


def global_norm(arrays: list[np.ndarray]) -> float:
    """The L2 norm of all the arrays' entries together, summed in float64."""
    total = 0.0
    for a in arrays:
        flat = a.ravel().astype(np.float64, copy=False)
        total += float(np.dot(flat, flat))
    return float(np.sqrt(total))


class WeightStats:
    """``weight_norm`` and ``weight_delta`` (the L2 norm of the trainable weights, and of
    their change since the previous call); keeps one float32 host copy of the weights."""

    def __init__(self, weights: list[Any]) -> None:
        self.weights = weights
        self._prev = self._snapshot()

    def _snapshot(self) -> list[np.ndarray]:
        return [np.array(p.asnumpy(), dtype=np.float32, copy=True) for p in self.weights]

    def measure(self) -> dict[str, float]:
        now = self._snapshot()
        delta = global_norm([a - b for a, b in zip(now, self._prev, strict=True)])
        self._prev = now
        return {"weight_norm": global_norm(now), "weight_delta": delta}


class EpochMeter:
    """The clock and counters of the epoch in progress: steps, samples, logged losses."""

    def __init__(self, now: float) -> None:
        self.reset(now)

    def reset(self, now: float) -> None:
        self.start = now
        self.last_step_end = now
        self.rows = 0
        self.rows_known = True
        self.steps = 0
        self._loss_sum = 0.0
        self._loss_n = 0

    def pause(self, seconds: float) -> None:
        """Leave ``seconds`` of recording work out of the epoch's training time."""
        self.start += seconds

    def step(self, now: float, steps: int, rows: int | None) -> None:
        """``steps`` steps ended at ``now``, over ``rows`` samples (``None``: unknown)."""
        self.steps += steps
        self.last_step_end = now
        if rows is None:
            self.rows_known = False
        else:
            self.rows += rows

    def loss(self, value: float) -> None:
        self._loss_sum += value
        self._loss_n += 1

    def summary(self, now: float) -> dict[str, float]:
        """``epoch_time``, ``train_time`` (to the last step's end), ``throughput`` in samples
        per second (``steps_per_second`` when a batch's size was unknown) and ``train_loss``
        (the mean of the losses logged)."""
        train_time = max(self.last_step_end - self.start, 1e-9)
        values = {"epoch_time": now - self.start, "train_time": train_time}
        if self.steps and self.rows_known and self.rows:
            values["throughput"] = self.rows / train_time
        elif self.steps:
            values["steps_per_second"] = self.steps / train_time
        if self._loss_n:
            values["train_loss"] = self._loss_sum / self._loss_n
        return values
