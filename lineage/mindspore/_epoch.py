"""What one epoch of training measures: its time, its throughput, its mean loss; and the
tensors it reads on the host (gradients, a copy of the weights)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["EpochMeter", "host_arrays", "host_copy"]


def host_arrays(tensors: Any) -> list[np.ndarray]:
    """A tensor or a list of them as numpy arrays on the host."""
    items = tensors if isinstance(tensors, list | tuple) else [tensors]
    return [t.asnumpy() if hasattr(t, "asnumpy") else np.asarray(t) for t in items]


def host_copy(weights: list[Any]) -> list[np.ndarray]:
    """A float32 host copy of each weight."""
    return [np.array(p.asnumpy(), dtype=np.float32, copy=True) for p in weights]


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
